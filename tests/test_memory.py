"""helpers.memory against the ZeRO paper's figures, its JSON shape, and its named errors."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.memory import GB, PlanError, communication_bytes, llama_layer_units, plan

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hf_configs"


@pytest.mark.parametrize("stage, expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, expected_gb):
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, 64-way data parallel, mixed-precision Adam (K = 12)."""
    result = plan(7.5e9, dp=64, zero=stage, optimizer="adam", precision="fp16-mixed")
    model_states = result["params"] + result["grads"] + result["optimizer"]
    assert round(model_states / GB, 1) == expected_gb
    assert result["activations"] == 0 and result["total"] == model_states


def test_bytes_per_parameter():
    assert plan(1000, optimizer="adam", precision="bf16-mixed")["total"] == 16 * 1000      # 2 + 2 + 12
    assert plan(1000, optimizer="adam", precision="fp32")["total"] == 16 * 1000            # 4 + 4 + 8
    assert plan(1000, optimizer="momentum", precision="fp32")["optimizer"] == 4 * 1000
    assert plan(1000, optimizer="sgd", precision="fp32")["optimizer"] == 0
    assert plan(1000, optimizer="sgd", precision="fp16-mixed")["optimizer"] == 4 * 1000   # the master copy
    assert plan(8000, tp=2, pp=2)["params"] == 2 * 2000
    assert plan(1001, dp=4, zero=1, precision="fp32")["optimizer"] == 8 * 251             # a padded shard


def test_activations():
    full = plan(1, layers=2, hidden=8, seq=4, micro_batch=2, precision="bf16-mixed")["activations"]
    assert full == 2 * 4 * 2 * 8 * 34
    assert plan(1, layers=2, hidden=8, seq=4, micro_batch=2, tp=2)["activations"] == full // 2
    recomputed = plan(1, layers=2, hidden=8, seq=4, micro_batch=2, recompute=True)["activations"]
    assert recomputed == 2 * (2 * 4 * 2 * 8) + full // 2
    mlp = plan(1, layers=3, hidden=4, micro_batch=10, precision="fp32", block="mlp")["activations"]
    assert mlp == 4 * 10 * 4 * (3 * 5 + 8)
    assert plan(1, layers=4, hidden=8, seq=4, pp=2, accumulate=4)["activations"] == full   # 1F1B: pp in flight


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.memory", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_prints_each_component_in_gb():
    result = run_cli("--params", "7e9", "--dp", "8", "--zero", "1", "--optimizer", "adam", "--precision", "bf16-mixed")
    assert result.returncode == 0, result.stderr
    for name in ("params", "grads", "optimizer", "activations", "total"):
        assert name in result.stdout
    assert "14.000 GB" in result.stdout and "38.500 GB" in result.stdout   # 2Ψ; 2Ψ + 2Ψ + 12Ψ/8


