"""Why notebook 15's collective timings can land on multiples of 4 ms: the launcher's SCHED_BATCH beside a busy core.

The launcher runs every CPU job under SCHED_BATCH (benchmarks/RESULTS.md, section 6). A woken SCHED_BATCH thread does
not preempt the task running on its core; it waits for the scheduler's tick (1 / CONFIG_HZ: 4 ms on this machine's
kernel). So while another process keeps a core busy, a rank waiting for a message gets it up to a tick late. This
measures an all-reduce over sizes at 2 ranks through helpers.launch, each of four ways, interleaved per round:
quiet or with a busy loop pinned to every core, and the ranks as launched (SCHED_BATCH) or switched back to the
default policy (SCHED_OTHER, every thread the rank starts inherits it).

    .venv/bin/python benchmarks/sched_tick.py --rounds 2 --out benchmarks/results/sched_tick.jsonl
    .venv/bin/python benchmarks/sched_tick.py --report benchmarks/results/sched_tick.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (256, 1024, 16384, 262144, 1048576)   # float32 elements: 1 KB to 4 MB

WORKER = '''
import json, os, time
if os.environ.get("SCHED_TICK_OTHER"):            # before MindSpore starts its threads: they inherit it
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
import numpy as np
import mindspore as ms
from mindspore import Tensor
from mindspore.communication import init
from mindspore.mint import distributed as dist

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.runtime.launch_blocking()
ms.set_device("CPU")
init()
out = {"policy": os.sched_getscheduler(0), "ms": {}}
for size in SIZES:
    x = Tensor(np.ones(size, np.float32))
    for _ in range(3):
        dist.all_reduce(x)
    times = []
    for _ in range(15):
        began = time.perf_counter()
        dist.all_reduce(x)
        times.append((time.perf_counter() - began) * 1e3)
    out["ms"][str(size)] = times
dist.barrier()
path = os.path.join(os.environ["TUTORIAL_RUN_DIR"], f"rank_{dist.get_rank()}.json")
open(path, "w").write(json.dumps(out))
'''


@contextmanager
def busy_cores(on: bool = True):
    """A busy loop pinned to each core this process may use, for the duration (nothing when `on` is false);
    benchmarks/nb15_repeat.py --busy uses it too."""
    loops = [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", "while True: pass"])
             for c in sorted(os.sched_getaffinity(0))] if on else []
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()


def run(busy: bool, other: bool) -> dict:
    from helpers import launch

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder, "sweep.py")
        script.write_text(f"SIZES = {SIZES}\n" + WORKER)
        with busy_cores(busy):
            job = launch(script, workers=2, name="sched-tick", quiet=True,
                         env={"SCHED_TICK_OTHER": "1"} if other else {}).check()
        rank0 = json.loads((job.run_dir / "rank_0.json").read_text())
    return {"busy_loop": busy, "policy": "SCHED_OTHER" if other else "SCHED_BATCH",
            "checked_policy": rank0["policy"], "ms": rank0["ms"]}


def report(path: Path) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    label = {s: f"{4 * s // 1024} KB" if 4 * s < 1 << 20 else f"{4 * s >> 20} MB" for s in SIZES}
    print("| machine | ranks' policy | " + " | ".join(label[s] for s in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    for busy in (False, True):
        for policy in ("SCHED_BATCH", "SCHED_OTHER"):
            runs = [r for r in lines if r["busy_loop"] == busy and r["policy"] == policy]
            if not runs:
                continue
            cells = []
            for s in SIZES:
                times = [t for r in runs for t in r["ms"][str(s)]]
                cells.append(f"{statistics.median(times):.2f} ({min(times):.2f}..{max(times):.2f})")
            print(f"| {'busy loop on each core' if busy else 'no busy loop'} | {policy} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sched_tick.jsonl")
    parser.add_argument("--report", type=Path, help="print the table of a results file, run nothing")
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return 0
    for round_ in range(args.rounds):
        for busy in (False, True):
            for other in (False, True):
                line = {**run(busy, other), "round": round_, "load": os.getloadavg()[0]}
                with args.out.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                print(f"round {round_}, busy {busy}, {line['policy']}: 1 KB median "
                      f"{statistics.median(line['ms'][str(SIZES[0])]):.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
