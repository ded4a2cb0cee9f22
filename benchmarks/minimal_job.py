"""The minimal distributed job of benchmarks/RESULTS.md: init() + 10 training steps of a tiny net.

Run by hand under a launcher (bare msrun, helpers/launch.sh, or benchmarks/launch_cost.py), e.g.

    msrun --worker_num=2 --local_worker_num=2 --master_port=8123 --log_dir=/tmp/m --join=True \
        benchmarks/minimal_job.py

Each worker prints wall-clock marks (`MARK <name> <unix time>`), so a harness can split the job
into phases: Python start -> import -> init() -> first step -> last step -> process exit.
"""

import time

T0 = time.time()

import os  # noqa: E402
import sys  # noqa: E402


def mark(name: str, when: float | None = None) -> None:
    print(f"MARK {name} {when if when is not None else time.time():.4f}", flush=True)


def main() -> int:
    mark("python", T0)
    import mindspore as ms
    import numpy as np
    from mindspore import nn
    from mindspore.communication import get_group_size, get_rank, init

    mark("imported")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    init()  # the scheduler process never returns from here
    rank, world = get_rank(), get_group_size()
    mark("init")
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ms.set_seed(0)
    steps = int(os.environ.get("BENCH_STEPS", "10"))
    net = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 10))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    rng = np.random.default_rng(rank)
    x = ms.Tensor(rng.standard_normal((64, 32), dtype=np.float32))
    y = ms.Tensor(rng.integers(0, 10, 64).astype(np.int32))
    step(x, y).asnumpy()
    mark("first_step")
    for _ in range(steps - 1):
        out = step(x, y)
    out.asnumpy()
    mark("last_step")
    print(f"rank {rank}/{world} loss {float(out.asnumpy()):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
