"""The planner against MindSpore Transformers' published training throughput (notebook 15, section 7;
benchmarks/RESULTS.md, section 15).

recipes.json holds, copied by benchmarks/recipes_from_yaml.py at pinned commits, each row of MindSpore Transformers'
model list that gives tokens/s per card for a dense Llama-type model, with the values of the YAML that produced it.
This module turns those values into the planner's terms, each as MindSpore Transformers 1.3.2 reads them:

- the model: hidden_size, num_layers, num_heads, n_kv_heads, vocab_size, qkv_has_bias, tie_word_embeddings, and
  intermediate_size, or when a YAML gives none, LlamaFeedForward's own rule from 4·hidden_size, ffn_dim_multiplier
  and multiple_of (models/llama/llama_layer.py, FeedForward.__init__; llama_transformer.py passes 4·hidden_size);
- the batch: with full_batch (every YAML here), batch_size × data_parallel × micro_batch_num sequences a step when
  pipeline_stage > 1 (gradient_accumulation_steps "will not take effect"), batch_size × data_parallel ×
  gradient_accumulation_steps without a pipeline (micro_batch_num unused), times micro_batch_interleave_num
  (trainer/base_trainer.py, _check_global_batch_size_for_auto_parallel); M, the planner's micro-batches per
  data-parallel rank, is micro_batch_num or gradient_accumulation_steps;
- recompute: "full" when recompute_config.recompute is on for any layer, "selective" when select_recompute is (the
  planner gives every layer the same mode; a per-stage list such as [10, 8, 6, 4, 2, 0, 0, 0] is read as on);
- the optimizer sharding: enable_parallel_optimizer is MindSpore's parallel optimizer at its default level,
  level1 in MindSpore 2.10 (no YAML here sets optimizer_level); off, nothing is sharded;
- flash attention (use_flash_attention, on in every YAML): no --heads, so no score matrix is planned;
- sequence parallelism: use_seq_parallel (irrelevant at model_parallel 1).

calibrate() fits the one efficiency (helpers.planner.machine.EFFICIENCY_910B) on the Llama-2-7B row; table()
predicts every row with it and ranks each published layout in the planner's search at the recipe's own sequence
length and batch.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from helpers.hf_config import ModelShape
from helpers.planner.flops import step_flops
from helpers.planner.machine import Machine, machine
from helpers.planner.memory import plan
from helpers.planner.search import distinct_layouts, layout_rank, search
from helpers.planner.timing import step_time

RECIPES_JSON = Path(__file__).with_name("recipes.json")
CALIBRATION = "Llama-2-7B"      # the row the efficiency is fitted on: data parallel on one node, no recompute
GOAL = 0.25                     # issue 55: every dense row within ±25% of its published throughput


@lru_cache(maxsize=1)
def load() -> dict:
    """recipes.json: {"page", "mindformers", "recipes": [{"name", "published", "yaml"}], "excluded"}."""
    return json.loads(RECIPES_JSON.read_text(encoding="utf-8"))


def recipe(name: str) -> dict:
    for row in load()["recipes"]:
        if row["name"] == name:
            return row
    raise KeyError(f"no recipe {name!r} (choose from {', '.join(r['name'] for r in load()['recipes'])})")


def mindformers_intermediate(hidden: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """The SwiGLU width LlamaFeedForward builds when a YAML gives no intermediate_size (module docstring)."""
    width = 4 * hidden
    if ffn_dim_multiplier is not None:
        width = int((ffn_dim_multiplier + 0.01) * width)
    width = int(2 * width / 3)
    return multiple_of * ((width + multiple_of - 1) // multiple_of)


def shape_of(row: dict) -> ModelShape:
    """The model a recipe's YAML builds, as the planner's ModelShape."""
    m = row["yaml"]["model_config"]
    hidden, heads = m["hidden_size"], m["num_heads"]
    width = m.get("intermediate_size") or mindformers_intermediate(hidden, m.get("multiple_of", 256),
                                                                   m.get("ffn_dim_multiplier"))
    return ModelShape(model_type="llama", vocab=m["vocab_size"], hidden=hidden, layers=m["num_layers"], heads=heads,
                      kv_heads=m.get("n_kv_heads") or heads, head_dim=hidden // heads, intermediate=width,
                      qkv_bias=bool(m.get("qkv_has_bias")), tied_embeddings=bool(m.get("tie_word_embeddings")))


def batch_of(row: dict) -> dict:
    """{"micro_batch", "micro_batches" (M), "global_batch"} as MindSpore Transformers derives them."""
    y = row["yaml"]
    par, run = y["parallel_config"], y["runner_config"]
    steps = run.get("gradient_accumulation_steps") or 1
    m = par.get("micro_batch_num", 1) if par["pipeline_stage"] > 1 else steps
    m *= y.get("micro_batch_interleave_num", 1)
    return {"micro_batch": run["batch_size"], "micro_batches": m,
            "global_batch": run["batch_size"] * par["data_parallel"] * m}


def recompute_of(row: dict) -> str:
    r = row["yaml"]["recompute_config"]

    def on(value):
        return bool(value) if not isinstance(value, list) else any(on(v) for v in value)

    return "full" if on(r.get("recompute")) else "selective" if on(r.get("select_recompute")) else "none"


def optimizer_level_of(row: dict) -> str | None:
    return "level1" if row["yaml"]["parallel"].get("enable_parallel_optimizer") else None


def layout_of(row: dict) -> dict:
    par = row["yaml"]["parallel_config"]
    return {"dp": par["data_parallel"], "tp": par["model_parallel"], "pp": par["pipeline_stage"], "ep": 1}


def options_of(row: dict) -> dict:
    """The planner's arguments (plan, step_time, search) shared by a recipe's layout and its search."""
    shape = shape_of(row)
    return {"precision": "bf16-mixed", "layers": shape.layers, "hidden": shape.hidden, "vocab": shape.vocab,
            "seq": row["yaml"]["model_config"]["seq_length"], "shape": shape,
            "micro_batch": batch_of(row)["micro_batch"]}


def predict(row: dict, hw: Machine | None = None) -> dict:
    """step_time of the recipe on its own layout, with plan()'s "memory_bytes" beside it and whether they "fit" in
    the recipe's own max_device_memory ("device_memory", bytes)."""
    hw = hw or machine("910B")
    lay, shape, batch = layout_of(row), shape_of(row), batch_of(row)
    use_sp = bool(row["yaml"]["parallel_config"].get("use_seq_parallel")) or lay["tp"] == 1
    common = {**options_of(row), "dp": lay["dp"], "tp": lay["tp"], "pp": lay["pp"],
              "accumulate": batch["micro_batches"], "recompute": recompute_of(row),
              "optimizer_level": optimizer_level_of(row), "sequence_parallel": use_sp}
    time = step_time(shape.parameters(), machine=hw, **common)
    memory = plan(shape.parameters(), optimizer="adam", block="llama", **common)
    return {**time, "memory_bytes": memory["total"], "device_memory": device_memory(row),
            "fits": memory["total"] <= device_memory(row)}


