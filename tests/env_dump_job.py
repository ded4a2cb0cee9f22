"""A job for tests/test_multinode.py: each worker records the launch variables it was given, then joins
the cluster and AllReduces."""

import json
import os

from helpers.dist import barrier, setup_distributed

keys = sorted(k for k in os.environ if k.startswith(("MS_", "RANK_")) or k == "DEVICE_ID")
record = {k: os.environ[k] for k in keys}
rank, world = setup_distributed("CPU")

import mindspore as ms  # noqa: E402  (after init: the scheduler never gets here)
import numpy as np  # noqa: E402
from mindspore import ops  # noqa: E402

record.update(rank=rank, world=world, sum=float(ops.AllReduce()(ms.Tensor(np.ones(1, np.float32))).asnumpy()[0]))
with open(os.path.join(os.environ["TUTORIAL_RUN_DIR"], f"env_{rank}.json"), "w") as out:
    out.write(json.dumps(record))
barrier()
