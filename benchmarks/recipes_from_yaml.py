"""Rebuild helpers/planner/recipes.json from the two published sources it copies, at pinned commits.

Run by hand, with clones of both repositories (nothing here downloads anything):

    python benchmarks/recipes_from_yaml.py --docs PATH/TO/mindspore-ai/docs --mindformers PATH/TO/mindformers

1. MindSpore Transformers' model list, `docs/mindformers/docs/source_zh_cn/start/models.md` in mindspore-ai/docs
   (its column 训练性能（配置/硬件）: training throughput in tokens/s per card, the YAML that produced it, the
   hardware), at DOCS_COMMIT, the page's last change on branch r2.4.10 (MindSpore Transformers 1.3.2).
2. Each YAML that page links, in mindspore-lab/mindformers at MINDFORMERS_COMMIT (tag v1.3.2, the version the page
   links). The fields the planner reads are copied as the YAML writes them.

Rows are kept when the page gives tokens/s per card and the YAML builds a dense LlamaForCausalLM (the layer the
planner counts); every other row is listed under "excluded" with the reason. helpers.planner.recipes turns the
copied values into a planner layout (notebook 15, section 7). Needs PyYAML (an `ascend` extra; not needed to read
the JSON).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

import yaml

DOCS_REPO, DOCS_COMMIT = "mindspore-ai/docs", "7cd424abf3a130a696c595d538e053c6bdea3e9e"
DOCS_PATH = "docs/mindformers/docs/source_zh_cn/start/models.md"
MINDFORMERS_REPO, MINDFORMERS_TAG = "mindspore-lab/mindformers", "v1.3.2"
MINDFORMERS_COMMIT = "024279c21923e555f7366940aed9017d13256052"
GITEE_PREFIX = "https://gitee.com/mindspore/mindformers/blob/v1.3.2/"
OUT = Path(__file__).resolve().parents[1] / "helpers" / "planner" / "recipes.json"

MODEL_KEYS = ("seq_length", "hidden_size", "num_layers", "num_heads", "n_kv_heads", "vocab_size",
              "intermediate_size", "multiple_of", "ffn_dim_multiplier", "qkv_has_bias", "tie_word_embeddings",
              "use_flash_attention", "compute_dtype", "param_init_type", "fine_grain_interleave")
PARALLEL_CONFIG_KEYS = ("data_parallel", "model_parallel", "pipeline_stage", "context_parallel", "use_seq_parallel",
                        "micro_batch_num", "vocab_emb_dp", "expert_parallel")
NAMES = {"LLama2": "Llama-2", "LLama3": "Llama-3", "LLama3.1": "Llama-3.1", "Qwen2": "Qwen2", "Qwen1.5": "Qwen1.5",
         "Yi": "Yi", "DeepSeek Coder": "DeepSeek-Coder", "DeepSeek Coder1.5": "DeepSeek-Coder-1.5",
         "CodeLlama": "CodeLlama"}


def git_show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def page_rows(text: str) -> list[dict]:
    """Every training-throughput cell of the page: the model, its size and sequence cells, the figure, the link."""
    rows = []
    for body in text.split("<tbody>")[1:]:
        model = None
        for row in body.split("<tr>")[1:]:
            named = re.search(r'rowspan="\d+">\s*<a[^>]*>\s*([^<]+?)\s*</a>', row)
            model = named.group(1) if named else model
            cells = [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            sizes = [c for c in cells if re.fullmatch(r"[\d.]+B(-A[\d.]+B)?", c)]
            seqs = [c for c in cells if re.fullmatch(r"\d+K", c)]
            for cell in cells:
                figure = re.search(r"([\d.]+) tokens/s/p", cell)
                if figure:
                    link = re.search(r'href="([^"]+)"', cell)
                    rows.append({"model": model, "size": sizes[0] if sizes else None, "seq": seqs[0],
                                 "tokens_per_second_per_card": float(figure.group(1)),
                                 "hardware": cell.split("<br>")[-1].strip(), "config": link.group(1)})
    return rows


def recipe(repo: Path, row: dict) -> dict:
    path = row["config"].removeprefix(GITEE_PREFIX)
    data = yaml.safe_load(git_show(repo, MINDFORMERS_COMMIT, path))
    model = data["model"]["model_config"]
    return {"path": path,
            "url": f"https://github.com/{MINDFORMERS_REPO}/blob/{MINDFORMERS_COMMIT}/{path}",
            "arch": data["model"]["arch"]["type"],
            "moe_config": "moe_config" in data["model"]["model_config"] or "moe_config" in data,
            "model_config": {k: model[k] for k in MODEL_KEYS if k in model},
            "parallel_config": {k: data["parallel_config"][k] for k in PARALLEL_CONFIG_KEYS
                                if k in data["parallel_config"]},
            "runner_config": {k: data["runner_config"].get(k) for k in ("batch_size", "gradient_accumulation_steps")},
            "micro_batch_interleave_num": data.get("micro_batch_interleave_num", 1),
            "parallel": {k: data["parallel"].get(k)
                         for k in ("enable_parallel_optimizer", "parallel_optimizer_config")},
            "recompute_config": {k: data["recompute_config"].get(k) for k in ("recompute", "select_recompute",
                                                                              "select_comm_recompute")},
            "optimizer": data["optimizer"]["type"],
            "max_device_memory": data["context"].get("max_device_memory")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, required=True, help="a clone of mindspore-ai/docs")
    parser.add_argument("--mindformers", type=Path, required=True, help="a clone of mindspore-lab/mindformers")
    args = parser.parse_args()
    kept, excluded = [], []
    for row in page_rows(git_show(args.docs, DOCS_COMMIT, DOCS_PATH)):
        if not row["config"].startswith(GITEE_PREFIX):
            excluded.append({**row, "reason": "its link is not a YAML of MindSpore Transformers 1.3.2"})
            continue
        found = recipe(args.mindformers, row)
        name = f"{NAMES.get(row['model'], row['model'])}-{row['size']}"
        if found["arch"] != "LlamaForCausalLM":
            excluded.append({**row, "name": name, "reason": f"{found['arch']}: not the Llama-type layer the planner "
                             "counts"})
        elif found["moe_config"]:
            excluded.append({**row, "name": name, "reason": "a mixture of experts with shared experts (moe_config); "
                             "the planner counts Mixtral's routed experts only"})
        elif found["model_config"]["seq_length"] != int(row["seq"].rstrip("K")) * 1024:
            excluded.append({**row, "name": name, "reason": f"the page says {row['seq']}, the YAML trains "
                             f"{found['model_config']['seq_length']} tokens"})
        else:
            kept.append({"name": name, "published": row, "yaml": found})
    out = {"page": {"repo": DOCS_REPO, "commit": DOCS_COMMIT, "path": DOCS_PATH,
                    "url": f"https://github.com/{DOCS_REPO}/blob/{DOCS_COMMIT}/{DOCS_PATH}",
                    "column": "训练性能（配置/硬件）: tokens/s/p, the YAML, the hardware"},
           "mindformers": {"repo": MINDFORMERS_REPO, "tag": MINDFORMERS_TAG, "commit": MINDFORMERS_COMMIT},
           "recipes": kept, "excluded": excluded}
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(kept)} recipes, {len(excluded)} rows excluded")


if __name__ == "__main__":
    main()
