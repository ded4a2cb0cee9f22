"""Notebook 15 run again and again: does every timing-dependent check hold, and with what margin?

Each run executes the notebook top to bottom in a fresh kernel (nbclient, as `make book` does), then one more cell
that prints the figures its checks compared, as JSON. One JSON line per run goes to --out; --report prints the
table benchmarks/RESULTS.md shows (section 15), with each check's margin: the factor by which its measured value
would have to change for the check to fail (inf: nothing measured could make it fail).

    .venv/bin/python benchmarks/nb15_repeat.py --runs 20 --workers 2 --out benchmarks/results/nb15_repeat.jsonl
    .venv/bin/python benchmarks/nb15_repeat.py --runs 10 --workers 8 --language zh --out ...
    .venv/bin/python benchmarks/nb15_repeat.py --runs 3 --workers 2 --busy --out ...   # a busy loop on each core
    .venv/bin/python benchmarks/nb15_repeat.py --report benchmarks/results/nb15_repeat.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from sched_tick import busy_cores  # a sibling script: benchmarks/ is on the path when run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = {"en": ROOT / "notebooks" / "15_speed.ipynb", "zh": ROOT / "notebooks" / "zh_CN" / "15_speed.ipynb"}

# What the notebook's checks compared, read from its variables after the last cell.
FIGURES = """
import json as _json
_out = {"mfu": MFU, "tp_ratio": statistics.median(ratios) if ratios else None,
        "planner_ratio": median_ratio, "hidden": statistics.median(HIDDEN) if HIDDEN else None,
        "fits": {op: {k: f[k] for k in ("alpha", "beta", "error", "left_out")} for op, f in FITS.items()},
        "tick": TICK}
if PIPELINE:
    _out.update(idle={str(m): IDLE[m] for m in MICRO}, bubble={str(m): BUBBLE[m] for m in MICRO},
                model={str(m): MODEL[m] for m in MICRO},
                tolerance=TOLERANCE, busy={f"{m},{r}": v for (m, r), v in BUSY.items()},
                outside={f"{m},{r}": v for (m, r), v in ELSEWHERE.items()})
print("FIGURES " + _json.dumps(_out))
"""


def run_once(notebook: Path, workers: int) -> dict:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(FIGURES))
    os.environ["TUTORIAL_WORKERS"] = str(workers)
    began = time.time()
    # Every cell runs even after a failed check (allow_errors), so a failed run still reports what it measured.
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    errors = [f"cell {i}: {o['ename']}: {o['evalue']}"[:300] for i, cell in enumerate(nb.cells)
              if cell.cell_type == "code" for o in cell.outputs if o.get("output_type") == "error"]
    line = {"notebook": notebook.relative_to(ROOT).as_posix(), "workers": workers, "error": "; ".join(errors) or None,
            "seconds": round(time.time() - began, 1), "load": os.getloadavg()[0]}
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    if text.startswith("FIGURES "):
        line.update(json.loads(text[len("FIGURES "):]))
    return line


def margins(line: dict) -> dict:
    """Each check's margin: the factor its measured value must change by to fail."""
    def band(x, low, high):    # low < x < high
        return min(high / x, x / low) if x and x > 0 else float("nan")

    out = {"MFU < 1": 1 / line["mfu"], "planner 1/3..3": band(line["planner_ratio"], 1 / 3, 3)}
    if line.get("hidden") is not None:     # hidden share < 1.5; it is near zero or below on CPU
        out["overlap: hidden < 150%"] = 1.5 / line["hidden"] if line["hidden"] > 0 else math.inf
    if line.get("tp_ratio"):
        out["trace/counter 1/2.5..2.5"] = band(line["tp_ratio"], 1 / 2.5, 2.5)
    if "idle" in line:
        for m, idle in line["idle"].items():
            gap = abs(idle - line["model"][m])
            out[f"bubble M={m} ±{line['tolerance']:.0%}"] = line["tolerance"] / gap if gap else math.inf
        worst = max(line["busy"].values())
        out["waits in gaps (≤1%)"] = 0.01 / worst if worst else math.inf
        out["control: operators outside the waits > 5%"] = min(line["outside"].values()) / 0.05
        idles = list(line["idle"].values())
        out["idle falls with M"] = idles[0] / idles[-1]
    return out


def report(path: Path) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    groups: dict[tuple, list] = {}
    for line in lines:
        groups.setdefault((line["notebook"], line["workers"], line.get("busy_loop", False)), []).append(line)
    for (notebook, workers, busy), runs in groups.items():
        ok = [r for r in runs if not r["error"]]
        print(f"\n### {notebook}, {workers} ranks{', busy loop on each core' if busy else ''}: "
              f"{len(ok)} of {len(runs)} runs passed; {statistics.median(r['seconds'] for r in runs):.0f} s median")
        for r in runs:
            if r["error"]:
                print(f"- failed: {r['error']}")
        with_figures = [r for r in runs if "mfu" in r]
        if not with_figures:
            continue
        names = list(margins(with_figures[0]))
        print("\n| check | smallest margin | median margin |\n|---|---|---|")
        for name in names:
            values = [margins(r)[name] for r in with_figures if name in margins(r)]
            print(f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} |")
        print("\n| run | load | trace/counter | idle M=1 / M=4 (1F1B model) | operators in waits "
              "| operators outside them | all-reduce α ms, β MB/s | points on the tick | planner |\n"
              "|---|---|---|---|---|---|---|---|---|")
        for i, r in enumerate(with_figures, 1):
            ar = r["fits"].get("all_reduce", {})
            idle = " / ".join(f"{v:.0%} ({r['model'][m]:.0%})" for m, v in r.get("idle", {}).items()) or "-"
            ticked = sum(f["left_out"] for f in r["fits"].values())
            busy = f"{max(r['busy'].values()):.2%}" if "busy" in r else "-"
            outside = f"{min(r['outside'].values()):.0%}" if "outside" in r else "-"
            tp = f"{r['tp_ratio']:.2f}" if r.get("tp_ratio") else "-"
            alpha = f"{ar['alpha'] * 1e3:.2f}, {ar['beta'] / 1e6:.0f}" if ar else "-"
            print(f"| {i} | {r['load']:.1f} | {tp} | {idle} | {busy} | {outside} | {alpha} | {ticked} | "
                  f"{r['planner_ratio']:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--language", choices=sorted(NOTEBOOK), default="en")
    parser.add_argument("--busy", action="store_true", help="a busy loop pinned to each core during every run")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "nb15_repeat.jsonl")
    parser.add_argument("--report", type=Path, help="print the tables of a results file, run nothing")
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return 0
    with busy_cores(args.busy):   # sched_tick.py's busy loops, one per core
        for i in range(args.runs):
            line = {**run_once(NOTEBOOK[args.language], args.workers), "busy_loop": args.busy}
            with args.out.open("a") as f:
                f.write(json.dumps(line) + "\n")
            print(f"run {i + 1}/{args.runs}: {'ok' if not line['error'] else line['error']} "
                  f"({line['seconds']:.0f} s, load {line['load']:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
