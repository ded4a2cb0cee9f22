"""A small plain-MindSpore job for the launcher's tests: every rank records its launch variables,
then runs STEPS steps of a real AllReduce, one metrics line per step, and can inject a fault.

    python tests/step_job.py [--steps N] [--sleep S] [--print-every N]
                             [--fault raise|kill|hang --fault-rank R --fault-step K] [ARGS...]
"""

import argparse
import json
import os
import signal
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step")
parser.add_argument("--print-every", type=int, default=1, help="rank 0 prints every N-th step (a quiet job: many)")
parser.add_argument("--fault", choices=("raise", "kill", "hang"))
parser.add_argument("--fault-rank", type=int, default=0)
parser.add_argument("--fault-step", type=int, default=1)
args, extra = parser.parse_known_args()
launch_vars = {k: v for k, v in os.environ.items() if k.startswith(("MS_", "RANK_")) or k == "DEVICE_ID"}

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import ops  # noqa: E402
from mindspore.communication import get_group_size, get_rank, init  # noqa: E402

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()
rank, world = get_rank(), get_group_size()
out = Path(os.environ.get("TUTORIAL_RUN_DIR", ".")) / f"rank_{rank}"
out.mkdir(parents=True, exist_ok=True)
(out / "launch.json").write_text(json.dumps({"env": launch_vars, "argv": extra, "rank": rank, "world": world,
                                             "cpu_affinity": sorted(os.sched_getaffinity(0)),
                                             "sched_batch": os.sched_getscheduler(0) == os.SCHED_BATCH}))
allreduce = ops.AllReduce()
for step in range(1, args.steps + 1):
    total = float(allreduce(ms.Tensor(np.ones(4, np.float32))).asnumpy()[0])
    with (out / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"kind": "step", "step": step, "loss": 1.0 / step, "sum": total}) + "\n")
    if rank == 0 and (step == 1 or step % args.print_every == 0):
        print(f"[rank 0] step {step} AllReduce sum {total:g}", flush=True)
    if args.fault and rank == args.fault_rank and step == args.fault_step:
        print(f"[rank {rank}] injecting fault '{args.fault}' after step {step}", flush=True)
        if args.fault == "raise":
            raise RuntimeError(f"injected fault on rank {rank} after step {step}")
        if args.fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(3600)
    time.sleep(args.sleep)
allreduce(ms.Tensor(np.ones(1, np.float32)))  # a last small collective: no rank leaves a peer waiting
print(f"[rank {rank}] done", flush=True)
