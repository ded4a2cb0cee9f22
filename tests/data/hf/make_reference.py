"""Make the Hugging Face fixtures of tests/test_hf.py: tiny random models saved by `transformers`, and their logits.

Made with torch 2.13.0+cpu and transformers 5.25.0 (safetensors 0.8.0), Python 3.11, in a virtual environment of
its own (torch is several GB and never installed for the tests):

    python3 -m venv /tmp/hfref && /tmp/hfref/bin/pip install torch==2.13.0 transformers==5.25.0 numpy
    /tmp/hfref/bin/python tests/data/hf/make_reference.py

Each folder tests/data/hf/<name>/ holds what `save_pretrained` wrote (config.json, safetensors) plus ids.npy, fixed
token ids (2 x 12, some above 255), and logits.npy, the model's float32 logits for them (eager attention). The
models: llama with grouped key/value heads (4 heads, 2 key/value heads), rope_theta 500000, saved in shards;
qwen2 with its q/k/v biases and tied embeddings (no lm_head in the file); mistral with head_dim 32 (not
hidden / heads = 16), no sliding window, saved in bfloat16 (its logits are those of the bfloat16 weights, run in
float32). Vocabulary 300, hidden 64, 2 layers: about 1 MB in all. And llama3_scaled, notebook 16's model: Llama 3's
rope scaling (rope_type "llama3", as Llama-3.2-1B, with original_max_position_embeddings 16 so that the scaling
changes every frequency band within 12 tokens), 16 heads and 8 key/value heads (tensor parallelism up to 8 divides
them), vocabulary 256 (byte ids), hidden 128, 2 layers (1.7 MB). And three of notebook 18: qwen3_tied, a Qwen3
(q/k RMSNorm per head, head_dim 32, tied embeddings); qwen3_moe, a Qwen3-MoE of 3 layers, the middle one a plain MLP
(mlp_only_layers [1]), 8 experts of width 32, top 2 renormalised (norm_topk_prob, as Qwen3-30B-A3B), with
output_router_logits and router_aux_loss_coef 0.01, so that transformers adds the load-balancing loss; and
mixtral_moe, a Mixtral with 4 experts, top 2, router_aux_loss_coef 0.02. For the two mixtures of experts,
loss.json holds transformers' loss with labels = ids, and its aux_loss. `--only NAME` makes one folder again.

    /tmp/hfref/bin/python tests/data/hf/make_reference.py --check [--hf notebooks/scripts/hf.py]

checks notebook 16's scripts/hf.py (written by the notebook's configuration cell) against `transformers`, and
records the result in tests/data/hf/transformers_check.json (date, versions, every figure below):
1. each fixture, read by hf.load and written by hf.save (in its own dtype: the mistral in bfloat16) in one file and
   in shards of 100 kB, is loaded
   by transformers (float32, eager attention): its logits on ids.npy against logits.npy, its weights against
   transformers' own load of the fixture, its config against the fixture's as transformers reads both; and the
   sha256 of every file hf.save wrote, so that tests/test_hf.py can tell when hf.save writes other bytes (then run
   this again);
2. _config_cases(), configs with a field absent, null or 0: what transformers makes of each (key/value heads, rotary
   frequencies, sliding window, or an error), which tests/test_hf.py compares with hf.gpt_config's reading.
"""
import argparse
import datetime
import hashlib
import importlib.util
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).resolve().parent
COMMON = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "max_position_embeddings": 64}
MODELS = {
    "llama_gqa": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
                  {"num_key_value_heads": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
                   "rms_norm_eps": 1e-5}, {"max_shard_size": "100KB"}),
    "qwen2_tied": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM,
                   {"num_key_value_heads": 2, "tie_word_embeddings": True,
                    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}, {}),
    "mistral_bf16": (transformers.MistralConfig, transformers.MistralForCausalLM,
                     {"num_key_value_heads": 4, "head_dim": 32, "sliding_window": None}, {"bf16": True}),
    "llama3_scaled": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
                      {"vocab_size": 256, "hidden_size": 128, "intermediate_size": 352, "num_attention_heads": 16,
                       "num_key_value_heads": 8, "rms_norm_eps": 1e-5,
                       "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 16}}, {}),
    "qwen3_tied": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM,
                   {"num_key_value_heads": 2, "head_dim": 32, "tie_word_embeddings": True,
                    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}, {}),
    "qwen3_moe": (transformers.Qwen3MoeConfig, transformers.Qwen3MoeForCausalLM,
                  {"num_hidden_layers": 3, "num_key_value_heads": 2, "num_experts": 8, "num_experts_per_tok": 2,
                   "moe_intermediate_size": 32, "mlp_only_layers": [1], "norm_topk_prob": True,
                   "output_router_logits": True, "router_aux_loss_coef": 0.01}, {"moe": True}),
    "mixtral_moe": (transformers.MixtralConfig, transformers.MixtralForCausalLM,
                    {"num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                     "output_router_logits": True, "router_aux_loss_coef": 0.02}, {"moe": True}),
}


def main(only=None):
    all_ids = np.random.default_rng(0).integers(0, COMMON["vocab_size"], (2, 12))
    for seed, (name, (config_class, model_class, extra, how)) in enumerate(MODELS.items()):
        if only and name != only:
            continue
        torch.manual_seed(seed)
        config = config_class(**{**COMMON, **extra})
        ids = all_ids % config.vocab_size   # the same ids for vocabulary 300; below 256 for a byte vocabulary
        config._attn_implementation = "eager"
        model = model_class(config).float().eval()
        with torch.no_grad():   # larger than the default init, every weight random (norm weights about 1)
            for pname, p in model.named_parameters():
                p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in pname else 0.1 * torch.randn_like(p))
                if how.get("bf16"):   # the logits of the weights the file holds
                    p.copy_(p.to(torch.bfloat16).float())
            out = model(torch.tensor(ids), labels=torch.tensor(ids))
            logits = out.logits.float().numpy()
        folder = HERE / name
        (model.to(torch.bfloat16) if how.get("bf16") else model).save_pretrained(
            folder, max_shard_size=how.get("max_shard_size", "50GB"))
        np.save(folder / "ids.npy", ids.astype(np.int32))
        np.save(folder / "logits.npy", logits.astype(np.float32))
        if how.get("moe"):   # the training loss: cross-entropy + router_aux_loss_coef * aux_loss
            (folder / "loss.json").write_text(json.dumps({"loss": float(out.loss), "aux_loss": float(out.aux_loss)},
                                                         indent=1) + "\n")
        print(name, sorted(p.name for p in folder.iterdir()), f"max |logit| {np.abs(logits).max():.3f}")
    print("torch", torch.__version__, "transformers", transformers.__version__)