def device_memory(row: dict) -> float:
    """The recipe's `max_device_memory` in bytes ("59GB": MindSpore counts a GB as 2^30 bytes, as context.py's
    neighbouring variable_memory_max_size writes it, "* 1024 * 1024 * 1024")."""
    return float(row["yaml"]["max_device_memory"].removesuffix("GB")) * 2**30


def calibrate(name: str = CALIBRATION, hw: Machine | None = None) -> float:
    """The efficiency with which the planner reproduces row `name`'s published tokens/s per card. A step's time is
    a/efficiency + b (compute scales with 1/efficiency, links do not), so two evaluations solve it exactly."""
    from dataclasses import replace

    hw = hw or machine("910B")
    row = recipe(name)
    one, half = (predict(row, replace(hw, efficiency=e))["step_seconds"] for e in (1.0, 0.5))
    a, b = half - one, 2 * one - half
    tokens = predict(row, hw)["tokens"]
    cards = layout_of(row)["dp"] * layout_of(row)["tp"] * layout_of(row)["pp"]
    wanted = tokens / (row["published"]["tokens_per_second_per_card"] * cards)
    return a / (wanted - b)


def implied_mfu(row: dict, hw: Machine | None = None) -> float:
    """The model FLOPs per second per card the published figure implies, as a share of the card's peak."""
    hw = hw or machine("910B")
    time = predict(row, hw)
    return row["published"]["tokens_per_second_per_card"] * time["flops"] / time["tokens"] / hw.peak_flops


