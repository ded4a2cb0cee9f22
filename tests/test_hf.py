"""scripts/hf.py, the Hugging Face loader and saver, against models `transformers` saved (tests/data/hf).

gpt.GPT built from each fixture folder gives transformers' logits; every bad input stops with one line naming the
file and the tensor or field, and leaves the folder as it was; save and load are exact inverses. In one process on
the CPU, with no msrun and no torch: tests/data/hf/make_reference.py made the fixtures once.
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.scripts import import_cells, notebook_scripts

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "hf"
HF_SOURCE = ROOT / "notebooks" / "16_your_model.ipynb"   # its %%writefile cells write scripts/hf.py
NAMES = ("llama_gqa", "qwen2_tied", "mistral_bf16", "llama3_scaled", "qwen3_tied", "qwen3_moe", "mixtral_moe")
MOE = ("qwen3_moe", "mixtral_moe")   # mixtures of experts: their loss.json holds transformers' loss and aux_loss
TOLERANCE = 1e-5   # of the largest |logit|: float32, summed in another order than torch's


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """(hf, gpt, moe): hf.py from its cells, gpt.py from notebook 11 and moe.py from notebook 13 (gpt.py's experts),
    imported from a folder of their own."""
    folder = tmp_path_factory.mktemp("scripts")
    saved = {name: sys.modules.get(name) for name in ("hf", "gpt", "moe")}
    yield (import_cells(folder / "hf.py", notebook_scripts(HF_SOURCE)["scripts/hf.py"]),
           import_cells(folder / "gpt.py", notebook_scripts("11_gpt_tensor_parallel.ipynb")["scripts/gpt.py"]),
           import_cells(folder / "moe.py", notebook_scripts("13_mixture_of_experts.ipynb")["scripts/moe.py"]))
    for name, module in saved.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


@pytest.fixture(scope="module")
def hf(modules):
    return modules[0]


def logits(gpt, cfg, weights, ids):
    import mindspore as ms
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    return gpt.GPT(cfg, weights)(ms.Tensor(ids, ms.int32)).asnumpy()


def hashes(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).iterdir())}


@pytest.mark.parametrize("name", NAMES)
def test_logits_equal_transformers(modules, name):
    hf, gpt, _ = modules
    cfg, weights = hf.load(FIXTURES / name)
    reference = np.load(FIXTURES / name / "logits.npy")
    mine = logits(gpt, cfg, weights, np.load(FIXTURES / name / "ids.npy"))
    gap = float(np.abs(mine - reference).max())
    scale = float(np.abs(reference).max())
    print(f"{name}: largest gap {gap:.2e}, largest logit {scale:.3f}, relative {gap / scale:.1e} "
          f"(tolerance {TOLERANCE:.0e})")
    assert mine.shape == reference.shape and gap <= TOLERANCE * scale


def test_what_each_fixture_exercises(hf, modules):
    gpt = modules[1]
    qwen3, weights = hf.load(FIXTURES / "qwen3_tied")
    assert qwen3["qk_norm"] and not qwen3["qkv_bias"] and qwen3["tie_embeddings"] and qwen3["head_dim"] == 32
    assert weights["layers.1.attn.q_norm.weight"].shape == (32,) and not qwen3.get("experts")
    sparse, weights = hf.load(FIXTURES / "qwen3_moe")   # transformers 5 wrote num_local_experts for num_experts
    assert "num_local_experts" in sparse["hf_config"] and "num_experts" not in sparse["hf_config"]
    assert (sparse["experts"], sparse["top_k"], sparse["expert_ffn"], sparse["moe_layers"]) == (8, 2, 32, [0, 2])
    assert sparse["norm_topk"] and sparse["qk_norm"] and sparse["aux_loss_coef"] == 0.01
    assert weights["layers.1.mlp.w1.weight"].shape == (128, 64) and "layers.1.moe.w1" not in weights   # mlp_only
    assert weights["layers.2.moe.w2"].shape == (8, 64, 32) and "layers.2.mlp.w1.weight" not in weights
    mixtral, weights = hf.load(FIXTURES / "mixtral_moe")
    assert (mixtral["experts"], mixtral["top_k"], mixtral["moe_layers"], mixtral["norm_topk"]) == (4, 2, [0, 1], True)
    assert mixtral["expert_ffn"] == 128 and not mixtral.get("qk_norm") and mixtral["rope_theta"] == 1e6
    # tensor parallelism splits each stacked expert's width, (E, width, dim) and (E, dim, width), as the MLP's;
    # the router stays whole on every rank (notebook 17 section 5)
    assert [gpt.split_axis(f"layers.0.moe.{k}") for k in ("w1", "w3", "w2", "router.weight")] == [1, 1, 2, None]
    assert gpt.is_expert("layers.0.moe.w1") and gpt.is_expert("adam.m.layers.0.moe.w2")
    assert not gpt.is_expert("layers.0.moe.router.weight") and not gpt.is_expert("layers.0.mlp.w1.weight")
    llama, _ = hf.load(FIXTURES / "llama_gqa")
    assert (llama["heads"], llama["kv_heads"], llama["rope_theta"]) == (4, 2, 5e5)
    assert (FIXTURES / "llama_gqa" / "model.safetensors.index.json").exists()   # the sharded path
    qwen, weights = hf.load(FIXTURES / "qwen2_tied")
    assert qwen["qkv_bias"] and qwen["tie_embeddings"] and "output.weight" not in weights
    assert "layers.0.attn.wk.bias" in weights and qwen["vocab"] == 300
    mistral, _ = hf.load(FIXTURES / "mistral_bf16")
    assert mistral["head_dim"] == 32 != mistral["dim"] // mistral["heads"]
    header = (FIXTURES / "mistral_bf16" / "model.safetensors").read_bytes()
    assert b'"BF16"' in header[:4096] and b'"F32"' not in header[:4096]   # the bfloat16 path
    # tensor parallelism splits a bias as its weight (rows), and the tied output is the vocab-split embedding
    assert gpt.split_axis("layers.0.attn.wq.bias") == gpt.split_axis("layers.0.attn.wq.weight") == 0
    assert gpt.split_axis("embed") == gpt.split_axis("output.weight") == 0


def _ce(logits, ids):
    """transformers' causal-LM loss: the mean cross-entropy of each position's logits for the next id."""
    x, t = logits[:, :-1].reshape(-1, logits.shape[-1]).astype(np.float64), ids[:, 1:].reshape(-1)
    top = x.max(1)
    return float(np.mean(np.log(np.exp(x - top[:, None]).sum(1)) + top - x[np.arange(t.size), t]))


@pytest.mark.parametrize("name", MOE)
def test_moe_loss_equals_transformers(modules, name):
    """The load-balancing loss transformers adds (output_router_logits, router_aux_loss_coef), from the model's MoE
    layers after a forward pass, and the training loss with it; negative controls: without norm_topk, and without
    the layers taken together (the sum of one loss a layer), the logits or the aux loss move out of tolerance."""
    hf, gpt, moe = modules
    cfg, weights = hf.load(FIXTURES / name)
    ids, reference = np.load(FIXTURES / name / "ids.npy"), json.loads((FIXTURES / name / "loss.json").read_text())
    import mindspore as ms
    logits(gpt, cfg, weights, ids)   # PyNative on the CPU, as the other tests
    model = gpt.GPT(cfg, weights)
    mine = model(ms.Tensor(ids, ms.int32)).asnumpy()   # the MoE layers keep this pass's routing
    layers = [layer.moe for layer in model.layers if layer.moe is not None]
    aux = float(moe.load_balancing_loss(layers).asnumpy())
    loss = _ce(mine, ids) + cfg["aux_loss_coef"] * aux
    print(f"{name}: aux {aux:.7f} (transformers {reference['aux_loss']:.7f}), loss {loss:.7f} "
          f"(transformers {reference['loss']:.7f})")
    assert abs(aux - reference["aux_loss"]) <= 1e-5 * reference["aux_loss"]
    assert abs(loss - reference["loss"]) <= 1e-5 * reference["loss"]
    per_layer = sum(float(moe.load_balancing_loss([one]).asnumpy()) for one in layers)
    assert abs(per_layer - reference["aux_loss"]) > 100 * 1e-5 * reference["aux_loss"]
    if name == "qwen3_moe":   # norm_topk_prob true: the raw top-2 probabilities give other logits
        raw = logits(gpt, {**cfg, "norm_topk": False}, weights, ids)
        assert np.abs(raw - np.load(FIXTURES / name / "logits.npy")).max() > 100 * TOLERANCE * np.abs(raw).max()


def test_qk_norm_matters(modules):
    """Qwen3's q/k norm (its weights about 1 +- 0.1): without it, the logits move far out of tolerance."""
    hf, gpt, _ = modules
    cfg, weights = hf.load(FIXTURES / "qwen3_tied")
    plain = {k: v for k, v in weights.items() if "_norm" not in k or "attn_norm" in k or "mlp_norm" in k}
    reference = np.load(FIXTURES / "qwen3_tied" / "logits.npy")
    ids = np.load(FIXTURES / "qwen3_tied" / "ids.npy")
    gap = np.abs(logits(gpt, {**cfg, "qk_norm": False}, plain, ids) - reference)
    assert gap.max() > 100 * TOLERANCE * np.abs(reference).max()


def test_llama3_rope_scaling(hf, modules):
    """Llama 3's scaled frequencies (rope_type llama3, as Llama-3.2-1B): transformers' logits with them, not without."""
    gpt = modules[1]
    cfg, weights = hf.load(FIXTURES / "llama3_scaled")
    plain = 1.0 / cfg["rope_theta"] ** (np.arange(0, cfg["head_dim"], 2) / cfg["head_dim"])
    scaled = np.array(cfg["rope_inv_freq"])
    # wavelength 6.28 lies between 16 / 4 and 16 / 1: interpolated with smooth = (16 / 6.28 - 1) / 3 = 0.515,
    # (1 - 0.515) / 8 + 0.515 = 0.576; 167 and more lie above 16: divided by 8
    assert np.isclose(scaled[0], plain[0] * 0.57606, rtol=1e-4) and np.allclose(scaled[1:], plain[1:] / 8)
    ids, reference = np.load(FIXTURES / "llama3_scaled" / "ids.npy"), np.load(FIXTURES / "llama3_scaled" / "logits.npy")
    scale = float(np.abs(reference).max())
    assert float(np.abs(logits(gpt, cfg, weights, ids) - reference).max()) <= TOLERANCE * scale
    unscaled = {k: v for k, v in cfg.items() if k != "rope_inv_freq"}   # the test fails without the scaling
    assert float(np.abs(logits(gpt, unscaled, weights, ids) - reference).max()) > 100 * TOLERANCE * scale
    json.dumps(cfg)   # cfg stays JSON: train_hf.py reads it from a file
    top = {k: v for k, v in cfg["hf_config"].items() if k != "rope_parameters"}   # Llama-3.2-1B's published form
    old = hf.gpt_config({**top, "rope_theta": 5e5, "rope_scaling": cfg["hf_config"]["rope_parameters"]})
    assert old["rope_inv_freq"] == cfg["rope_inv_freq"]


def _copy(tmp_path, name):
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _edit_json(filename, change):   # a JSON file of the folder rewritten
    def make(tmp_path, name):
        folder = _copy(tmp_path, name)
        path = folder / filename
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
        return folder
    return make


def _edit_config(change):
    return _edit_json("config.json", change)


def _edit_weights(change):
    def make(tmp_path, name, hf):
        folder = _copy(tmp_path, name)
        path = folder / "model.safetensors"
        hf.write_safetensors(path, change(hf.read_safetensors(path)))
        return folder
    return make


def _truncated(tmp_path, name):
    folder = _copy(tmp_path, name)
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-1000])
    return folder


