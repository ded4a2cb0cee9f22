"""Notebook 15's plumbing: read what scripts/speed.py wrote (metrics, MindSpore profiler output), split a rank's
timeline into compute, communication and idle, fit collectives to latency + size / bandwidth, and draw both.

MindSpore's profiler (`mindspore.profiler.profile`, `tensorboard_trace_handler(DIR)`) writes
DIR/<host>_<pid>_<time>_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json, Chrome trace events (`ph: "X"`, `ts` and
`dur` in microseconds, as strings), and FRAMEWORK/cpu_op_type_info_<rank>.csv, the time per operator type (ms).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np

# Operator types that move data between ranks (MindSpore's names for HCCL / mccl kernels), matched as parts of a
# type's name: "AllReduce" also matches HCCL's "HcomAllReduce", "Send" also "HcomSend".
COMMUNICATION = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send", "Receive", "AlltoAll", "AllToAll",
                 "Barrier", "DistComm", "InnerComm")


def profile_folder(rank_dir: str | Path, name: str = "profile") -> Path:
    """The one <host>_..._ascend_ms folder the profiler wrote under rank_dir/<name>."""
    found = sorted(Path(rank_dir, name).glob("*_ascend_ms"))
    if not found:
        raise FileNotFoundError(f"no profiler output under {Path(rank_dir, name)}")
    return found[-1]


def op_type(name: str) -> str:
    """'Default/AllReduce-op0' -> 'AllReduce'; 'MatMul' -> 'MatMul'."""
    return re.sub(r"-op\d+$", "", name.rsplit("/", 1)[-1])


def is_communication(kind: str) -> bool:
    return any(c in kind for c in COMMUNICATION)


def trace_events(rank_dir: str | Path, name: str = "profile") -> list[dict]:
    """The complete events ('X') of a rank's trace_view.json (under rank_dir/<name>): name, type, start and
    duration in seconds."""
    path = profile_folder(rank_dir, name) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = [{"name": e["name"], "type": op_type(e["name"]), "start": float(e["ts"]) / 1e6,
            "seconds": float(e["dur"]) / 1e6} for e in events if e.get("ph") == "X"]
    return sorted(out, key=lambda e: e["start"])


def op_types(rank_dir: str | Path) -> list[dict]:
    """cpu_op_type_info_<rank>.csv as rows {"type", "calls", "ms", "communication"}, largest time first."""
    path = next((profile_folder(rank_dir) / "FRAMEWORK").glob("cpu_op_type_info_*.csv"))   # _<rank>
    with path.open() as f:
        rows = [{"type": r["op_type"], "calls": int(r["type_occurrences"]), "ms": float(r["total_compute_time"]),
                 "communication": is_communication(r["op_type"])} for r in csv.DictReader(f)]
    return sorted(rows, key=lambda r: -r["ms"])


def _union(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals."""
    total, end = 0.0, -np.inf
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def time_split(events: list[dict]) -> dict:
    """A timeline's span split into communication (any collective running), compute (an operator running, no
    collective) and idle (nothing running: Python, the framework, waiting), in seconds."""
    if not events:
        return {"span": 0.0, "compute": 0.0, "communication": 0.0, "idle": 0.0}
    span = max(e["start"] + e["seconds"] for e in events) - min(e["start"] for e in events)
    comm = [(e["start"], e["start"] + e["seconds"]) for e in events if is_communication(e["type"])]
    busy = _union([(e["start"], e["start"] + e["seconds"]) for e in events])
    communication = _union(comm)
    return {"span": span, "compute": busy - communication, "communication": communication, "idle": span - busy}


def operators(events: list[dict]) -> list[dict]:
    """The events that are operators: without the "Default" scope, one event that spans the whole of a PyNative
    gradient computation (forward and backward) and would hide every gap inside it."""
    return [e for e in events if e["name"] != "Default"]


def busy_during(intervals: list[tuple[float, float]], events: list[dict]) -> float:
    """Seconds of the (start, end) intervals, on the trace's clock, during which an operator of `events` ran: with
    intervals a rank spent in send and recv, how much of its waiting the trace fills with operators."""
    busy = [(e["start"], e["start"] + e["seconds"]) for e in operators(events)]
    return sum(_union([(max(a, s), min(b, e)) for s, e in busy if s < b and e > a]) for a, b in intervals)


