"""helpers.planner's parts against their sources: the machine's constants, MindSpore's rank order and optimizer
levels, MindSpore Transformers' recompute, batch and expert rules, and the published-throughput table (issue 55;
issue 53 items 16 to 19)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.hf_config import read_config
from helpers.mesh import Mesh
from helpers.planner import (
    EFFICIENCY_910B,
    PlanError,
    constants,
    links,
    llama_layer_units,
    machine,
    plan,
    recipes,
    search,
    step_flops,
    step_time,
)
from helpers.planner.timing import _dp_halves, _ring

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
MINDSPORE = Path(__import__("mindspore").__file__).parent
LLAMA_3_70B = {"model_type": "llama", "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
               "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
               "tie_word_embeddings": False}   # the architecture fields of Meta-Llama-3-70B's config.json


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.memory", *args], capture_output=True, text=True, cwd=ROOT)


# Issue 55 item 1: every constant with its source or the word "assumed".

@pytest.mark.parametrize("card", ["910B", "910A"])
def test_every_constant_of_a_card_names_its_source(card):
    hw = machine(card)
    rows = constants(hw)
    kinds = ("Huawei", "press", "assumed", "fitted")
    assert rows and all(row["source"].startswith(kinds) for row in rows), rows
    assert {row["constant"] for row in rows} >= {"memory", "peak_flops", "efficiency", "node_cards", "hccs_cards",
                                                 "intra_bandwidth", "inter_bandwidth"}
    assert set(hw.assumed) == {row["constant"] for row in rows if row["source"].startswith(("assumed", "press"))}
    printed = run_cli("--card", card, "--constants")
    assert printed.returncode == 0, printed.stderr
    for row in rows:
        assert row["constant"] in printed.stdout and row["source"][:40] in printed.stdout


def test_a_given_constant_is_no_longer_assumed():
    hw = machine("910B", intra_bandwidth=180e9)
    assert "intra_bandwidth" not in hw.assumed and hw.source("intra_bandwidth") == "given"
    assert machine().source("peak_flops").startswith("assumed") and machine().card is None


# Issue 53 item 19: a 910A node is two 4-card HCCS rings joined by PCIe.

def test_910a_node_is_two_hccs_rings():
    a910, b910 = machine("910A"), machine("910B")
    assert (a910.node_cards, a910.group_cards, b910.group_cards) == (8, 4, 8)
    assert links(8, tp=4, node_cards=8, hccs_cards=4)["tp"] == "intra"
    assert links(8, tp=8, node_cards=8, hccs_cards=4)["tp"] == "pcie", "cards 0-7 span both rings"
    assert links(8, tp=8, node_cards=8, hccs_cards=8)["tp"] == "intra", "the 910B's node: one HCCS domain"
    assert links(8, tp=4, node_cards=8, hccs_cards=4)["dp"] == "pcie"        # ranks t and t + 4
    shape = {"layers": 8, "hidden": 64, "seq": 32}
    on_a = step_time(8e6, **shape, tp=8, machine=a910)
    assert on_a["links"]["tp"] == "pcie"
    assert on_a["seconds"]["tp"] == pytest.approx(8 * 8 * _ring("all_gather", 8, 32 * 64 * 2, (10e-6, 16e9)))
    with pytest.raises(PlanError, match="^--node-cards: a 910A node is made of HCCS rings of 4 cards"):
        machine("910A", node_cards=6)
    bad = run_cli("--params", "1e9", "--layers", "2", "--hidden", "8", "--card", "910A", "--node-cards", "6")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--node-cards" in bad.stderr


# Issue 53 item 17: MindSpore's rank order, the pipeline stage outermost.

def test_ranks_are_laid_out_as_mindspore_lays_them_out():
    serialization = (MINDSPORE / "parallel" / "_parallel_serialization.py").read_text()
    assert "dst_stage_id = rank_id // dst_stage_device_num" in serialization
    # Mixtral's published layout, dp 8 x pp 2 x ep 8 on 16 cards, 8 a node: each stage is one node, so the
    # all-to-all of expert parallelism stays inside it and only the pipeline crosses nodes.
    where = links(16, tp=1, pp=2, ep=8, node_cards=8)
    assert where == {"tp": None, "pp": "inter", "dp": "intra", "ep": "intra", "expert_dp": None}
    # The order the planner used before, dp x pp x tp (pp inside dp), puts every ep group across both nodes.
    old = Mesh({"dp": 8, "pp": 2, "tp": 1}, order=("dp", "pp", "tp"))
    assert len(old.crossing("dp", per_node=8)) == len(old.groups("dp")) == 2
    new = Mesh({"pp": 2, "dp": 8, "tp": 1}, order=("pp", "dp", "tp"))
    assert new.crossing("dp", per_node=8) == []
    mixtral = read_config(CONFIGS / "Mixtral-8x7B-v0.1.json")
    time = step_time(mixtral.parameters(), dp=8, pp=2, ep=8, expert_params=mixtral.expert_parameters(),
                     shape=mixtral, seq=4096, accumulate=16, recompute="full", machine=machine("910B"))
    held = 4096 * 2 * 4096 * 2                                  # a micro-batch's tokens x 2 copies x h, bf16
    assert time["seconds"]["ep"] == pytest.approx(16 * 16 * 6 * _ring("all_to_all", 8, held, (10e-6, 100e9)))


# Issue 53 item 18: MindSpore 2.10's parallel optimizer levels, beside the ZeRO stages.

def test_optimizer_levels_as_mindspore_documents_them():
    context = " ".join((MINDSPORE / "context.py").read_text().split())       # the docstring, one line
    for quote in ("splitting is performed on weights and optimizer state",
                  "the memory optimization effect is the same",
                  "to release the memory used by the forward pass allgather",
                  "effective only when the model runs on pipeline training or gradient accumulation"):
        assert quote in context, quote
    common = {"dp": 8, "layers": 8, "hidden": 64, "seq": 32, "optimizer": "adam"}
    for level, stage in (("level1", 1), ("level2", 2), ("level3", 3)):
        assert plan(8e9, **common, accumulate=4, optimizer_level=level) == plan(8e9, **common, accumulate=4,
                                                                              zero=stage)
        assert _dp_halves(stage, 4) == {1: 2, 2: 5, 3: 12}[stage]
    one = plan(8e9, **common, optimizer_level="level1")
    assert one["grads"] == plan(8e9, **common, zero=2)["grads"] < plan(8e9, **common, zero=1)["grads"]


# Issue 55 item 2: what the recipes turn on, each from its source.

def test_selective_recompute_is_mindspore_transformers_select_recompute():
    llama = read_config(CONFIGS / "Llama-2-7b-hf.json")
    options = {"layers": 32, "hidden": 4096, "seq": 4096, "block": "llama", "shape": llama, "tp": 2}
    none = plan(1, **options)["activations"]
    selective = plan(1, **options, recompute="selective")["activations"]
    swiglu = 4096 * 4 * llama.intermediate // 2                # silu(gate) and gate * up, 16-bit, split by tp
    assert none - selective == 31 * swiglu, "32 layers drop it, one layer's recomputed copy exists at a time"
    assert llama_layer_units(llama) * 4096 // 2 > swiglu
    assert step_time(llama.parameters(), shape=llama, seq=4096, recompute="selective") == step_time(
        llama.parameters(), shape=llama, seq=4096), "flash attention: nothing with a product is recomputed"
    assert step_time(llama.parameters(), shape=llama, seq=4096, heads=32, recompute="selective")["seconds"][
        "recompute"] > 0, "with a score matrix the attention core is recomputed"


def test_attention_flops_as_mindspore_counts_flash_attention():
    """CalFAFlops in flops_collection.cc: forward 4·b·s1·s2·h1 for FlashAttentionScore, its gradient twice that."""
    llama = read_config(CONFIGS / "Llama-2-7b-hf.json")
    b, s = 2, 4096
    flops = step_flops(llama, seq=s, sequences=b)
    h1 = llama.heads * llama.head_dim
    assert flops["attention"] * s * b == 4 * b * s * s * h1
    assert flops["backward"] == 2 * flops["forward"]


def test_global_batch_as_mindspore_transformers_derives_it():
    assert recipes.batch_of(recipes.recipe("Llama-3.1-70B")) == {"micro_batch": 1, "micro_batches": 256,
                                                                 "global_batch": 256}     # pp 8: micro_batch_num
    assert recipes.batch_of(recipes.recipe("Qwen2-0.5B")) == {"micro_batch": 1, "micro_batches": 32,
                                                              "global_batch": 128}        # pp 1: accumulation
    assert recipes.batch_of(recipes.recipe("Llama-2-13B"))["global_batch"] == 4 * 8       # no accumulation given


def test_experts_split_by_ep_and_tp():
    common = {"dp": 4, "ep": 4, "expert_params": 80, "precision": "fp32", "optimizer": "sgd"}
    assert plan(100, **common)["params"] == (20 + 80 // 4) * 4
    assert plan(100, **common, tp=2)["params"] == (20 // 2 + 80 // 8) * 4


def test_recipe_shapes_are_the_published_models(tmp_path):
    assert recipes.mindformers_intermediate(8192, 256, 1.3) == 28672
    assert recipes.mindformers_intermediate(4096) == 11008 and recipes.mindformers_intermediate(5120) == 13824
    seven = recipes.shape_of(recipes.recipe("Llama-2-7B"))
    assert seven.parameters() == read_config(CONFIGS / "Llama-2-7b-hf.json").parameters() == 6_738_415_616
    assert recipes.shape_of(recipes.recipe("Qwen2-0.5B")).parameters() == 494_032_768
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_70B))
    seventy = recipes.shape_of(recipes.recipe("Llama-3.1-70B"))
    assert seventy.parameters() == read_config(tmp_path / "config.json").parameters() == 70_553_706_496


def test_recipes_are_pinned_to_their_sources():
    data = recipes.load()
    assert data["page"]["commit"] in data["page"]["url"] and len(data["page"]["commit"]) == 40
    names = [r["name"] for r in data["recipes"]]
    assert len(names) == len(set(names)) == 14
    for row in data["recipes"]:
        assert data["mindformers"]["commit"] in row["yaml"]["url"] and row["yaml"]["arch"] == "LlamaForCausalLM"
        assert row["published"]["config"].endswith(row["yaml"]["path"])
    assert all(row["reason"] for row in data["excluded"])


# Issue 55 items 3 and 4: calibrate once, predict the rest.

def test_one_efficiency_fitted_on_one_row():
    assert recipes.calibrate() == pytest.approx(EFFICIENCY_910B, abs=5e-4)
    seven = recipes.predict(recipes.recipe("Llama-2-7B"))
    assert seven["tokens_per_second_per_card"] == pytest.approx(4160, rel=2e-3)


def test_published_layouts_fit_their_own_device_memory():
    for row in recipes.load()["recipes"]:
        assert recipes.predict(row)["fits"], row["name"]
    # Negative control: Llama-2-13B's 8 cards with a whole gradient buffer (ZeRO-1) would not fit.
    thirteen = recipes.recipe("Llama-2-13B")
    options = {**recipes.options_of(thirteen), "dp": 8, "recompute": "full", "block": "llama"}
    assert plan(recipes.shape_of(thirteen).parameters(), zero=1, **options)["total"] > recipes.device_memory(thirteen)


def test_the_table_and_its_misses():
    rows = {r["model"]: r for r in recipes.table()}
    outside = {name for name, r in rows.items() if abs(r["error"]) > recipes.GOAL}
    assert outside == {"Qwen2-0.5B", "DeepSeek-Coder-1.5-7B"}, outside
    assert {name for name, r in rows.items() if r["rank"] > 3} == {"Llama-3-70B", "Llama-3.1-70B",
                                                                   "DeepSeek-Coder-33B", "CodeLlama-34B"}
    assert rows["DeepSeek-Coder-1.5-7B"]["implied_mfu"] < 0.1 < min(r["implied_mfu"] for n, r in rows.items()
                                                                    if n != "DeepSeek-Coder-1.5-7B")


def test_results_md_holds_the_table_this_code_computes():
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    block = text.split(recipes.BEGIN)[1].split(recipes.END)[0].strip()
    assert block == recipes.markdown(recipes.table()).strip()


# Issue 55 item 5: the reader's question, answered by the command line.

def test_cli_reports_a_published_layouts_throughput(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_3_70B))
    row = recipes.recipe("Llama-3.1-70B")
    result = run_cli("--config", str(config), "--dp", "1", "--tp", "8", "--pp", "8", "--seq", "8192",
                     "--global-batch", "256", "--recompute", "selective", "--optimizer-level", "level1",
                     "--card", "910B", "--json")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)["tokens_per_second_per_card"]
    assert got == pytest.approx(recipes.predict(row)["tokens_per_second_per_card"], rel=1e-9)
    listed = run_cli("--config", str(config), "--seq", "8192", "--global-batch", "256", "--card", "910B",
                     "--search", "--cards", "64", "--top", "3")
    assert "tokens/s per card" in listed.stdout and "days per 10^12 tokens" in listed.stdout
    assert "fitted on MindSpore Transformers' Llama-2-7B row" in listed.stdout


# Issue 53 item 16: "the first pick keeps tensor parallelism inside a node", where it could fail.

def test_first_pick_keeps_tensor_parallelism_inside_an_hccs_domain(tmp_path):
    """Llama-3-70B, 8192 tokens, 64 cards, 64 sequences a step: its 8 key/value heads allow tp 8, one 910B node's
    HCCS domain but two of a 910A node's 4-card rings. The first pick follows the domain, and tp 8 fits on both."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_70B))
    shape = read_config(tmp_path / "config.json")
    common = {"shape": shape, "layers": 80, "hidden": 8192, "seq": 8192, "vocab": 128256, "block": "llama",
              "global_batch": 64}
    on_b = search(shape.parameters(), 64, "910B", **common)
    on_a = search(shape.parameters(), 64, "910A", **common)
    assert any(f["tp"] == 8 for f in on_a), "tp 8 fits on the 910A too: the check can fail"
    assert on_a[0]["tp"] <= machine("910A").group_cards and on_b[0]["tp"] == 8
    fast_pcie = search(shape.parameters(), 64, "910A", machine=machine("910A", pcie_bandwidth=60e9), **common)
    assert fast_pcie[0]["tp"] == 8, "negative control: a link between the rings faster than HCCS, and tp crosses"
