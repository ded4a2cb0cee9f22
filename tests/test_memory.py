"""helpers.memory against the ZeRO paper's figures, its JSON shape, and its named errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.memory import GB, PlanError, plan

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


def test_mindspore_optimizer_levels_shard_what_the_hsdp_docstring_says():
    level1 = plan(8e9, dp=8, optimizer="adam", precision="fp32", optimizer_level="level1")
    assert (level1["params"], level1["grads"], level1["optimizer"]) == (4e9, 32e9, 8e9), "weights and state sharded"
    zero1 = plan(8e9, dp=8, optimizer="adam", precision="fp32", zero=1)
    assert level1["params"] < zero1["params"] and level1["grads"] == zero1["grads"], "level1 is not ZeRO-1"
    for level in ("level2", "level3"):
        assert plan(8e9, dp=8, optimizer_level=level) == plan(8e9, dp=8, zero=3)
    with pytest.raises(PlanError, match="--optimizer-level: must be level1, level2 or level3"):
        plan(8e9, dp=8, optimizer_level="1")
    with pytest.raises(PlanError, match="give it or --zero, not both"):
        plan(8e9, dp=8, zero=1, optimizer_level="level1")


CONFIGS = ROOT / "tests" / "data" / "hf_configs"   # the architecture fields of each model's published config.json


@pytest.mark.parametrize("name, count", [
    ("Llama-2-7b-hf", 6_738_415_616), ("Mistral-7B-v0.1", 7_241_732_096), ("Qwen2-7B", 7_615_616_512),
    ("Qwen2-0.5B", 494_032_768), ("Mixtral-8x7B-v0.1", 46_702_792_704)])
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


def test_search_lists_fitting_layouts_fewest_bytes_first():
    result = run_cli("--config", str(CONFIGS / "Qwen2-7B.json"), "--seq", "4096", "--accumulate", "8",
                     "--card", "910B", "--search", "--cards", "8", "--json")
    layouts = json.loads(result.stdout)["layouts"]
    assert layouts and all(f["dp"] * f["tp"] * f["pp"] == 8 and f["total"] <= 0.9 * 64 * GB for f in layouts)
    assert [f["sent"] for f in layouts] == sorted(f["sent"] for f in layouts)
    assert all(28 % f["tp"] == 0 and 4 % f["tp"] == 0 and 28 % f["pp"] == 0 for f in layouts)   # heads, layers
    assert {(f["dp"], f["tp"], f["pp"]) for f in layouts} >= {(2, 1, 4), (8, 1, 1)}
    assert (8, 1, 1, 0) not in {(f["dp"], f["tp"], f["pp"], f["zero"]) for f in layouts}, "plain DP: 121 GB"


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
    with pytest.raises(PlanError, match="--ep: 3 does not divide dp x tp = 4"):
        plan(100, dp=4, ep=3, expert_params=80)
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