def attention_share(row: dict) -> float:
    """The share of a recipe's model FLOPs spent on the attention scores (helpers.planner.flops: 4·s·q per token and
    layer, forward), the rest being the projections, the MLP and the output layer."""
    shape = shape_of(row)
    flops = step_flops(shape, seq=row["yaml"]["model_config"]["seq_length"])
    return shape.layers * flops["attention"] / (shape.layers * flops["layer"] + flops["output"])


def rank_in_search(row: dict, hw: Machine | None = None) -> dict:
    """Where the published layout falls among the distinct layouts the planner's search finds for the recipe's
    cards, sequence length and global batch: {"rank" (None: it does not fit), "of", "first"}."""
    hw = hw or machine("910B")
    lay, shape = layout_of(row), shape_of(row)
    cards = lay["dp"] * lay["tp"] * lay["pp"]
    found = search(shape.parameters(), cards, "910B", global_batch=batch_of(row)["global_batch"], machine=hw,
                   optimizer="adam", block="llama", **options_of(row))
    first = found[0] if found else None
    return {"rank": layout_rank(found, lay), "of": distinct_layouts(found), "first": first}


def name_of(layout: dict) -> str:
    return f"{layout['dp']}x{layout['tp']}x{layout['pp']}" + (f"x ep{layout['ep']}" if layout.get("ep", 1) > 1 else "")


def table(hw: Machine | None = None, ranks: bool = True) -> list[dict]:
    """One row per recipe: published against predicted, the error, and (ranks=True) the published layout's place in
    the planner's search. Every figure comes from recipes.json and the planner."""
    hw = hw or machine("910B")
    rows = []
    for row in load()["recipes"]:
        lay, batch = layout_of(row), batch_of(row)
        time = predict(row, hw)
        published = row["published"]["tokens_per_second_per_card"]
        out = {"model": row["name"], "cards": lay["dp"] * lay["tp"] * lay["pp"], "layout": name_of(lay),
               "seq": row["yaml"]["model_config"]["seq_length"], "global_batch": batch["global_batch"],
               "recompute": recompute_of(row), "hardware": row["published"]["hardware"], "published": published,
               "predicted": time["tokens_per_second_per_card"],
               "error": time["tokens_per_second_per_card"] / published - 1, "implied_mfu": implied_mfu(row, hw),
               "fits": time["fits"], "calibration": row["name"] == CALIBRATION}
        if ranks:
            place = rank_in_search(row, hw)
            out.update(rank=place["rank"], of=place["of"],
                       first=name_of(place["first"]) if place["first"] else None)
        rows.append(out)
    return rows


def markdown(rows: list[dict], hw: Machine | None = None) -> str:
    """The table as benchmarks/RESULTS.md prints it."""
    hw = hw or machine("910B")
    page = load()["page"]
    lines = ["| model | cards | layout dp×tp×pp | seq | global batch | recompute | published tokens/s/card | "
             "predicted | error | published layout's rank in --search | planner's first |",
             "|---|---:|---|---:|---:|---|---:|---:|---:|---|---|"]
    for r in rows:
        mark = " (calibration)" if r["calibration"] else ""
        rank = f"{r['rank']} of {r['of']}" if r.get("rank") else "does not fit"
        error = round(r["error"], 2) + 0           # + 0: the calibration row prints +0%, not -0%
        lines.append(f"| {r['model']}{mark} | {r['cards']} | {r['layout']} | {r['seq']} | {r['global_batch']} | "
                     f"{r['recompute']} | {r['published']:.0f} | {r['predicted']:.0f} | {error:+.0%} | "
                     f"{rank} | {r.get('first') or '-'} |")
    lines.append("")
    lines.append(f"Published: {page['url']} ({page['column']}); YAMLs: mindspore-lab/mindformers at "
                 f"{load()['mindformers']['commit']} (tag {load()['mindformers']['tag']}). One efficiency, "
                 f"{hw.efficiency:.4g} of {hw.peak_flops / 1e12:.0f} TFLOP/s, fitted on {CALIBRATION}.")
    return "\n".join(lines)


BEGIN, END = "<!-- planner-recipes:begin -->", "<!-- planner-recipes:end -->"


def write(path: Path) -> None:
    """Put markdown(table()) between the BEGIN and END markers of `path` (benchmarks/RESULTS.md, section 15)."""
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    path.write_text(f"{head}{BEGIN}\n{markdown(table())}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":      # python -m helpers.planner.recipes [--write benchmarks/RESULTS.md]
    import sys

    if sys.argv[1:2] == ["--write"]:
        write(Path(sys.argv[2]))
    else:
        print(markdown(table()))
