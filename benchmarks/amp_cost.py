"""Mixed-precision (混合精度) cost per amp_level on the current device, one process, levels interleaved.

    .venv/bin/python benchmarks/amp_cost.py --rounds 3 --out benchmarks/results/amp.jsonl

Builds one training network per level with `ms.build_train_network` (the function Model uses for
`amp_level`), for the 1024->4096->1024 MLP (batch 256) and the small conv net (batch 32), then times
--steps steps of each level in turn, round after round, so load changes hit every level alike.
O2/O3 get `FixedLossScaleManager(1024, drop_overflow_update=False)` and an optimizer with the same
loss_scale: the only loss scaling MindSpore accepts on CPU (notebook 05, section 2.3). It also times a
bare MatMul in float32 and float16 to show where the cost comes from. The process is pinned to one core
with 1 kernel thread so the figures are per core. The MLP and SimpleNet are defined here, the conv net
and pin_to_core come from benchmarks/nets.py (notebook 05 and its scripts/amp_train.py define their own).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")  # oneDNN's fast conv kernels on this CPU (set before import)

import mindspore as ms  # noqa: E402  (after the oneDNN setting)
import numpy as np  # noqa: E402
from mindspore import nn, ops  # noqa: E402
from nets import SmallConvNet, pin_to_core  # noqa: E402  (benchmarks/nets.py, beside this file)

LEVELS = ("O0", "O1", "O2", "O3")


class MLP(nn.Cell):
    """1024 -> 4096 -> 1024: many parameters, much arithmetic."""

    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Dense(1024, 4096), nn.ReLU(), nn.Dense(4096, 1024)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class SimpleNet(nn.Cell):
    """The article's network."""

    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 10)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def build_network(name: str):
    """(network, input shape of one sample, classes)."""
    if name == "mlp":
        return MLP(), (1024,), 1024
    if name == "conv":
        return SmallConvNet(), (3, 32, 32), 10
    return SimpleNet(), (32,), 10


def summarize(records: list[dict]) -> str:
    """Median step time per (net, level) and the median over rounds of (level / O0 in the same round)."""
    lines = ["| net | batch | level | step ms (median) | × O0 (median of per-round ratios) | rounds | load |",
             "|---|---|---|---|---|---|---|"]
    amp = [r for r in records if r["kind"] == "amp"]
    for net in dict.fromkeys(r["net"] for r in amp):
        base = {r["round"]: r["step_ms"] for r in amp if r["net"] == net and r["level"] == "O0"}
        for level in LEVELS:
            rows = [r for r in amp if r["net"] == net and r["level"] == level]
            if not rows:
                continue
            ratio = statistics.median(r["step_ms"] / base[r["round"]] for r in rows if r["round"] in base)
            loads = [r["load"] for r in rows]
            lines.append(f"| {net} | {rows[0]['batch_size']} | {level} | "
                         f"{statistics.median(r['step_ms'] for r in rows):.0f} | {ratio:.2f} | {len(rows)} | "
                         f"{min(loads):.1f}–{max(loads):.1f} |")
    mm = [r for r in records if r["kind"] == "matmul"]
    if mm:
        f32 = {r["round"]: r["ms"] for r in mm if r["dtype"] == "float32"}
        f16 = [r for r in mm if r["dtype"] == "float16"]
        lines.append("")
        lines.append(f"Bare MatMul {mm[0]['shape']}: float32 {statistics.median(f32.values()):.0f} ms, float16 "
                     f"{statistics.median(r['ms'] for r in f16):.0f} ms (float16 / float32, median of per-round "
                     f"ratios: {statistics.median(r['ms'] / f32[r['round']] for r in f16):.2f})")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--nets", default="mlp,conv")
    parser.add_argument("--out", default="benchmarks/results/amp.jsonl")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    args = parser.parse_args()
    if args.summary:
        print(summarize([json.loads(x) for x in Path(args.out).read_text().splitlines() if x.strip()]))
        return 0
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(1)
    batches = {"mlp": 256, "conv": 32, "simple": 64}
    steps = {}
    for net_name in args.nets.split(","):
        for level in LEVELS:
            ms.set_seed(0)
            net, shape, classes = build_network(net_name)
            loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
            manager = ms.FixedLossScaleManager(1024.0, drop_overflow_update=False) if level in ("O2", "O3") else None
            scale = 1024.0 if manager else 1.0
            opt = nn.Momentum(net.trainable_params(), 0.01, 0.9, loss_scale=scale)
            kwargs = {"loss_scale_manager": manager} if manager else {}
            train = ms.build_train_network(net, opt, loss, level=level, **kwargs)
            rng = np.random.default_rng(0)
            x = ms.Tensor(rng.standard_normal((batches[net_name], *shape), dtype=np.float32))
            y = ms.Tensor(rng.integers(0, classes, batches[net_name]).astype(np.int32))
            steps[(net_name, level)] = (train, x, y)
    pin_to_core(min(os.sched_getaffinity(0)))

    def out_value(result):
        return (result[0] if isinstance(result, tuple) else result).asnumpy()

    for train, x, y in steps.values():  # compile every graph before any timing
        out_value(train(x, y))

    a = ms.Tensor(np.random.default_rng(1).standard_normal((256, 1024), dtype=np.float32))
    b = ms.Tensor(np.random.default_rng(2).standard_normal((1024, 4096), dtype=np.float32))
    matmul = ops.MatMul()
    pairs = {"float32": (a, b), "float16": (a.astype(ms.float16), b.astype(ms.float16))}
    for pa, pb in pairs.values():
        matmul(pa, pb).asnumpy()

    with open(args.out, "a") as handle:
        for round_no in range(1, args.rounds + 1):
            load = os.getloadavg()[0]
            for (net_name, level), (train, x, y) in steps.items():
                times = []
                for _ in range(args.steps):
                    start = time.perf_counter()
                    value = out_value(train(x, y))
                    times.append(time.perf_counter() - start)
                record = {"kind": "amp", "net": net_name, "level": level, "round": round_no,
                          "batch_size": int(x.shape[0]), "step_ms": 1e3 * statistics.median(times),
                          "loss": float(np.ravel(value)[0]), "load": load}
                handle.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
            for dtype, (pa, pb) in pairs.items():
                times = []
                for _ in range(args.steps):
                    start = time.perf_counter()
                    matmul(pa, pb).asnumpy()
                    times.append(time.perf_counter() - start)
                record = {"kind": "matmul", "dtype": dtype, "round": round_no, "shape": "256x1024 @ 1024x4096",
                          "ms": 1e3 * statistics.median(times), "load": load}
                handle.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