def test_cli_json():
    result = run_cli("--params", "7.5e9", "--dp", "64", "--zero", "2", "--precision", "fp16-mixed", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["params", "grads", "optimizer", "activations", "total", "parameters"]
    assert all(isinstance(v, int) for v in data.values())
    assert round(data["total"] / GB, 1) == 16.6 and data["parameters"] == 7_500_000_000


@pytest.mark.parametrize("args, flag", [
    (("--params", "0"), "--params"),
    (("--params", "-7e9"), "--params"),
    (("--params", "1e9", "--dp", "0"), "--dp"),
    (("--params", "1e9", "--tp", "-2"), "--tp"),
    (("--params", "1e9", "--zero", "4"), "--zero"),
    (("--params", "1e9", "--optimizer", "lamb"), "--optimizer"),
    (("--params", "1e9", "--precision", "fp8"), "--precision"),
    (("--params", "1e9", "--layers", "30", "--hidden", "4096", "--pp", "4"), "--pp"),
    (("--params", "1e9", "--layers", "32", "--hidden", "4096", "--tp", "3"), "--tp"),
    (("--params", "1e9", "--layers", "32", "--hidden", "4096", "--block", "rnn"), "--block"),
    (("--params", "seven"), "--params"),
    (("--params", "1e9", "--layers", "32"), "--layers"),
    (("--dp", "8"), "--params"),
    (("--params", "1e9", "--card", "910C"), "--card"),
    (("--params", "1e9", "--card", "-64e9"), "--card"),
    (("--params", "1e9", "--card", "910B", "--search"), "--search"),
    (("--params", "1e9", "--card", "910B", "--search", "--cards", "2.5"), "--cards"),
    (("--config", "tests/data/hf_configs/Qwen2-7B.json", "--params", "7e9"), "--params"),
    (("--config", "tests/data/hf_configs/missing.json"), "--config"),
    (("--config", "pyproject.toml"), "--config"),
    (("--params", "1e9", "--ep", "2", "--dp", "2"), "--ep"),
    (("--config", "tests/data/hf_configs/Mixtral-8x7B-v0.1.json", "--ep", "3", "--dp", "4"), "--ep"),
])
def test_cli_bad_input_names_the_flag(args, flag):
    result = run_cli(*args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], result.stderr


def test_negative_values_are_read_as_values():
    result = run_cli("--params", "-7e9")
    assert "--params: must be a positive whole number, got -7000000000.0" in result.stderr, result.stderr


def test_plan_raises_named_errors():
    with pytest.raises(PlanError, match="--dp"):
        plan(1e9, dp=0)
    with pytest.raises(PlanError, match="--params: must be a number, got '7e9'"):
        plan("7e9")
    with pytest.raises(PlanError, match="--hidden: must be a number"):
        plan(1e9, layers=2, hidden=[8])
    with pytest.raises(PlanError, match="--optimizer"):
        plan(1e9, optimizer="adagrad")


def test_mindspore_optimizer_levels_peak_as_their_zero_stages():
    """MindSpore 2.10's docstring: each level stores weights sharded and gathers them for the forward, with "the
    memory optimization effect" of Megatron's; level1 keeps whole gradients only in an accumulation buffer."""
    for level, stage in (("level1", 1), ("level2", 2), ("level3", 3)):
        assert plan(8e9, dp=8, optimizer_level=level, accumulate=4) == plan(8e9, dp=8, zero=stage, accumulate=4)
    one = plan(8e9, dp=8, optimizer="adam", precision="fp32", optimizer_level="level1")
    assert (one["params"], one["grads"], one["optimizer"]) == (32e9, 4e9, 8e9), "one micro-batch: no buffer"
    assert one == plan(8e9, dp=8, optimizer="adam", precision="fp32", zero=2)
    with pytest.raises(PlanError, match="--optimizer-level: must be level1, level2 or level3"):
        plan(8e9, dp=8, optimizer_level="1")
    with pytest.raises(PlanError, match="give it or --zero, not both"):
        plan(8e9, dp=8, zero=1, optimizer_level="level1")


CONFIGS = ROOT / "tests" / "data" / "hf_configs"   # the architecture fields of each model's published config.json


@pytest.mark.parametrize("name, count", [
    ("Llama-2-7b-hf", 6_738_415_616), ("Mistral-7B-v0.1", 7_241_732_096), ("Qwen2-7B", 7_615_616_512),
    ("Qwen2-0.5B", 494_032_768), ("Mixtral-8x7B-v0.1", 46_702_792_704),
    # Qwen3: 2 x these = the "total_size" in bytes of the bfloat16 model.safetensors.index.json (tests/data/hf_configs)
    ("Qwen3-8B", 8_190_735_360), ("Qwen3-30B-A3B", 30_532_122_624)])
def test_config_json_gives_the_published_parameter_count(name, count):
    result = run_cli("--config", str(CONFIGS / f"{name}.json"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["parameters"] == count


def test_model_differences_are_counted():
    from helpers.hf_config import read_config

    qwen, mixtral = read_config(CONFIGS / "Qwen2-0.5B.json"), read_config(CONFIGS / "Mixtral-8x7B-v0.1.json")
    assert qwen.qkv_bias and not qwen.o_bias and qwen.tied_embeddings and qwen.kv_heads == 2
    assert mixtral.experts == 8 and mixtral.experts_per_token == 2
    assert mixtral.active_parameters() == 12_879_925_248          # "12.9B active parameters"


def test_qwen3_counts_match_the_model_cards(tmp_path):
    """Qwen's model cards: Qwen3-8B 8.2B, 6.95B without the embeddings; Qwen3-30B-A3B 30.5B in total, 3.3B
    activated, 29.9B without the embeddings (tests/data/hf_configs/SOURCES.md). q/k norm and experts counted."""
    from helpers.hf_config import read_config

    dense, moe = read_config(CONFIGS / "Qwen3-8B.json"), read_config(CONFIGS / "Qwen3-30B-A3B.json")
    for shape, total, without_embeddings in ((dense, "8.2", "6.95"), (moe, "30.5", "29.9")):   # as the cards write
        embeddings = shape.vocab * shape.hidden * (1 if shape.tied_embeddings else 2)
        assert f"{shape.parameters() / 1e9:.1f}" == total
        digits = len(without_embeddings.split(".")[1])
        assert f"{(shape.parameters() - embeddings) / 1e9:.{digits}f}" == without_embeddings
    # activated: the card says 3.3B; counted here 3,353,032,704 (embeddings, attention, norms, routers, 8 experts a
    # layer), which would round to 3.4: within 0.06B of the card, how it rounds is not said
    assert moe.active_parameters() == 3_353_032_704 and abs(moe.active_parameters() - 3.3e9) < 0.06e9
    assert moe.experts == 128 and moe.experts_per_token == 8
    assert dense.qk_norm and moe.qk_norm and moe.intermediate == 768 and moe.dense_layers == 0
    assert dense.layer_parameters() - read_config(CONFIGS / "Qwen2-7B.json").layer_parameters() != 0
    # mlp_only_layers and decoder_sparse_step: those layers keep a plain MLP of intermediate_size (6144)
    published = json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text())
    experts_and_router = 128 * 3 * 2048 * 768 + 128 * 2048
    for change, dense_layers in (({"mlp_only_layers": [0, 1]}, 2), ({"decoder_sparse_step": 2}, 24)):
        (tmp_path / "config.json").write_text(json.dumps({**published, **change}))
        variant = read_config(tmp_path / "config.json")
        assert variant.dense_layers == dense_layers
        assert variant.parameters() == moe.parameters() - dense_layers * (experts_and_router - 3 * 2048 * 6144)
    renamed = {k: v for k, v in published.items() if k != "num_experts"}
    (tmp_path / "config.json").write_text(json.dumps({**renamed, "num_local_experts": 128}))   # transformers 5's name
    assert read_config(tmp_path / "config.json").parameters() == moe.parameters()


def test_search_includes_expert_parallelism_for_qwen3_moe():
    result = run_cli("--config", str(CONFIGS / "Qwen3-30B-A3B.json"), "--seq", "4096", "--card", "910B",
                     "--search", "--cards", "16", "--json")
    layouts = json.loads(result.stdout)
    assert layouts, result.stderr
    assert {f["ep"] for f in layouts} >= {1, 2, 4, 8, 16}
    assert all(f["dp"] % f["ep"] == 0 and 128 % f["ep"] == 0 for f in layouts)   # experts split inside dp
    dense = json.loads(run_cli("--config", str(CONFIGS / "Qwen3-8B.json"), "--seq", "4096", "--card", "910B",
                               "--search", "--cards", "16", "--json").stdout)
    assert {f["ep"] for f in dense} == {1}   # a dense model has no experts to split


def test_vocabulary_adds_logits_and_loss():
    without = plan(1, layers=2, hidden=8, seq=4, micro_batch=2)["activations"]
    with_vocab = plan(1, layers=2, hidden=8, seq=4, micro_batch=2, vocab=100, tp=1)["activations"]
    assert with_vocab - without == 2 * 8 * 8 + 8 * 100 * (2 + 4)   # embedding output; logits + float32 loss


def test_card_verdict():
    fits = json.loads(run_cli("--config", str(CONFIGS / "Llama-2-7b-hf.json"), "--dp", "8", "--zero", "1",
                              "--card", "910B", "--json").stdout)
    assert fits["fits"] and fits["card_bytes"] == 64 * GB and fits["total"] <= 0.9 * 64 * GB
    loud = run_cli("--config", str(CONFIGS / "Llama-2-7b-hf.json"), "--dp", "8", "--card", "910A")
    assert "does not fit on a 910A (32 GB)" in loud.stdout and "GB over the 28.8 GB" in loud.stdout


def test_search_lists_fitting_layouts_fastest_first():
    result = run_cli("--config", str(CONFIGS / "Qwen2-7B.json"), "--seq", "4096", "--accumulate", "8",
                     "--card", "910B", "--search", "--cards", "8", "--json")
    layouts = json.loads(result.stdout)
    assert isinstance(layouts, list) and layouts, result.stderr
    assert all(f["dp"] * f["tp"] * f["pp"] == 8 and f["total"] <= 0.9 * 64 * GB for f in layouts)
    assert [f["step_seconds"] for f in layouts] == sorted(f["step_seconds"] for f in layouts)
    assert all(28 % f["tp"] == 0 and 4 % f["tp"] == 0 and 28 % f["pp"] == 0 for f in layouts)   # heads, layers
    assert {(f["dp"], f["tp"], f["pp"]) for f in layouts} >= {(2, 1, 4), (8, 1, 1)}
    assert (8, 1, 1, 0) not in {(f["dp"], f["tp"], f["pp"], f["zero"]) for f in layouts}, "plain DP: 121 GB"
    required = {"dp", "tp", "pp", "ep", "zero", "recompute", "micro_batches", "memory_bytes", "step_seconds"}
    assert all(required <= set(f) for f in layouts)
    # The same work for every layout: 8 cards x 1 sequence x 8 micro-batches, split over the data-parallel ranks.
    assert all(f["dp"] * f["micro_batches"] == 64 == f["global_batch"] for f in layouts)


def test_communication_formula():
    from helpers.memory import communication_bytes

    assert communication_bytes(8000, dp=4, precision="fp32")["dp"] == 2 * 3 * 8000 * 4 // 4
    assert communication_bytes(8000, dp=4, zero=3, precision="fp32")["dp"] == 3 * 3 * 8000 * 4 // 4
    tp = communication_bytes(8, tp=2, layers=2, hidden=8, seq=4, precision="fp32")
    assert tp["tp"] == 8 * 1 * 4 * 8 * 4 * 2 // 2 and tp["pp"] == 0
    unit = 4 * 8 * 4 // 2                      # one activation of s x h / tp, float32
    for pp, sends in ((2, 1), (4, 2)):         # two stages send one message each per micro-batch; a middle one two
        assert communication_bytes(8, tp=2, pp=pp, layers=4, hidden=8, seq=4, precision="fp32")["pp"] == sends * unit


def test_llama_layer_activations():
    """Block "llama": 37.5 s·B·h per layer for Llama-2-7B (GQA and SwiGLU counted), experts for Mixtral."""
    from helpers.hf_config import read_config
    from helpers.memory import llama_layer_units

    llama = read_config(DATA / "Llama-2-7b-hf.json")
    assert llama_layer_units(llama) * 2 == 75 * llama.hidden
    one = plan(1, layers=32, hidden=4096, seq=4096, block="llama", shape=llama)["activations"]
    assert one == 32 * 4096 * llama_layer_units(llama)
    with_scores = plan(1, layers=32, hidden=4096, seq=4096, heads=32, block="llama", shape=llama)["activations"]
    assert with_scores - one == 32 * 2 * 32 * 4096 * 4096
    mixtral = read_config(DATA / "Mixtral-8x7B-v0.1.json")
    h, i = mixtral.hidden, mixtral.intermediate
    attention = 4 * h + 4 * h + 4 * 1024                        # 32 query heads and 8 key/value heads of 128
    assert llama_layer_units(mixtral) == attention + 2 * h + 2 * 8 + 2 * (2 * h + 8 * i)
    with pytest.raises(PlanError, match="^--block: llama needs"):
        plan(1, layers=2, hidden=8, block="llama")


@pytest.mark.parametrize("kv_heads", [8, 2])
def test_config_count_equals_notebook_11s_gpt(kv_heads, tmp_path):
    """The counting rules against a real model: notebook 11's GPT, written as the llama config.json it is."""
    from helpers.hf_config import read_config
    from helpers.scripts import notebook_scripts

    namespace = {}
    exec(notebook_scripts(ROOT / "notebooks" / "11_gpt_tensor_parallel.ipynb")["scripts/gpt.py"], namespace)
    cfg = {**namespace["CONFIG"], "kv_heads": kv_heads}
    config = {"model_type": "llama", "vocab_size": cfg["vocab"], "hidden_size": cfg["dim"],
              "num_hidden_layers": cfg["layers"], "num_attention_heads": cfg["heads"],
              "num_key_value_heads": kv_heads, "intermediate_size": cfg["ffn"], "tie_word_embeddings": False}
    (tmp_path / "config.json").write_text(json.dumps(config))
    built = sum(w.size for w in namespace["init_weights"](cfg).values())
    assert read_config(tmp_path / "config.json").parameters() == built


def test_expert_parallelism_splits_the_experts_only():
    # 100 parameters, 80 of them experts: on each of 4 cards the 20 others whole and a quarter of the experts.
    assert plan(100, dp=4, ep=4, expert_params=80, precision="fp32", optimizer="sgd")["params"] == (20 + 20) * 4
    # ZeRO-1 shards the others over dp = 4 and each card's experts over the dp / ep = 1 card that holds them.
    adam = plan(100, dp=4, ep=4, expert_params=80, zero=1, precision="fp32")["optimizer"]
    assert adam == (20 // 4 + 20) * 8
    assert plan(100, dp=4, ep=2, expert_params=80, zero=1, precision="fp32")["optimizer"] == (5 + 40 // 2) * 8
    with pytest.raises(PlanError, match="--ep: 3 does not divide dp 4"):
        plan(100, dp=4, ep=3, expert_params=80)
    with pytest.raises(PlanError, match="--ep: 4 does not divide dp 2"):     # ep is carved out of dp, not dp x tp
        plan(100, dp=2, tp=2, ep=4, expert_params=80)
    with pytest.raises(PlanError, match="--ep: needs the experts' share"):
        plan(100, dp=4, ep=4)


def test_cli_expert_parallel_mixtral():
    from helpers.hf_config import read_config

    mixtral = read_config(CONFIGS / "Mixtral-8x7B-v0.1.json")
    result = run_cli("--config", str(CONFIGS / "Mixtral-8x7B-v0.1.json"), "--dp", "8", "--ep", "8",
                     "--precision", "fp32", "--optimizer", "sgd", "--json")
    assert result.returncode == 0, result.stderr
    experts = mixtral.expert_parameters()
    assert experts == 32 * 8 * 3 * 4096 * 14336
    assert json.loads(result.stdout)["params"] == (mixtral.parameters() - experts + experts // 8) * 4


# Item 8 of issue 44: each defect a one-line error naming the fix, or the right number.

LLAMA_3_70B = {"model_type": "llama", "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
               "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
               "tie_word_embeddings": False}   # the architecture fields of Meta-Llama-3-70B's config.json


def write_config(tmp_path, name="config.json", **fields):
    path = tmp_path / name
    path.write_text(json.dumps(fields))
    return path


def one_line_error(result, *fragments):
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and all(f in lines[0] for f in fragments), result.stderr
    return lines[0]


def test_config_heads_and_kv_heads_limit_tp():
    line = one_line_error(run_cli("--config", str(CONFIGS / "Qwen2-0.5B.json"), "--tp", "4", "--card", "910B"),
                          "--tp: 4 does not divide the model's 14 attention heads", "choose --tp from 1, 2")
    assert "Traceback" not in line
    one_line_error(run_cli("--config", str(CONFIGS / "Mistral-7B-v0.1.json"), "--tp", "16"),
                   "--tp: 16 does not divide the model's 8 key/value heads")
    assert run_cli("--config", str(CONFIGS / "Qwen2-0.5B.json"), "--tp", "2").returncode == 0
    from helpers.hf_config import read_config

    with pytest.raises(PlanError, match="14 attention heads"):
        plan(1e9, tp=4, shape=read_config(CONFIGS / "Qwen2-0.5B.json"))


def test_ep_must_divide_the_experts():
    mixtral = str(CONFIGS / "Mixtral-8x7B-v0.1.json")
    one_line_error(run_cli("--config", mixtral, "--ep", "16", "--dp", "16"),
                   "--ep: 16 does not divide the model's 8 experts", "choose --ep from 1, 2, 4, 8")
    one_line_error(run_cli("--config", mixtral, "--ep", "6", "--dp", "6"), "--ep: 6 does not divide the model's 8")
    assert run_cli("--config", mixtral, "--ep", "8", "--dp", "8").returncode == 0


@pytest.mark.parametrize("card", ["nan", "inf", "-inf", "NaN"])
def test_card_must_be_finite(card):
    one_line_error(run_cli("--params", "1e9", "--card", card), "--card: must be a finite positive size")


def test_config_folder_or_binary_file_is_one_line(tmp_path):
    one_line_error(run_cli("--config", str(tmp_path)), "--config", "is a folder", "config.json")
    binary = tmp_path / "model.safetensors"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_error(run_cli("--config", str(binary)), "--config", "not a text file")


@pytest.mark.parametrize("field", ["tie_word_embeddings", "attention_bias", "mlp_bias"])
def test_flags_must_be_json_booleans(tmp_path, field):
    config = write_config(tmp_path, **{**LLAMA_3_70B, field: "false"})
    one_line_error(run_cli("--config", str(config)), f"'{field}' must be true or false, got 'false'",
                   "without quotes")


def test_tied_embeddings_read_as_written(tmp_path):
    from helpers.hf_config import read_config

    untied = read_config(write_config(tmp_path, "a.json", **{**LLAMA_3_70B, "tie_word_embeddings": False}))
    tied = read_config(write_config(tmp_path, "b.json", **{**LLAMA_3_70B, "tie_word_embeddings": True}))
    assert not untied.tied_embeddings and tied.tied_embeddings
    assert untied.parameters() - tied.parameters() == 128256 * 8192


def test_heads_that_do_not_split_the_hidden_size(tmp_path):
    from helpers.hf_config import read_config

    odd = {**LLAMA_3_70B, "hidden_size": 5120, "num_attention_heads": 41, "num_key_value_heads": 41}
    one_line_error(run_cli("--config", str(write_config(tmp_path, **odd))),
                   "hidden_size 5120 is not a multiple of num_attention_heads 41", "give 'head_dim'")
    shape = read_config(write_config(tmp_path, "d.json", **odd, head_dim=128))
    assert shape.head_dim == 128
    assert shape.layer_parameters() == 5120 * 41 * 128 * 4 + 3 * 5120 * 28672 + 2 * 5120   # q, k, v, o; MLP; norms


def test_pipeline_stages_hold_the_embedding_and_the_output_layer(tmp_path):
    from helpers.hf_config import read_config
    from helpers.memory import plan_stages

    shape = read_config(write_config(tmp_path, **LLAMA_3_70B))
    n, h, v = shape.parameters(), shape.hidden, shape.vocab
    layer = shape.layer_parameters()
    stages = plan_stages(n, pp=16, precision="fp32", optimizer="sgd", shape=shape)
    assert stages["first"]["params"] == 4 * (v * h + 5 * layer)          # the embedding and 5 layers
    assert stages["last"]["params"] == 4 * (v * h + 5 * layer + h)       # the output layer, the final norm, 5 layers
    assert round(stages["last"]["params"] / (4 * n / 16), 2) == 1.21      # the busiest: 1.21 x the average
    assert plan(n, pp=16, precision="fp32", optimizer="sgd", shape=shape)["params"] == stages["last"]["params"]
    assert plan(n, pp=16, precision="fp32", optimizer="sgd")["params"] == 4 * math.ceil(n / 16)   # no shape: even
    # Tied embeddings (Qwen2-0.5B): one copy without a pipeline, one on each end with one.
    qwen = read_config(CONFIGS / "Qwen2-0.5B.json")
    assert plan(qwen.parameters(), precision="fp32", optimizer="sgd", shape=qwen)["params"] == 4 * qwen.parameters()
    ends = plan_stages(qwen.parameters(), pp=2, precision="fp32", optimizer="sgd", shape=qwen)
    assert ends["first"]["params"] == 4 * (qwen.vocab * qwen.hidden + 12 * qwen.layer_parameters())
    # Activations: the embedding's output on the first stage, the logits and the loss on the last.
    options = {"layers": 80, "hidden": h, "seq": 4096, "vocab": v, "block": "llama", "shape": shape, "accumulate": 16}
    first, last = (plan_stages(n, pp=16, **options)[s]["activations"] for s in ("first", "last"))
    kept = 4096 * llama_layer_units(shape)
    assert first == 16 * 5 * kept + 2 * 4096 * h and last == 1 * 5 * kept + 4096 * v * (2 + 4)
    result = run_cli("--config", str(tmp_path / "config.json"), "--pp", "16", "--accumulate", "16", "--json")
    assert json.loads(result.stdout)["stage"] == "first"


def test_tensor_parallel_without_sequence_parallel_and_selective_recompute():
    """Korthikanti et al. 2022, eq. (2) and section 5, in 16-bit bytes: s = 8, b = 2, h = 16, a = 4, t = 2."""
    s, b, h, a, t = 8, 2, 16, 4, 2
    common = {"layers": 1, "hidden": h, "seq": s, "micro_batch": b, "heads": a, "tp": t}
    sp = plan(1, **common)["activations"]
    assert sp == s * b * h * (34 + 5 * a * s / h) / t                            # eq. (1) / t
    no_sp = plan(1, **common, sequence_parallel=False)["activations"]
    assert no_sp == s * b * h * (10 + 24 / t + 5 * a * s / (h * t))             # eq. (2)
    selective = plan(1, **common, recompute="selective")["activations"]
    assert selective == s * b * h * 34 / t + 5 * a * s * s * b / t               # kept + one layer's scores again
    assert plan(1, **{**common, "layers": 4}, recompute="selective")["activations"] == 4 * s * b * h * 34 / t + (
        5 * a * s * s * b / t)
    full = plan(1, **{**common, "layers": 4}, recompute="full", sequence_parallel=False)["activations"]
    assert full == 4 * 2 * s * b * h + no_sp                                      # inputs whole, one layer again
    assert plan(1, **common, recompute=True) == plan(1, **common, recompute="full")
    with pytest.raises(PlanError, match="--recompute: unknown value 'some'"):
        plan(1, **common, recompute="some")


def test_llama_layer_without_sequence_parallel():
    from helpers.hf_config import read_config

    llama = read_config(DATA / "Llama-2-7b-hf.json")
    options = {"layers": 32, "hidden": 4096, "seq": 4096, "block": "llama", "shape": llama, "tp": 8}
    whole = 8 * 4096                                                             # norms' and projections' inputs
    expected = 32 * 4096 * (whole + (llama_layer_units(llama) - whole) // 8)
    assert plan(1, **options, sequence_parallel=False)["activations"] == expected
    assert plan(1, **options)["activations"] == 32 * 4096 * llama_layer_units(llama) // 8


def test_no_fit_hint_follows_what_overflows():
    llama = str(CONFIGS / "Llama-2-7b-hf.json")
    states = run_cli("--config", llama, "--dp", "8", "--card", "910A", "--seq", "4096")
    assert "the model states alone take" in states.stdout and "--zero 3" in states.stdout
    assert "shorter --seq" not in states.stdout
    acts = run_cli("--config", llama, "--dp", "8", "--zero", "3", "--card", "910B", "--seq", "32768")
    assert "the activations" in acts.stdout and "--recompute" in acts.stdout
    none = run_cli("--config", llama, "--card", "910A", "--seq", "4096", "--search", "--cards", "2")
    assert "no layout of 2 cards fits on 910A: the model states alone need" in none.stdout, none.stdout
    assert "at least 4 cards" in none.stdout and "--seq, --micro-batch and --accumulate change only" in none.stdout
    tiny = run_cli("--config", llama, "--card", "910B", "--seq", "4096", "--search", "--cards", "64",
                   "--global-batch", "1")
    assert "fits on 910B: none splits this model and a global batch of 1 sequences" in tiny.stdout, tiny.stdout


# Item 5: the planner learns time.


def test_step_flops_count_the_matrix_products():
    from helpers.hf_config import read_config
    from helpers.memory import step_flops

    llama = read_config(DATA / "Llama-2-7b-hf.json")
    h, s, L, V = llama.hidden, 4096, llama.layers, llama.vocab
    flops = step_flops(llama, seq=s, sequences=2)
    matmul_params = llama.layer_parameters() - 2 * h                   # everything in a layer but its norms
    assert flops["forward"] == 2 * s * (L * (2 * matmul_params + 4 * s * h) + 2 * h * V)
    assert flops["model"] == 3 * flops["forward"] and flops["recompute"] == 0
    assert flops["attention_term"] == 12 * L * s * h * 2 * s              # 12·layers·s²·h per sequence
    rule = flops["six_n"] + flops["attention_term"]
    assert abs(flops["model"] / rule - 1) < 0.02, "6N + attention, within 2%: the embedding does no product"
    full = step_flops(llama, seq=s, sequences=2, recompute="full")["recompute"]
    assert full == 2 * s * L * (2 * matmul_params + 4 * s * h)        # one more forward of the layers
    scores = step_flops(llama, seq=s, sequences=2, recompute="selective", flash=False)["recompute"]
    assert scores == 2 * s * L * 4 * s * h                               # the attention core's products again
    assert step_flops(llama, seq=s, sequences=2, recompute="selective")["recompute"] == 0, "flash: elementwise only"
    mixtral = read_config(DATA / "Mixtral-8x7B-v0.1.json")
    per_layer = step_flops(mixtral, seq=1)["layer"]
    assert per_layer == 2 * (4096 * 4096 * 2 + 2 * 4096 * 1024) + 4 * 4096 + 2 * (2 * 3 * 4096 * 14336) + 2 * 4096 * 8


def test_step_time_adds_compute_bubble_and_links():
    from helpers.memory import Machine, links, step_time

    free = Machine(peak_flops=1e12, efficiency=0.5, intra_latency=0, inter_latency=0, intra_bandwidth=1e30,
                   inter_bandwidth=1e30)
    shape = {"layers": 8, "hidden": 64, "seq": 32}
    one = step_time(8e6, **shape, accumulate=4, machine=free)
    assert one["step_seconds"] == pytest.approx(one["flops"] / 0.5e12)      # one card: FLOPs / (peak x efficiency)
    pipe = step_time(8e6, **shape, pp=4, accumulate=4, machine=free)
    assert pipe["bubble"] == 3 / 7 and pipe["micro_batches"] == 4
    assert pipe["seconds"]["bubble"] / pipe["step_seconds"] == pytest.approx(3 / 7)
    assert pipe["step_seconds"] == pytest.approx(7 / 4 * one["step_seconds"] / 4)   # (M + pp - 1) slots of 1/pp
    recomputed = step_time(8e6, **shape, accumulate=4, machine=free, recompute="full")
    assert recomputed["seconds"]["recompute"] == pytest.approx(one["seconds"]["compute"] / 3)
    slow = Machine(intra_latency=0, intra_bandwidth=1e9)
    tp = step_time(8e6, **shape, tp=2, accumulate=4, machine=slow)
    assert tp["seconds"]["tp"] == pytest.approx(8 * 8 * 4 * (1 / 2) * 32 * 64 * 2 / 1e9)   # layers x 8 x M x ring
    assert tp["sent"]["tp"] == communication_bytes(8e6, tp=2, **shape, accumulate=4)["tp"]
    assert links(8, tp=8) == {"tp": "intra", "pp": None, "dp": None, "ep": None, "expert_dp": None}
    assert links(64, tp=8, pp=2, node_cards=8) == {"tp": "intra", "pp": "inter", "dp": "inter", "ep": None,
                                                   "expert_dp": None}
    assert links(64, tp=16)["tp"] == "inter" and links(16, tp=4, pp=2)["dp"] == "intra"


def test_zero_2_and_3_communicate_every_micro_batch():
    from helpers.memory import step_time

    shape = {"layers": 8, "hidden": 64, "seq": 32, "dp": 4}
    sent = {zero: step_time(8e6, **shape, zero=zero, accumulate=4)["sent"]["dp"] for zero in (0, 1, 2, 3)}
    half = 3 * 8_000_000 * 2 // 4                                        # (dp - 1) / dp of the weights, bf16
    assert sent == {0: 2 * half, 1: 2 * half, 2: 5 * half, 3: 12 * half}
    assert step_time(8e6, **shape, zero=3, accumulate=1)["sent"]["dp"] == communication_bytes(
        8e6, zero=3, **shape)["dp"]


def test_cli_prints_the_estimated_step():
    result = run_cli("--config", str(CONFIGS / "Llama-2-7b-hf.json"), "--dp", "8", "--zero", "2", "--seq", "4096",
                     "--card", "910B")
    assert "estimated:" in result.stdout and "s per step (compute" in result.stdout
    assert "not measured: set --peak-flops" in result.stdout and "(assumed)" in result.stdout
    data = json.loads(run_cli("--config", str(CONFIGS / "Llama-2-7b-hf.json"), "--dp", "8", "--zero", "2",
                              "--seq", "4096", "--peak-flops", "3e14", "--json").stdout)
    assert data["time"]["machine"]["peak_flops"] == 3e14 and "peak_flops" not in data["time"]["machine"]["assumed"]
    one_line_error(run_cli("--params", "1e9", "--layers", "2", "--hidden", "8", "--efficiency", "1.5"),
                   "--efficiency: the share of the peak reached, at most 1")
    one_line_error(run_cli("--params", "1e9", "--layers", "2", "--hidden", "8", "--peak-flops", "nan"),
                   "--peak-flops: must be a finite number")
    one_line_error(run_cli("--params", "1e9", "--dp", "3", "--global-batch", "8"),
                   "--global-batch: 8 sequences do not split into dp x micro-batch = 3 x 1")


@pytest.mark.parametrize("batch", [None, "128", "256"])
def test_70b_on_64_cards_keeps_tp_in_a_node_and_the_bubble_small(tmp_path, batch):
    """Llama-3-70B, 64 x 910B, seq 4096, 8 cards a node: the search used to put dp 4 x tp 1 x pp 16 first, idle 48%
    of the time. Ranked by time, the top pick keeps tensor parallelism inside a node and its pipeline busy."""
    config = write_config(tmp_path, **LLAMA_3_70B)
    args = ["--config", str(config), "--search", "--cards", "64", "--card", "910B", "--seq", "4096",
            "--node-cards", "8", "--json"]
    args += ["--accumulate", "16"] if batch is None else ["--global-batch", batch]
    layouts = json.loads(run_cli(*args).stdout)
    top = layouts[0]
    assert top["tp"] <= 8 and 8 % top["tp"] == 0, top
    assert top["bubble"] < 0.15, top
    assert top["step_seconds"] == min(f["step_seconds"] for f in layouts)
    assert all(f["dp"] * f["micro_batches"] == layouts[0]["global_batch"] for f in layouts)


def test_mixture_of_experts_search_tries_expert_parallel_degrees():
    layouts = json.loads(run_cli("--config", str(CONFIGS / "Mixtral-8x7B-v0.1.json"), "--search", "--cards", "16",
                                 "--card", "910B", "--seq", "4096", "--global-batch", "32", "--json").stdout)
    eps = {f["ep"] for f in layouts}
    assert {1, 2, 4, 8} >= eps and len(eps) > 1
    assert all(8 % f["ep"] == 0 and (f["dp"] * f["tp"]) % f["ep"] == 0 for f in layouts)
    from helpers.hf_config import read_config
    from helpers.memory import step_time

    mixtral = read_config(CONFIGS / "Mixtral-8x7B-v0.1.json")
    time = step_time(mixtral.parameters(), dp=8, ep=8, expert_params=mixtral.expert_parameters(), shape=mixtral,
                     layers=32, hidden=4096, seq=4096, vocab=32000)
    assert time["seconds"]["ep"] > 0 and time["sent"]["ep"] == 4 * 32 * 7 * (4096 * 2 * 4096 * 2) // 8
    assert step_time(mixtral.parameters(), dp=8, shape=mixtral, seq=4096) == step_time(
        mixtral.parameters(), dp=8, shape=mixtral, layers=32, hidden=4096, vocab=32000, seq=4096)
