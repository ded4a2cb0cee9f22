"""A communication check every rank runs: `python -m helpers.comm_check`. Introduced in notebook 01.

Each rank reports who it is (rank id, group size, device, process) and takes part in three real
collectives: AllReduce (sum of rank+1 over all ranks), AllGather (everyone's rank id, in rank
order) and Broadcast (rank 0's value reaches all). The record goes to OUT/rank_<k>/comm.json.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from helpers.device import detect_device
from helpers.dist import barrier, setup_distributed

RUN_DIR_ENV = "TUTORIAL_RUN_DIR"


def main() -> int:
    device = detect_device()
    rank, world = setup_distributed(device)

    import mindspore as ms
    import numpy as np
    from mindspore import ops

    summed = ops.AllReduce()(ms.Tensor(np.full(4, rank + 1, np.float32))).asnumpy()
    gathered = ops.AllGather()(ms.Tensor(np.array([[float(rank)]], np.float32))).asnumpy()
    broadcast = ops.Broadcast(0)((ms.Tensor(np.full(2, 100.0 + rank, np.float32)),))[0].asnumpy()
    record = {
        "rank": rank, "group_size": world, "device": device, "host": socket.gethostname(), "pid": os.getpid(),
        "RANK_ID": os.environ.get("RANK_ID"), "DEVICE_ID": os.environ.get("DEVICE_ID"),
        "MS_ROLE": os.environ.get("MS_ROLE"),
        "allreduce_sum": float(summed[0]), "allgather": gathered.ravel().astype(int).tolist(),
        "broadcast_from_0": float(broadcast[0]),
    }
    out = Path(os.environ.get(RUN_DIR_ENV, "runs/manual")) / f"rank_{rank}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "comm.json").write_text(json.dumps(record), encoding="utf-8")
    print(f"[rank {rank}] group size {world} on {device}: AllReduce(rank+1) = {record['allreduce_sum']:g}, "
          f"AllGather(rank) = {record['allgather']}, Broadcast(0) = {record['broadcast_from_0']:g}", flush=True)
    barrier()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
