"""Training callbacks: rank-0 progress, per-rank metrics.jsonl, weight checksums. Introduced in notebook 01.

The article's idea (print only on rank 0) written for MindSpore 2.10: `on_train_step_end`
replaces `step_end`, which warns that it may go away. MindSpore's own `LossMonitor` prints on
every rank, so 8 cards give 8 interleaved copies of every line.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import mindspore as ms
import numpy as np


def append_record(path: Path, rank: int, record: dict) -> None:
    """Append one JSON line, tagged with `rank`, to a rank's metrics.jsonl (helpers.train, helpers.scaling)."""
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"rank": rank, **record}) + "\n")


def loss_value(net_outputs) -> float:
    """The scalar loss from `cb_params.net_outputs` (a Tensor, or (loss, overflow, scale) with loss scaling)."""
    if isinstance(net_outputs, (tuple, list)):
        net_outputs = net_outputs[0]
    return float(np.asarray(net_outputs.asnumpy() if hasattr(net_outputs, "asnumpy") else net_outputs))


def weights_checksum(net) -> tuple[str, float]:
    """(sha256 prefix of every trainable parameter's bytes, sum of all parameter values).

    Equal hashes on two ranks mean bit-identical weights, which DATA_PARALLEL promises.
    """
    digest = hashlib.sha256()
    total = 0.0
    for param in net.trainable_params():
        values = param.asnumpy()
        digest.update(param.name.encode())
        digest.update(np.ascontiguousarray(values).tobytes())
        total += float(values.astype(np.float64).sum())
    return digest.hexdigest()[:16], total


class Rank0Logger(ms.Callback):
    """Print epoch, step and loss every `every` steps, on rank 0 only."""

    def __init__(self, rank: int, every: int = 1):
        super().__init__()
        self.rank = rank
        self.every = max(1, every)

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        if self.rank != 0 or cb_params.cur_step_num % self.every:
            return
        print(f"[rank 0] epoch {cb_params.cur_epoch_num} step {cb_params.cur_step_num} "
              f"loss {loss_value(cb_params.net_outputs):.4f}", flush=True)


class MetricsWriter(ms.Callback):
    """Append one JSON line per step (and per epoch, with `net`'s weight checksum) to `path`.

    Step records: {"kind": "step", "rank", "epoch", "step", "loss", "samples_per_s", "time"}.
    Epoch records add {"weights_sha", "weights_sum"}. `time` is seconds since training began.
    """

    def __init__(self, path: Path, net, rank: int, batch_size: int):
        super().__init__()
        self.net = net
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rank = rank
        self.batch_size = batch_size
        self.start = self.last = None

    def write(self, record: dict) -> None:
        append_record(self.path, self.rank, record)

    def on_train_begin(self, run_context):
        self.start = self.last = time.perf_counter()

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        now = time.perf_counter()
        self.write({"kind": "step", "epoch": cb_params.cur_epoch_num, "step": cb_params.cur_step_num,
                    "loss": loss_value(cb_params.net_outputs),
                    "samples_per_s": self.batch_size / max(now - self.last, 1e-9),
                    "time": now - self.start})
        self.last = now

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        sha, total = weights_checksum(self.net)
        self.write({"kind": "epoch", "epoch": cb_params.cur_epoch_num, "step": cb_params.cur_step_num,
                    "weights_sha": sha, "weights_sum": total, "time": time.perf_counter() - self.start})