def scheduler_tick() -> float | None:
    """Seconds between two ticks of the Linux scheduler, 1 / CONFIG_HZ of the running kernel's build configuration
    (/proc/config.gz or /boot/config-<release>); None where neither can be read."""
    import gzip
    import os

    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{os.uname().release}")):
        try:
            text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        except OSError:
            continue
        found = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
        if found:
            return 1 / int(found.group(1))
    return None


def on_tick_grid(times: list[float], tick: float | None, within: float = 0.05) -> bool:
    """True when most of a measurement's times are whole numbers of scheduler ticks (one or more, each within
    `within` of a tick): calls that waited for the scheduler's tick, whatever their work."""
    if not tick or not times:
        return False
    ticks = np.asarray(times, float) / tick
    on = (ticks >= 1 - within) & (np.abs(ticks - np.round(ticks)) <= within)
    return bool(on.sum() > len(ticks) / 2)


def fit_latency_bandwidth(nbytes, seconds) -> dict:
    """Least squares of seconds = alpha + nbytes / beta, each point's error relative to its time (small messages
    count as much as large ones): {"alpha" (s), "beta" (bytes/s), "error" (the largest |fit - measured| / measured
    over the points)}. A slope that comes out 0 or negative gives beta = inf."""
    n, t = np.asarray(nbytes, float), np.asarray(seconds, float)
    rows = np.stack([np.ones_like(n), n], axis=1) / t[:, None]
    (alpha, slope), *_ = np.linalg.lstsq(rows, np.ones_like(t), rcond=None)
    fit = alpha + slope * n
    return {"alpha": float(alpha), "beta": float(1 / slope) if slope > 0 else float("inf"),
            "error": float(np.max(np.abs(fit - t) / t))}


def draw_timeline(traces: dict[int, list[dict]], title: str | None = None):
    """One row per rank: every operator as a bar, communication in red, compute in blue; gaps are idle."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.6 + 0.5 * len(traces)))
    start = min(e["start"] for events in traces.values() for e in events)
    for row, (_, events) in enumerate(sorted(traces.items())):
        for comm, colour in ((False, "tab:blue"), (True, "tab:red")):
            bars = [((e["start"] - start) * 1e3, e["seconds"] * 1e3) for e in events
                    if is_communication(e["type"]) == comm]
            ax.broken_barh(bars, (row - 0.35, 0.7), facecolors=colour, label=("communication" if comm else "compute")
                           if row == 0 else None)
    ax.set_yticks(range(len(traces)), [f"rank {r}" for r in sorted(traces)])
    ax.set_xlabel("ms from the first profiled operator")
    ax.set_title(title or "MindSpore profiler timeline (trace_view.json)")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def draw_fits(measured: dict[str, tuple[list, list]], fits: dict[str, dict], title: str | None = None,
              left_out: dict[str, list[bool]] | None = None):
    """Measured seconds against message bytes per collective (points) and each fit alpha + n / beta (lines). Points
    marked in `left_out` (on the scheduler's tick grid) are drawn hollow: they are not in the fit."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (op, (nbytes, seconds)) in enumerate(measured.items()):
        colour = plt.get_cmap("tab10")(i)
        out = np.asarray((left_out or {}).get(op, [False] * len(nbytes)), bool)
        n, ms = np.asarray(nbytes, float), np.asarray(seconds) * 1e3
        ax.loglog(n[~out], ms[~out], "o", color=colour, label=op)
        if out.any():
            ax.loglog(n[out], ms[out], "o", mfc="none", color=colour)
        grid = np.geomspace(min(nbytes), max(nbytes), 50)
        f = fits[op]
        ax.loglog(grid, (f["alpha"] + grid / f["beta"]) * 1e3, "-", color=colour, alpha=0.6)
    if left_out and any(any(v) for v in left_out.values()):
        ax.plot([], [], "o", mfc="none", color="grey", label="on the scheduler's tick (left out)")
    ax.set_xlabel("message, bytes")
    ax.set_ylabel("ms")
    ax.set_title(title or "collectives: measured (points) and alpha + n / beta (lines)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
