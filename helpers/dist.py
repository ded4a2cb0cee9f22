"""Starting and ending a distributed worker. Introduced in notebook 01.

Used by every worker entry point (helpers.train, helpers.comm_check, ...). MindSpore is imported
inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import os


def setup_distributed(device: str) -> tuple[int, int]:
    """The article's step 1 in 2.10 form: graph mode, the device, then `init()`; returns (rank, world).

    `ms.set_device` replaces `set_context(device_target=...)`, which now warns it will be removed.
    Under msrun the scheduler process runs this too, and its `init()` never returns: it serves
    the cluster and exits, so callers must do nothing with side effects before this call.
    """
    import mindspore as ms
    from mindspore.communication import get_group_size, get_rank, init

    ms.set_context(mode=ms.GRAPH_MODE)
    if device == "Ascend" and "DEVICE_ID" in os.environ:
        ms.set_device(device, int(os.environ["DEVICE_ID"]))  # rank-table startup names the card
    else:
        ms.set_device(device)
    init()  # HCCL on Ascend, mccl on CPU
    return get_rank(), get_group_size()


def barrier() -> None:
    """A tiny AllReduce, so no rank exits while a peer still waits in a large one (DESIGN.md §5)."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    ops.AllReduce()(ms.Tensor(np.ones(1, np.float32))).asnumpy()


def pin_to_core(core: int) -> int:
    """Pin every thread of this process (and so every thread it starts later) to one CPU core; returns it."""
    tids = [int(t) for t in os.listdir("/proc/self/task")] if os.path.isdir("/proc/self/task") else [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, {core})
        except OSError:  # a thread that has just exited
            pass
    return core


def one_core_per_rank(rank: int, device: str, pin: str = "auto", threads: int = 0) -> tuple[int | None, int]:
    """The CPU setting that scales best (benchmarks/RESULTS.md §2; notebook 04): each rank pinned to one
    core, round robin over the cores this process may use, with `threads` MindSpore kernel threads
    (0: one when pinned). `pin` is auto (on CPU), yes or no. Call it after `init()`: pinning earlier
    slows cluster formation. Returns (the core or None, the thread count or 0 for MindSpore's default).
    """
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    core = None
    if cores and (pin == "yes" or (pin == "auto" and device == "CPU")):
        core = pin_to_core(cores[rank % len(cores)])
    threads = threads or (1 if core is not None else 0)
    if threads and device == "CPU":
        import mindspore as ms

        # MindSpore starts 25 CPU kernel threads by default: on one pinned core they only fight.
        ms.device_context.cpu.op_tuning.threads_num(threads)
    return core, threads
