"""Draw the committed plots of benchmarks/RESULTS.md from the JSON-lines results.

    .venv/bin/python benchmarks/plot_results.py      # writes benchmarks/launch_cost.png, benchmarks/scaling.png
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PHASES = ("spawn", "import", "init", "step1", "steps", "exit")


def load(name: str) -> list[dict]:
    path = HERE / "results" / name
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def launch_plot(records: list[dict], batch: str) -> None:
    """Phases of one batch of launch-cost runs, per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(dict.fromkeys(r["variant"] for r in records))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i, v in enumerate(variants):
        ok = [r for r in records if r["variant"] == v and r["ok"]]
        left = 0.0
        for j, phase in enumerate(PHASES):
            width = statistics.median(r[phase] for r in ok)
            ax.barh(i, width, left=left, color=f"C{j}", label=phase if i == 0 else None)
            left += width
        ax.text(left + 0.3, i, f"{statistics.median(r['wall'] for r in ok):.1f} s (n={len(ok)})", va="center")
    ax.set_yticks(range(len(variants)), variants)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (median per phase; wall-time median at the right)")
    ax.set_title(f"Minimal 2-worker MindSpore job, batch {batch}: where the wall time goes", fontsize=9)
    ax.legend(ncol=6, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    fig.savefig(HERE / "launch_cost.png", dpi=80)


def scaling_plot(records: list[dict], tag: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if r.get("ok") and r.get("tag", "") == tag]
    keys = sorted({(r["framework"], r.get("tag", ""), r["net"]) for r in ok}, key=lambda k: (k[2], k[0]))
    labels, effs = [], []
    for key in keys:
        by_round = {}
        for r in ok:
            if (r["framework"], r.get("tag", ""), r["net"]) == key:
                by_round.setdefault(r["round"], {})[r["workers"]] = r["samples_per_s"]
        pairs = [p for p in by_round.values() if 1 in p and 2 in p]
        if pairs:
            labels.append(f"{key[2]}\n{key[0]}")
            effs.append(statistics.median(p[2] / (2 * p[1]) for p in pairs))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(range(len(labels)), effs, color=["C0" if "mindspore" in x else "C1" for x in labels])
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.axhline(0.9, color="C3", lw=0.8, ls=":")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("scaling efficiency at 2 workers")
    rounds = len({r["round"] for r in ok})
    ax.set_title(f"aggregate(2) / (2 x aggregate(1)), tag '{tag}', median of {rounds} rounds; "
                 "dotted: the 0.90 target", fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "scaling.png", dpi=80)


def main() -> int:
    launch = load("launch_cost_H.jsonl")   # batch H: the committed launcher against bare msrun, quiet machine
    if launch:
        launch_plot(launch, "H")
    scaling = load("scaling.jsonl")
    if scaling:
        scaling_plot(scaling, "quiet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