def _fixture_config(name):
    return json.loads((HERE / name / "config.json").read_text())


def _without(config, *keys):
    return {k: v for k, v in config.items() if k not in keys}


def _config_cases():
    """{case: config dict}: the fields hf.gpt_config must read as transformers does (tests/test_hf.py replays them)."""
    llama, qwen, mistral, llama3, qwen3, qwen3_moe, mixtral = (_fixture_config(n) for n in (
        "llama_gqa", "qwen2_tied", "mistral_bf16", "llama3_scaled", "qwen3_tied", "qwen3_moe", "mixtral_moe"))
    top = _without(llama, "rope_parameters")   # the published form: rope_theta on top
    scaling = _without(llama3["rope_parameters"], "original_max_position_embeddings")
    wide_qwen = {**qwen, "hidden_size": 1024, "num_attention_heads": 64}   # 64 heads: unlike either default
    wide_mistral = {**mistral, "hidden_size": 256, "num_attention_heads": 16}
    return {
        "rope_theta 0": {**top, "rope_theta": 0},
        "rope_theta null": {**top, "rope_theta": None},
        "rope_parameters' rope_theta null beside a top-level one": {
            **top, "rope_theta": 5e5, "rope_parameters": {"rope_type": "default", "rope_theta": None}},
        "no rope_theta anywhere": top,
        "rope_theta on top, rope_parameters without it": {
            **top, "rope_theta": 5e5, "rope_parameters": {"rope_type": "default"}},
        "rope_theta in rope_parameters and on top": {**llama, "rope_theta": 10.0},
        "llama3 as rope_scaling, rope_theta on top (Llama-3.2-1B's form)": {
            **_without(llama3, "rope_parameters"), "rope_theta": 5e5,
            "rope_scaling": _without(llama3["rope_parameters"], "rope_theta")},
        "llama3 without original_max_position_embeddings": {**llama3, "rope_parameters": scaling},
        "llama3 without it nor max_position_embeddings": {
            **_without(llama3, "max_position_embeddings"), "rope_parameters": scaling},
        "llama3 with original_max_position_embeddings on top": {
            **llama3, "original_max_position_embeddings": 32},
        "llama without num_key_value_heads": _without(llama, "num_key_value_heads"),
        "qwen2 without num_key_value_heads": _without(wide_qwen, "num_key_value_heads"),
        "qwen2 num_key_value_heads null": {**wide_qwen, "num_key_value_heads": None},
        "mistral without num_key_value_heads": _without(wide_mistral, "num_key_value_heads"),
        "mistral num_key_value_heads null": {**wide_mistral, "num_key_value_heads": None},
        "mistral without sliding_window": _without(mistral, "sliding_window"),
        "qwen2 use_sliding_window without sliding_window": {
            **_without(qwen, "sliding_window", "layer_types"), "use_sliding_window": True, "max_window_layers": 0},
        "qwen2 use_sliding_window, sliding_window null": {
            **_without(qwen, "layer_types"), "use_sliding_window": True, "sliding_window": None,
            "max_window_layers": 0},
        "qwen2 sliding_window without use_sliding_window (Qwen2.5's form)": {
            **_without(qwen, "layer_types"), "use_sliding_window": False, "sliding_window": 8},
        "qwen3 without head_dim nor num_key_value_heads": {
            **_without(qwen3, "head_dim", "num_key_value_heads"), "hidden_size": 1024, "num_attention_heads": 64},
        "qwen3 use_sliding_window from layer 1": {
            **_without(qwen3, "layer_types"), "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 1},
        "qwen3_moe without num_key_value_heads": _without(qwen3_moe, "num_key_value_heads"),
        "qwen3_moe use_sliding_window": {**qwen3_moe, "use_sliding_window": True, "sliding_window": 32},
        "qwen3_moe use_sliding_window without sliding_window": {
            **_without(qwen3_moe, "sliding_window"), "use_sliding_window": True},
        "mixtral without rope_parameters": _without(mixtral, "rope_parameters"),
        "mixtral without num_key_value_heads": {
            **_without(mixtral, "num_key_value_heads"), "hidden_size": 256, "num_attention_heads": 16},
        "mixtral sliding_window 32": {**mixtral, "sliding_window": 32},
        "mixtral without sliding_window": _without(mixtral, "sliding_window"),
    }


def transformers_reading(config):
    """What transformers makes of a config dict: key/value heads, rotary frequencies and sliding window (the first
    layer's that slides, or None), or the error it raises (infinite or NaN frequencies count as one)."""
    try:
        parsed = transformers.AutoConfig.for_model(**json.loads(json.dumps(config)))
        kind = parsed.model_type
        module = importlib.import_module(f"transformers.models.{kind}.modeling_{kind}")
        rotary = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding"))
        inv_freq = rotary(parsed).inv_freq.double().numpy()
        if not np.isfinite(inv_freq).all():
            return {"error": f"non-finite rotary frequencies {inv_freq[:3].tolist()}"}
        layers = parsed.num_hidden_layers
        if kind in ("qwen2", "qwen3"):
            windows = [parsed.sliding_window if t == "sliding_attention" else None for t in parsed.layer_types]
        else:
            windows = [getattr(parsed, "sliding_window", None)] * layers
        return {"kv_heads": parsed.num_key_value_heads, "inv_freq": inv_freq.tolist(),
                "window": next((w for w in windows if w is not None), None)}
    except Exception as error:  # noqa: BLE001  (any refusal is an answer)
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"}


def _shown(path):
    """A path as the record shows it: from the repository's root when it lies inside."""
    path = Path(path).resolve()
    return str(path.relative_to(HERE.parents[2])) if path.is_relative_to(HERE.parents[2]) else str(path)


def _import_hf(path):
    spec = importlib.util.spec_from_file_location("hf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(hf_path):
    """Check hf.py (load and save) against transformers and write transformers_check.json; return the record."""
    hf = _import_hf(hf_path)
    record = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
              "torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__,
              "hf.py": _shown(hf_path), "fixtures": {}, "config_cases": {}}
    skip = {"dtype", "torch_dtype", "transformers_version", "_name_or_path"}
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            ids = torch.tensor(np.load(HERE / name / "ids.npy")).long()
            theirs = transformers.AutoModelForCausalLM.from_pretrained(
                HERE / name, attn_implementation="eager", dtype=torch.float32).state_dict()
            given = transformers.AutoConfig.from_pretrained(HERE / name).to_dict()
            cfg, weights = hf.load(HERE / name)
            for how, shard_bytes in (("one file", 2 * 2**30), ("shards of 100 kB", 100_000)):
                out = hf.save(Path(tmp) / f"{name}-{shard_bytes}", cfg, weights, max_shard_bytes=shard_bytes)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    out, attn_implementation="eager", dtype=torch.float32).eval()
                with torch.no_grad():
                    logits = model(ids).logits.numpy()
                mine = model.state_dict()
                read = transformers.AutoConfig.from_pretrained(out).to_dict()
                record["fixtures"].setdefault(name, {})[how] = {
                    "largest logit gap": float(np.abs(logits - np.load(HERE / name / "logits.npy")).max()),
                    "largest weight gap": max(float((mine[k] - theirs[k]).abs().max()) for k in theirs),
                    "same tensor names": sorted(mine) == sorted(theirs),
                    "config fields that differ": sorted(k for k in given.keys() | read.keys()
                                                        if k not in skip and given.get(k) != read.get(k)),
                    "sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}}
    for case, config in _config_cases().items():
        record["config_cases"][case] = {"config": config, "transformers": transformers_reading(config)}
    (HERE / "transformers_check.json").write_text(json.dumps(record, indent=1) + "\n")
    for name, hows in record["fixtures"].items():
        for how, result in hows.items():
            print(f"{name}, {how}: logits gap {result['largest logit gap']:.1e}, weights gap "
                  f"{result['largest weight gap']:.1e}, config fields that differ: "
                  f"{result['config fields that differ']}")
    for case, result in record["config_cases"].items():
        print(f"{case}: {result['transformers']}"[:150])
    print("written", HERE / "transformers_check.json")
    return record


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="check notebook 16's hf.py against transformers")
    parser.add_argument("--hf", default=str(HERE.parents[2] / "notebooks" / "scripts" / "hf.py"),
                        help="the hf.py to check (notebook 16's configuration cell writes notebooks/scripts/hf.py)")
    parser.add_argument("--only", metavar="NAME", choices=MODELS, help="make this fixture only")
    args = parser.parse_args()
    if args.check and not Path(args.hf).is_file():
        sys.exit(f"make_reference.py: {args.hf} does not exist: run notebook 16's configuration cell, or give --hf")
    check(args.hf) if args.check else main(args.only)
