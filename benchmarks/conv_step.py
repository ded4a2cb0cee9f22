"""One process, no cluster: the conv net's training step time under a pinning mode (RESULTS.md §2, §3).

    for mode in late_t1 late early; do .venv/bin/python benchmarks/conv_step.py $mode; done
    ONEDNN_MAX_CPU_ISA=AVX512_CORE .venv/bin/python benchmarks/conv_step.py late_t1

Modes: late_t1 = pinned to core 0 after set-up + threads_num(1) (what the series' workers once did
after init()), late = pinned after set-up only, early = pinned before `import mindspore` (like taskset
or `msrun --bind_core`) + threads_num(1). Prints the median of 20 timed steps of notebook 04's conv net
(benchmarks/nets.py; batch 32, TrainOneStepCell, graph mode) after 3 warm-up steps.
"""

import os
import statistics
import sys
import time
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "late_t1"
if MODE not in ("late_t1", "late", "early"):
    raise SystemExit(f"unknown mode {MODE!r}: late_t1, late or early")
if MODE == "early":
    os.sched_setaffinity(0, {0})

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nets import SmallConvNet, pin_to_core  # noqa: E402

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
if MODE.startswith("late"):
    pin_to_core(0)
if MODE in ("late_t1", "early"):
    ms.device_context.cpu.op_tuning.threads_num(1)
net = SmallConvNet()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
y = ms.Tensor(rng.integers(0, 10, 32).astype(np.int32))
for _ in range(3):
    step(x, y).asnumpy()
seconds = []
for _ in range(20):
    start = time.perf_counter()
    step(x, y).asnumpy()
    seconds.append(time.perf_counter() - start)
print(f"{MODE} ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', 'unset')}: "
      f"{1e3 * statistics.median(seconds):.1f} ms/step")
