"""Notebook 15's plumbing: read what scripts/speed.py wrote (metrics, MindSpore profiler output, hccl_test's table),
split a rank's timeline into compute, communication and idle, fit collectives to latency + size / bandwidth, draw.

MindSpore's profiler (`mindspore.profiler.profile`, `tensorboard_trace_handler(DIR)`) writes
DIR/<host>_<pid>_<time>_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json: Chrome trace events, complete ones
(`ph: "X"`) with `ts` and `dur` in microseconds (strings, or numbers for CANN's), grouped in rows named by metadata
events (`ph: "M"`, `process_name`, `thread_name`). The rows differ by device:
- CPU: "CPU OP", one event per host operator, and "Scope Layer", PyNative's scopes (a `Default` event spans each
  gradient computation: not an operator).
- Ascend (MindSpore 2.10's writer with CANN's msprof rows): "MindSpore" (host framework), "CANN" (launches),
  "Ascend Hardware" (the card's kernels, a thread per stream), "Communication" (HCCL's, named "HCCL" by older CANN;
  events like `hcom_allReduce__428_0_1`), and "Overlap Analysis", whose threads Computing, Communication,
  Communication(Not Overlapped) and Free are CANN's own union of the card's time.
Time per operator type: on CPU FRAMEWORK/cpu_op_type_info_<rank>.csv (ms); on a card
ASCEND_PROFILER_OUTPUT/op_statistic.csv (µs per type; not written at profiler level 0) and kernel_details.csv (one
row per kernel).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np

# Names of operators and tasks that move data between ranks, matched case-blind as parts of a name: MindSpore's
# (AllReduce-op0, DistCommIrecv, HcomSend), HCCL's (hcom_allReduce_, hcom_receive__12_0_1) and CANN's overlap row
# ("Communication", "Communication(Not Overlapped)").
COMMUNICATION = ("allreduce", "allgather", "reducescatter", "broadcast", "send", "receive", "recv", "alltoall",
                 "barrier", "distcomm", "innercomm", "hcom", "communication")
OVERLAP_ROW = "Overlap Analysis"     # CANN's split of a card's time, one thread per kind
SCOPE_ROW = "Scope Layer"            # PyNative's scopes: spans, not operators


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
    kind = kind.lower()
    return any(c in kind for c in COMMUNICATION)


def trace_events(rank_dir: str | Path, name: str = "profile") -> list[dict]:
    """The complete events ('X') of a rank's trace_view.json (under rank_dir/<name>): name, type, start and
    duration in seconds, and the row: the names of its process and thread from the trace's metadata events."""
    path = profile_folder(rank_dir, name) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    meta = {(e["name"], e["pid"], e.get("tid") if e["name"] == "thread_name" else None): e["args"].get("name")
            for e in events if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name")}
    out = [{"name": e["name"], "type": op_type(e["name"]), "start": float(e["ts"]) / 1e6,
            "seconds": float(e["dur"]) / 1e6, "process": meta.get(("process_name", e.get("pid"), None), ""),
            "thread": meta.get(("thread_name", e.get("pid"), e.get("tid")), "")}
           for e in events if e.get("ph") == "X"]
    return sorted(out, key=lambda e: e["start"])


def operators(events: list[dict]) -> list[dict]:
    """A rank's work as one row. On a card, CANN's Overlap Analysis row: its Computing and Communication events,
    the union of the card's compute and communication tasks. Elsewhere every operator, without the scopes: on CPU
    PyNative's `Default` event spans a whole gradient computation (forward and backward) and would hide every gap."""
    overlap = [e for e in events if e.get("process") == OVERLAP_ROW and e.get("thread") in
               ("Computing", "Communication")]
    return overlap or [e for e in events if e.get("process") != SCOPE_ROW and e["name"] != "Default"]


def _read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(f)]


def op_types(rank_dir: str | Path, name: str = "profile") -> list[dict]:
    """Time per operator type as rows {"type", "calls", "ms", "communication"}, largest time first. On a card the
    device's kernels: op_statistic.csv, or kernel_details.csv summed by type where the profiler's level wrote no
    statistic (HCCL's tasks are only there). On CPU the host's operators: FRAMEWORK/cpu_op_type_info_<rank>.csv."""
    folder = profile_folder(rank_dir, name)
    statistic = folder / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv"
    kernels = folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    host = sorted((folder / "FRAMEWORK").glob("cpu_op_type_info_*.csv"))   # _<rank>
    if statistic.exists():
        rows = [{"type": r["OP Type"], "calls": int(r["Count"]), "ms": float(r["Total Time(us)"]) / 1e3}
                for r in _read_csv(statistic)]
    elif kernels.exists():
        summed: dict[str, dict] = {}
        for r in _read_csv(kernels):
            row = summed.setdefault(r["Type"], {"type": r["Type"], "calls": 0, "ms": 0.0})
            row["calls"] += 1
            row["ms"] += float(r["Duration(us)"]) / 1e3
        rows = list(summed.values())
    elif host:
        rows = [{"type": r["op_type"], "calls": int(r["type_occurrences"]), "ms": float(r["total_compute_time"])}
                for r in _read_csv(host[0])]
    else:
        raise FileNotFoundError(f"no time per operator type under {folder}: neither ASCEND_PROFILER_OUTPUT/"
                                "op_statistic.csv nor kernel_details.csv (a card) nor FRAMEWORK/cpu_op_type_info_*.csv"
                                " (CPU); did the profiler stop before any step?")
    for row in rows:
        row["communication"] = is_communication(row["type"])
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
    """A rank's timeline (its operators(): the card's overlap row, or the CPU's operators) split into communication
    (any collective running), compute (an operator running, no collective) and idle (nothing running: Python, the
    framework, waiting), in seconds."""
    events = operators(events)
    if not events:
        return {"span": 0.0, "compute": 0.0, "communication": 0.0, "idle": 0.0}
    span = max(e["start"] + e["seconds"] for e in events) - min(e["start"] for e in events)
    comm = [(e["start"], e["start"] + e["seconds"]) for e in events if is_communication(e["type"])]
    busy = _union([(e["start"], e["start"] + e["seconds"]) for e in events])
    communication = _union(comm)
    return {"span": span, "compute": busy - communication, "communication": communication, "idle": span - busy}


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


def hccl_test_points(text: str) -> tuple[list[int], list[float]]:
    """(bytes, seconds) of each row of the table CANN's hccl_test prints (all_reduce_test, ...): the header
    `data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:` (its documentation's example says
    avg_time), then one row per size; rows whose check failed are left out. ValueError when there is no table."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.lstrip().startswith("data_size(Bytes)")), None)
    if header is None:
        raise ValueError("no hccl_test table in this output (no 'data_size(Bytes)' header): did the test run?")
    nbytes, seconds = [], []
    for line in lines[header + 1:]:
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 4 or not fields[0].isdigit():
            break
        if fields[3] != "failed":
            nbytes.append(int(fields[0]))
            seconds.append(float(fields[1]) / 1e6)
    return nbytes, seconds


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
    """One row per rank: every operator (operators(): on a card, CANN's overlap row) as a bar, communication in red,
    compute in blue; gaps are idle."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.6 + 0.5 * len(traces)))
    start = min(e["start"] for events in traces.values() for e in events)
    for row, (_, events) in enumerate(sorted(traces.items())):
        events = operators(events)
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
