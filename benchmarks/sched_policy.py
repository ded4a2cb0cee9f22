"""Wall time of notebook 04's training on CPU, the launcher as committed (every process SCHED_BATCH)
against the same launcher without its `chrt --batch` line (the default policy), interleaved.

    .venv/bin/python benchmarks/sched_policy.py --rounds 3 --workers 8,2 --out benchmarks/results/sched_policy.jsonl

Each round runs, in turn, both launchers at each worker count with notebook 04's scripts/train.py (taken
from the notebook's %%writefile cell, its default arguments). One JSON line per run goes to --out: wall
seconds, the exit code, the ranks that died of SIGSEGV (as the launcher reports them), the weights sha
rank 0 printed, the load average.
The summary prints medians over rounds and batch/default per round.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers.joblog import failed_ranks  # noqa: E402  (the launcher's own report of which rank died how)

CHRT_LINE = re.compile(r"^\s*command -v chrt .*chrt --batch.*\n", re.M)


def default_policy_launcher(folder: Path) -> Path:
    """helpers/launch.sh without the line that switches the job to SCHED_BATCH."""
    text = (ROOT / "helpers" / "launch.sh").read_text()
    stripped, found = CHRT_LINE.subn("", text)
    assert found == 1, "launch.sh no longer has exactly one `chrt --batch` line"
    path = folder / "launch_default_policy.sh"
    path.write_text(stripped)
    return path


def run(launcher: Path, workers: int, script: Path, run_dir: Path) -> dict:
    env = dict(os.environ, TUTORIAL_PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(["bash", str(launcher), "--workers", str(workers), "--device", "CPU",
                           "--log-dir", str(run_dir), str(script)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    sha = re.search(r"\[rank 0\] done: .*weights sha\w* (\w+)", done.stdout + done.stderr)
    segv = [rank for rank, why in failed_ranks(run_dir).items() if "signal 11" in why]
    return {"wall_s": round(wall, 2), "rc": done.returncode, "segv": segv, "sha": sha and sha.group(1),
            "load1": os.getloadavg()[0]}


def summary(records: list[dict]) -> None:
    print("| workers | policy | runs ok | median wall s | batch / default per round |")
    print("|---|---|---|---|---|")
    for workers in sorted({r["workers"] for r in records}, reverse=True):
        mine = [r for r in records if r["workers"] == workers]
        by_round = {}
        for r in mine:
            by_round.setdefault(r["round"], {})[r["policy"]] = r["wall_s"]
        ratios = [round(p["batch"] / p["default"], 2) for p in by_round.values() if len(p) == 2]
        for policy in ("default", "batch"):
            runs = [r for r in mine if r["policy"] == policy]
            ok = sum(r["rc"] == 0 for r in runs)
            print(f"| {workers} | {policy} | {ok}/{len(runs)} | {statistics.median(r['wall_s'] for r in runs):.1f} "
                  f"| {', '.join(map(str, ratios)) if policy == 'batch' else ''} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="8,2")
    parser.add_argument("--out", default="benchmarks/results/sched_policy.jsonl")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.summary:
        from helpers.scripts import write_script

        with tempfile.TemporaryDirectory(prefix="sched-policy-") as tmp:
            tmp = Path(tmp)
            script = write_script("04_network_and_training.ipynb", "scripts/train.py", tmp / "scripts")
            launchers = {"default": default_policy_launcher(tmp), "batch": ROOT / "helpers" / "launch.sh"}
            for round_no in range(1, args.rounds + 1):
                for workers in map(int, args.workers.split(",")):
                    for policy, launcher in launchers.items():
                        record = {"round": round_no, "workers": workers, "policy": policy,
                                  **run(launcher, workers, script, tmp / f"{policy}-{workers}-r{round_no}")}
                        line = json.dumps(record)
                        print(line, flush=True)
                        with out.open("a") as f:
                            f.write(line + "\n")
    summary([json.loads(line) for line in out.read_text().splitlines()])


if __name__ == "__main__":
    main()
