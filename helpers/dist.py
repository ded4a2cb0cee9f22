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