def _no_shard(tmp_path, name):
    folder = _copy(tmp_path, name)
    (folder / "model-00003-of-00005.safetensors").unlink()
    return folder


def _no_config(tmp_path, name):
    folder = _copy(tmp_path, name)
    (folder / "config.json").unlink()
    return folder


def _edit_header(change):   # one header entry rewritten, the bytes left as they are
    def make(tmp_path, name):
        folder = _copy(tmp_path, name)
        path = folder / "model.safetensors"
        raw = path.read_bytes()
        length = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + length])
        header["model.norm.weight"] = change(header["model.norm.weight"])
        new = json.dumps(header, separators=(",", ":")).encode()
        path.write_bytes(len(new).to_bytes(8, "little") + new + raw[8 + length:])
        return folder
    return make


def _nan(tensors):
    tensors["model.norm.weight"] = tensors["model.norm.weight"].copy()
    tensors["model.norm.weight"][3] = np.nan
    return tensors


def _edit_index(change):
    return _edit_json("model.safetensors.index.json", change)


O_BIAS = "model.layers.0.self_attn.o_proj.bias"
EXPERT = "model.layers.1.block_sparse_moe.experts.3.w2.weight"
# (fixture, how to damage it, words the one-line error must hold)
BAD = {
    "no config.json": ("qwen2_tied", _no_config, ["no config.json"]),
    "model_type": ("qwen2_tied", _edit_config(lambda c: {**c, "model_type": "gemma"}),
                   ["config.json", "model_type", "gemma"]),
    "rope scaling": ("llama_gqa", _edit_config(lambda c: {**c, "rope_parameters": {
        "rope_type": "yarn", "rope_theta": 5e5, "factor": 8.0}}), ["config.json", "rope_parameters", "yarn"]),
    "llama3 without its factors": ("llama_gqa", _edit_config(lambda c: {**c, "rope_parameters": {
        "rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}}),
        ["config.json", "rope_parameters", "low_freq_factor", "missing"]),
    "old rope_scaling": ("llama_gqa", _edit_config(lambda c: {**c, "rope_scaling": {"type": "linear", "factor": 2}}),
                         ["config.json", "rope_scaling", "linear"]),
    "sliding window": ("mistral_bf16", _edit_config(lambda c: {**c, "sliding_window": 16}),
                       ["config.json", "sliding_window", "16"]),
    "qwen2 sliding window": ("qwen2_tied", _edit_config(lambda c: {
        **c, "use_sliding_window": True, "sliding_window": 8, "layer_types": ["sliding_attention"] * 2}),
        ["config.json", "sliding_window"]),
    "qwen2 sliding layers without use_sliding_window": ("qwen2_tied", _edit_config(lambda c: {
        **c, "use_sliding_window": False, "sliding_window": 8, "layer_types": ["sliding_attention"] * 2}),
        ["config.json", "layer_types", "use_sliding_window"]),
    "attention bias": ("llama_gqa", _edit_config(lambda c: {**c, "attention_bias": True}), ["attention_bias"]),
    "activation": ("llama_gqa", _edit_config(lambda c: {**c, "hidden_act": "gelu"}), ["hidden_act", "gelu"]),
    "missing field": ("llama_gqa", _edit_config(lambda c: {k: v for k, v in c.items() if k != "hidden_size"}),
                      ["config.json", "hidden_size"]),
    "missing shard": ("llama_gqa", _no_shard, ["model.safetensors.index.json", "model-00003-of-00005.safetensors"]),
    "damaged index": ("llama_gqa", lambda tmp, name: (lambda f: (f / "model.safetensors.index.json").write_text(
        "{}") and f)(_copy(tmp, name)), ["model.safetensors.index.json", "weight_map"]),
    "missing tensor": ("qwen2_tied", _edit_weights(lambda t: {k: v for k, v in t.items() if k != "model.norm.weight"}),
                       ["model.safetensors", "model.norm.weight", "missing"]),
    "extra tensor": ("qwen2_tied", _edit_weights(lambda t: {**t, O_BIAS: np.zeros(64, np.float32)}),
                     ["model.safetensors", O_BIAS]),
    "shape": ("qwen2_tied", _edit_config(lambda c: {**c, "intermediate_size": 96}),
              ["model.safetensors", "model.layers.0.mlp.gate_proj.weight", "(128, 64)", "(96, 64)"]),
    "dtype": ("qwen2_tied", _edit_header(lambda entry: {**entry, "dtype": "I32"}),
              ["model.safetensors", "model.norm.weight", "I32"]),
    "truncated": ("qwen2_tied", _truncated, ["model.safetensors", "truncated"]),
    "config a list": ("qwen2_tied", _edit_config(lambda c: [c]), ["config.json", "list", "not an object"]),
    "no heads": ("llama_gqa", _edit_config(lambda c: {**c, "num_attention_heads": 0}),
                 ["config.json", "num_attention_heads", "0"]),
    "layers true": ("llama_gqa", _edit_config(lambda c: {**c, "num_hidden_layers": True}),
                    ["config.json", "num_hidden_layers", "True"]),
    "kv heads not dividing": ("llama_gqa", _edit_config(lambda c: {**c, "num_key_value_heads": 3}),
                              ["config.json", "num_key_value_heads", "3"]),
    "eps a string": ("llama_gqa", _edit_config(lambda c: {**c, "rms_norm_eps": "1e-5"}), ["rms_norm_eps", "1e-5"]),
    "rope_scaling a list": ("llama_gqa", _edit_config(lambda c: {**c, "rope_scaling": [1]}), ["rope_scaling", "[1]"]),
    "partial rotary": ("llama_gqa", _edit_config(lambda c: {**c, "partial_rotary_factor": 0.5}),
                       ["config.json", "partial_rotary_factor"]),
    "quantized": ("llama_gqa", _edit_config(lambda c: {**c, "quantization_config": {"quant_method": "gptq"}}),
                  ["config.json", "quantization_config"]),
    "index weight_map a list": ("llama_gqa", _edit_index(lambda i: {**i, "weight_map": ["a"]}),
                                ["model.safetensors.index.json", "weight_map"]),
    "NaN": ("qwen2_tied", _edit_weights(_nan), ["model.safetensors", "model.norm.weight", "NaN"]),
    "header claims more bytes": ("qwen2_tied", _edit_header(lambda e: {**e, "data_offsets": [
        e["data_offsets"][0], e["data_offsets"][0] + 10**9]}), ["model.safetensors", "model.norm.weight", "truncated"]),
    "header entry damaged": ("qwen2_tied", _edit_header(lambda e: {**e, "data_offsets": [-256, 0]}),
                             ["model.safetensors", "model.norm.weight", "damaged header entry"]),
    "header a list": ("qwen2_tied", lambda tmp, name: (lambda f: (f / "model.safetensors").write_bytes(
        (8).to_bytes(8, "little") + b"[1, 2]  ") and f)(_copy(tmp, name)), ["model.safetensors", "JSON object"]),
    "truncated header": ("qwen2_tied", lambda tmp, name: (lambda f: (f / "model.safetensors").write_bytes(
        (f / "model.safetensors").read_bytes()[:100]) and f)(_copy(tmp, name)), ["model.safetensors", "truncated"]),
    # mixtures of experts and what gpt.py does not implement (notebook 18)
    "deepseek_v3": ("qwen3_moe", _edit_config(lambda c: {**c, "model_type": "deepseek_v3", "kv_lora_rank": 512}),
                    ["config.json", "model_type", "deepseek_v3", "kv_lora_rank", "n_shared_experts"]),
    "qwen2_moe": ("qwen3_moe", _edit_config(lambda c: {**c, "model_type": "qwen2_moe"}),
                  ["config.json", "model_type", "qwen2_moe", "shared_expert_intermediate_size"]),
    "qwen3_next": ("qwen3_moe", _edit_config(lambda c: {**c, "model_type": "qwen3_next"}),
                   ["config.json", "model_type", "qwen3_next", "linear_num_key_heads"]),
    "a shared expert in qwen3_moe": ("qwen3_moe", _edit_config(lambda c: {**c, "shared_expert_intermediate_size": 64}),
                                     ["config.json", "shared_expert_intermediate_size", "shared expert"]),
    "router noise": ("mixtral_moe", _edit_config(lambda c: {**c, "router_jitter_noise": 0.1}),
                     ["config.json", "router_jitter_noise", "0.1"]),
    "top-k above the experts": ("mixtral_moe", _edit_config(lambda c: {**c, "num_experts_per_tok": 5}),
                                ["config.json", "num_experts_per_tok", "5", "4 experts"]),
    "two expert counts": ("qwen3_moe", _edit_config(lambda c: {**c, "num_experts": 4}),
                          ["config.json", "num_experts", "num_local_experts"]),
    "mlp_only_layers a number": ("qwen3_moe", _edit_config(lambda c: {**c, "mlp_only_layers": 1}),
                                 ["config.json", "mlp_only_layers"]),
    "decoder_sparse_step 0": ("qwen3_moe", _edit_config(lambda c: {**c, "decoder_sparse_step": 0}),
                              ["config.json", "decoder_sparse_step", "0"]),
    "aux coefficient a string": ("qwen3_moe", _edit_config(lambda c: {**c, "router_aux_loss_coef": "0.01"}),
                                 ["config.json", "router_aux_loss_coef"]),
    "missing expert": ("mixtral_moe", _edit_weights(lambda t: {k: v for k, v in t.items() if k != EXPERT}),
                       ["model.safetensors", EXPERT, "missing"]),
    "an expert too many": ("qwen3_moe", _edit_config(lambda c: {**c, "num_local_experts": 7}),
                           ["model.safetensors", "model.layers.0.mlp.gate.weight", "(8, 64)", "(7, 64)"]),
    "experts' width": ("qwen3_moe", _edit_config(lambda c: {**c, "moe_intermediate_size": 16}),
                       ["model.safetensors", "model.layers.0.mlp.experts.0.gate_proj.weight", "(32, 64)", "(16, 64)"]),
    "qwen3 without its q/k norm weights": ("qwen3_tied", _edit_weights(lambda t: {
        k: v for k, v in t.items() if "q_norm" not in k}), ["model.safetensors", "self_attn.q_norm.weight", "missing"]),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_names_file_and_tensor_and_changes_nothing(hf, tmp_path, case):
    name, make, words = BAD[case]
    folder = make(tmp_path, name, hf) if make.__code__.co_argcount == 3 else make(tmp_path, name)
    before = hashes(folder)
    with pytest.raises(hf.HFError) as error:
        hf.load(folder)
    message = str(error.value)
    print(f"{case}: {message}")
    assert "\n" not in message and all(word in message for word in words), message
    assert str(folder) in message   # the folder (or the file in it) is named
    assert hashes(folder) == before


def test_accepted_configs(hf):
    config = json.loads((FIXTURES / "mistral_bf16" / "config.json").read_text())
    assert hf.gpt_config({**config, "sliding_window": 4096}, seq=64)["seq"] == 64   # a window longer than seq
    with pytest.raises(hf.HFError, match="seq <= 16"):
        hf.gpt_config({**config, "sliding_window": 16}, seq=64)
    assert hf.gpt_config({**config, "sliding_window": 16}, seq=16)["seq"] == 16
    qwen = json.loads((FIXTURES / "qwen2_tied" / "config.json").read_text())
    assert hf.gpt_config({**qwen, "sliding_window": 8, "use_sliding_window": False})   # Qwen2.5's published form
    # Qwen2.5-1.5B's form: max_window_layers (21) below the layers (28), still no window without use_sliding_window
    assert hf.gpt_config({**qwen, "sliding_window": 8, "use_sliding_window": False, "max_window_layers": 1}, seq=64)
    top = {k: v for k, v in qwen.items() if k != "rope_parameters"}   # most published configs: rope_theta on top
    assert hf.gpt_config({**top, "rope_theta": 1e6, "rope_scaling": None})["rope_theta"] == 1e6
    assert hf.gpt_config({**top, "max_position_embeddings": 32768})["seq"] == hf.DEFAULT_SEQ
    # transformers 5.25 takes rope_theta from rope_parameters before the top level (checked with a probe model)
    assert hf.gpt_config({**qwen, "rope_theta": 10.0})["rope_theta"] == qwen["rope_parameters"]["rope_theta"]
    assert hf.gpt_config({**qwen, "hidden_act": "swish"})   # transformers' "swish" is nn.SiLU
    # Qwen2 slides only from layer max_window_layers on (transformers' layer_types): 2 layers, none from layer 2
    slides = {**qwen, "use_sliding_window": True, "sliding_window": 8, "layer_types": None}
    assert hf.gpt_config({**slides, "max_window_layers": 2}, seq=64)["seq"] == 64
    with pytest.raises(hf.HFError, match="sliding_window is 8"):
        hf.gpt_config({**slides, "max_window_layers": 1}, seq=64)
    no_window = {k: v for k, v in config.items() if k != "sliding_window"}   # MistralConfig's default: 4096
    with pytest.raises(hf.HFError, match="sliding_window is 4096"):
        hf.gpt_config(no_window, seq=8192)


def test_single_file_before_index(hf, tmp_path):
    """Like transformers, model.safetensors is read when an index lies beside it (a folder with both)."""
    folder = _copy(tmp_path, "llama_gqa")
    cfg, weights = hf.load(folder)
    hf.write_safetensors(folder / "model.safetensors", {theirs: 2 * weights[mine]
                                                        for mine, (theirs, _) in hf.hf_names(cfg).items()})
    assert np.array_equal(hf.load(folder)[1]["embed"], 2 * weights["embed"])


@pytest.mark.parametrize("shard_bytes", [2**30, 100_000])
def test_save_load_round_trip_is_exact(hf, tmp_path, shard_bytes):
    from safetensors.numpy import load_file
    for name in NAMES:
        cfg, weights = hf.load(FIXTURES / name)
        out = hf.save(tmp_path / name, cfg, weights, max_shard_bytes=shard_bytes)
        cfg2, weights2 = hf.load(out)
        assert weights2.keys() == weights.keys() and all(np.array_equal(weights[k], weights2[k]) for k in weights)
        assert {k: v for k, v in cfg2.items() if k != "hf_config"} == {k: v for k, v in cfg.items() if k != "hf_config"}
        shards = sorted(out.glob("*.safetensors"))
        assert (len(shards) > 1) == (shard_bytes < 2**30) == (out / "model.safetensors.index.json").exists()
        read = {}
        for shard in shards:   # the safetensors library reads what hf.py wrote
            read.update(load_file(shard))
        names = {mine: theirs for mine, (theirs, _) in hf.hf_names(cfg).items()}
        assert all(np.array_equal(read[name], part) for k in weights for name, part in hf.pieces(names[k], weights[k]))
        assert len(read) == sum(len(hf.pieces(names[k], weights[k])) for k in weights)
        biggest = max(a.nbytes for a in read.values())   # a tensor above shard_bytes goes in a shard of its own
        assert all(shard.stat().st_size <= max(shard_bytes, biggest) + 4096 for shard in shards)


def test_save_a_model_of_the_series(modules, tmp_path):
    """The series' own byte-level GPT (no Hugging Face config behind it) goes out as a llama folder, back the same."""
    hf, gpt, _ = modules
    cfg = dict(gpt.CONFIG)
    weights = gpt.init_weights(cfg)
    cfg2, weights2 = hf.load(hf.save(tmp_path / "ours", cfg, weights))
    assert cfg2["hf_config"]["model_type"] == "llama" and {k: cfg2[k] for k in cfg} == cfg
    ids = np.arange(24).reshape(2, 12)
    assert np.array_equal(logits(gpt, cfg, weights, ids), logits(gpt, cfg2, weights2, ids))


def test_save_refuses_then_overwrites_atomically(hf, tmp_path, monkeypatch):
    cfg, weights = hf.load(FIXTURES / "llama_gqa")
    out = hf.save(tmp_path / "out", cfg, weights)
    before = hashes(out)
    with pytest.raises(hf.HFError, match="exists and is not empty"):
        hf.save(out, cfg, weights)
    with pytest.raises(hf.HFError, match="layers.0.mlp.w1.weight"):
        hf.save(out, cfg, {**weights, "layers.0.mlp.w1.weight": np.zeros((3, 3), np.float32)}, overwrite=True)
    with pytest.raises(hf.HFError, match="layers.1.attn.wq.weight is missing"):
        hf.save(out, cfg, {k: v for k, v in weights.items() if k != "layers.1.attn.wq.weight"}, overwrite=True)
    written = []

    def fails_on_the_second(path, tensors, dtype):   # a disk that fills up halfway
        if written:
            raise OSError("No space left on device")
        written.append(path)
        real(path, tensors, dtype)

    real = hf.write_safetensors
    monkeypatch.setattr(hf, "write_safetensors", fails_on_the_second)
    with pytest.raises(OSError):
        hf.save(out, cfg, {k: v * 2 for k, v in weights.items()}, max_shard_bytes=100_000, overwrite=True)
    monkeypatch.undo()
    assert hashes(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]   # nothing left behind
    hf.save(out, cfg, {k: v * 2 for k, v in weights.items()}, overwrite=True)
    assert np.array_equal(hf.load(out)[1]["embed"], 2 * weights["embed"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    (tmp_path / "empty").mkdir()
    hf.save(tmp_path / "empty", cfg, weights)   # an empty folder is no one's work
    (tmp_path / "a file").write_text("mine")   # a file is never replaced, even when told to overwrite
    for target in (tmp_path / "a file", tmp_path / "a file" / "model"):
        with pytest.raises(hf.HFError, match="file, not a folder"):
            hf.save(target, cfg, weights, overwrite=True)
    assert (tmp_path / "a file").read_text() == "mine"
    with pytest.raises(hf.HFError, match="norm.weight has NaN"):
        hf.save(tmp_path / "nan", cfg, {**weights, "norm.weight": weights["norm.weight"] * np.nan})
    assert not (tmp_path / "nan").exists()


# ---- what transformers made of hf.py, recorded by make_reference.py --check (torch is never installed here)

CHECKED = json.loads((FIXTURES / "transformers_check.json").read_text())


def test_transformers_loaded_every_fixture_hf_save_wrote(hf, tmp_path):
    """The record covers every fixture, each saved in one file and in shards; transformers read back the same
    weights, config and logits; and hf.save still writes those bytes (else the record is stale: run the check)."""
    assert sorted(CHECKED["fixtures"]) == sorted(NAMES), "make_reference.py --check covers every fixture"
    for name in NAMES:
        cfg, weights = hf.load(FIXTURES / name)
        for how, shard_bytes in (("one file", 2 * 2**30), ("shards of 100 kB", 100_000)):
            result = CHECKED["fixtures"][name][how]
            assert result["largest logit gap"] == 0 and result["largest weight gap"] == 0, (name, how, result)
            assert result["same tensor names"] and result["config fields that differ"] == [], (name, how)
            out = hf.save(tmp_path / f"{name}-{shard_bytes}", cfg, weights, max_shard_bytes=shard_bytes)
            written = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}
            assert written == result["sha256"], (
                f"{name}, {how}: hf.save now writes other bytes than transformers checked on {CHECKED['date']}; run "
                "tests/data/hf/make_reference.py --check in an environment with torch and transformers")


@pytest.mark.parametrize("case", CHECKED["config_cases"])
def test_gpt_config_reads_a_config_as_transformers_does(hf, case):
    """A field absent, null or 0 (make_reference.py's _config_cases): hf.gpt_config takes transformers' key/value
    heads, rotary frequencies and sliding window, or refuses in one line where transformers fails."""
    config, theirs = CHECKED["config_cases"][case]["config"], CHECKED["config_cases"][case]["transformers"]
    if "error" in theirs:
        with pytest.raises(hf.HFError) as error:
            hf.gpt_config(config, seq=16)
        assert "\n" not in str(error.value)
        print(f"{case}: refused ({error.value}); transformers: {theirs['error']}")
        return
    cfg = hf.gpt_config(config, seq=16)
    hd = cfg["head_dim"]
    mine = cfg.get("rope_inv_freq") or 1.0 / cfg["rope_theta"] ** (np.arange(0, hd, 2) / hd)
    assert cfg["kv_heads"] == theirs["kv_heads"]
    np.testing.assert_allclose(mine, theirs["inv_freq"], rtol=1e-6)   # torch computes them in float32
    assert hf.sliding_window(config, "config.json") == theirs["window"]


def test_hf_names_gives_the_shapes_gpt_builds(modules):
    """train_hf.py checks weights against hf.hf_names' shapes instead of building a second model (notebook 16): the
    table must give exactly gpt.init_weights' names and shapes, for every fixture and for the series' own GPT."""
    hf, gpt, _ = modules
    for cfg in [gpt.CONFIG, *(hf.load(FIXTURES / name)[0] for name in NAMES)]:
        table = {mine: shape for mine, (_, shape) in hf.hf_names(cfg).items()}
        assert table == {name: w.shape for name, w in gpt.init_weights(cfg).items()}, cfg.get("hf_config", "gpt")


# ---- the model's own dtype out (notebook 16): the writer's bytes are the safetensors library's

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_writer_writes_what_the_safetensors_library_writes(hf, tmp_path, dtype):
    """Every fixture, in every dtype hf.save writes, byte for byte as safetensors.numpy.save writes the same tensors
    narrowed by MindSpore's cast (bfloat16: NumPy has none) or NumPy's (float16): the rounding is checked too, on
    values moved off the bfloat16 grid."""
    import mindspore as ms
    from safetensors.numpy import save
    narrow = {"float32": lambda a: a, "float16": lambda a: a.astype(np.float16),
              "bfloat16": lambda a: ms.Tensor(a).astype(ms.bfloat16).asnumpy()}[dtype]
    for name in NAMES:
        cfg, weights = hf.load(FIXTURES / name)
        tensors = {name: part * np.float32(1.001) for mine, (theirs, _) in hf.hf_names(cfg).items()
                   for name, part in hf.pieces(theirs, weights[mine])}   # an expert's weight: a tensor of its own
        hf.write_safetensors(tmp_path / "ours.safetensors", tensors, dtype)
        library = save({k: narrow(a) for k, a in tensors.items()}, metadata={"format": "pt"})
        assert (tmp_path / "ours.safetensors").read_bytes() == library, (name, dtype)


def test_save_writes_the_dtype_the_model_came_in(hf, tmp_path):
    """A bfloat16 folder goes out in bfloat16 with config.json's dtype kept, bit for bit; float32 on request; a value
    float16 cannot hold, or a dtype save does not write, is refused in one line."""
    cfg, weights = hf.load(FIXTURES / "mistral_bf16")
    assert cfg["dtype"] == "bfloat16" and hf.load(FIXTURES / "llama_gqa")[0]["dtype"] == "float32"
    for dtype, stored in ((None, "BF16"), ("float32", "F32"), ("float16", "F16")):
        out = hf.save(tmp_path / str(dtype), cfg, weights, dtype=dtype)
        raw = (out / "model.safetensors").read_bytes()
        header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
        assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {stored}, dtype
        config = json.loads((out / "config.json").read_text())
        assert config["dtype"] == (dtype or "bfloat16"), config["dtype"]
        back = hf.load(out)[1]
        assert all(np.array_equal(back[k], w) for k, w in weights.items()) or dtype == "float16", dtype
    assert (tmp_path / "None" / "model.safetensors").stat().st_size < \
        0.51 * (tmp_path / "float32" / "model.safetensors").stat().st_size, "bfloat16 takes half the bytes"
    with pytest.raises(hf.HFError, match=r"weights: model.embed_tokens.weight overflows float16 .*dtype=\"float32\""):
        hf.save(tmp_path / "big", cfg, {**weights, "embed": weights["embed"] * 1e6}, dtype="float16")
    with pytest.raises(hf.HFError, match="dtype: 'int8' is not one save writes"):
        hf.save(tmp_path / "int8", cfg, weights, dtype="int8")


# ---- the tokenizer (notebook 16's tokens.py)

@pytest.fixture(scope="module")
def tokens(modules, tmp_path_factory):
    saved = sys.modules.get("tokens")
    source = notebook_scripts(HF_SOURCE)["scripts/tokens.py"]
    yield import_cells(tmp_path_factory.mktemp("tokens") / "tokens.py", source)
    if saved is None:
        sys.modules.pop("tokens", None)
    else:
        sys.modules["tokens"] = saved


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_has_its_tokenizer(tokens, name):
    """Each fixture's tokenizer covers its vocabulary exactly, gives back the corpus's text, and ends a document with
    the end-of-text token config.json names (where it names one)."""
    tokenizer, eos = tokens.load_tokenizer(FIXTURES / name)
    config = json.loads((FIXTURES / name / "config.json").read_text())
    assert tokenizer.get_vocab_size() == config["vocab_size"]
    assert config.get("eos_token_id") in (None, eos)
    text = tokens.documents()[0]
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False).ids) == text
    ids = tokens.tokenize(tokenizer, eos, tokens.documents()[:3])
    assert ids.dtype == np.int32 and (ids == eos).sum() == 3 and ids[-1] == eos and ids.max() < config["vocab_size"]
    assert (FIXTURES / name / "tokenizer.json").stat().st_size < 20_000, "the fixtures stay small"


def test_a_folder_without_a_usable_tokenizer_is_refused(tokens, tmp_path):
    folder = shutil.copytree(FIXTURES / "llama_gqa", tmp_path / "llama")
    (folder / "tokenizer_config.json").unlink()
    assert tokens.load_tokenizer(folder)[1] == 2, "without tokenizer_config.json: config.json's eos_token_id"
    (folder / "config.json").write_text(json.dumps({**json.loads((folder / "config.json").read_text()),
                                                    "eos_token_id": None}))
    with pytest.raises(tokens.TokenizerError, match="no end-of-text token"):
        tokens.load_tokenizer(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<|im_end|>"}}))
    with pytest.raises(tokens.TokenizerError, match="eos_token '<|im_end|>' is not in tokenizer.json"):
        tokens.load_tokenizer(folder)
    (folder / "tokenizer.json").write_text("{")
    with pytest.raises(tokens.TokenizerError, match="not a tokenizer"):
        tokens.load_tokenizer(folder)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(tokens.TokenizerError, match=r"tokenizer.json: missing: .* copy tokenizer.json") as error:
        tokens.load_tokenizer(folder)
    assert "\n" not in str(error.value)
