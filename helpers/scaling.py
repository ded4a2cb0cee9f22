"""Reading notebook 04's scaling records: throughput, speedup and communication share per network.

Notebook 04's `scripts/scaling.py` writes one "scaling" record per network and rank (step seconds
with and without the AllReduce, gradient bytes, a plain AllReduce's time, and CPU accounting).
This module adds them up across ranks and compares a 1-worker launch with an N-worker launch:
speedup = aggregate samples/s at N over 1; scaling efficiency = speedup / N; communication share =
(data-parallel step - local step) / data-parallel step; `other_cores` tells how much of the machine
other processes used meanwhile (a shared machine makes launches at different moments incomparable).
"""

from __future__ import annotations

import statistics

NETS = ("simple", "mlp", "conv")
SUMMARY_KIND = "scaling"


def scaling_efficiency(aggregate_n: float, aggregate_1: float, n: int) -> float:
    """aggregate(N) / (N x aggregate(1)): 1.0 is perfect linear scaling, below 1/N is slower than one worker."""
    if n < 1 or aggregate_1 <= 0:
        raise ValueError(f"need n >= 1 and a positive 1-worker throughput, got n={n}, aggregate_1={aggregate_1}")
    return aggregate_n / (n * aggregate_1)


def summaries(result) -> dict[str, dict[int, dict]]:
    """{net: {rank: that rank's "scaling" record}} from a RunResult of scripts/scaling.py."""
    table: dict[str, dict[int, dict]] = {}
    for rank in result.ranks:
        for record in result.records(rank, SUMMARY_KIND):
            table.setdefault(record["net"], {})[rank] = record
    return table


def aggregate_throughput(result, net: str) -> float:
    """Samples/s of the whole job for `net`: the sum over ranks (each rank reads different samples)."""
    per_rank = [record["samples_per_s"] for record in summaries(result).get(net, {}).values()]
    if not per_rank:
        raise KeyError(f"no '{SUMMARY_KIND}' records for net {net!r} in {result.run_dir}")
    return float(sum(per_rank))


def _median(values):
    return float(statistics.median(values)) if values else float("nan")


def other_cores(result) -> float:
    """Cores that processes outside the job kept busy while it measured (averaged over its networks).

    Each rank records the machine's busy CPU seconds and its own over the same window; the machine's
    minus the sum of the ranks' is what everything else used. NaN when /proc/stat is unavailable.
    """
    other = window = 0.0
    for records in summaries(result).values():
        machines = [r.get("machine_cpu_seconds") for r in records.values()]
        if not machines or any(m is None for m in machines):
            return float("nan")
        other += _median(machines) - sum(r["own_cpu_seconds"] for r in records.values())
        window += _median([r["window_seconds"] for r in records.values()])
    return max(other, 0.0) / window if window > 0 else float("nan")


def job_cores(result) -> float:
    """Cores the job's ranks kept busy while measuring (their CPU seconds over the window, summed over ranks)."""
    used = window = 0.0
    for records in summaries(result).values():
        used += sum(r["own_cpu_seconds"] for r in records.values())
        window += _median([r["window_seconds"] for r in records.values()])
    return used / window if window > 0 else float("nan")


def scaling_rows(one, many) -> list[dict]:
    """One row per network comparing a 1-worker launch (`one`) with an N-worker launch (`many`).

    Columns (medians over ranks): net, params, grad_MB; step_ms_1 and step_ms_N (data parallel);
    local_ms_N (the same step without AllReduce, at N workers); samples_per_s_1 and _N (aggregate);
    speedup, efficiency; comm_ms_N and comm_share (step minus local step, and its share of the step);
    allreduce_ms_N (a plain AllReduce of one step's gradient bytes) and the MB/s it reached.
    """
    n = len(many.ranks)
    one_table, many_table = summaries(one), summaries(many)
    names = [name for name in NETS if name in one_table and name in many_table]
    rows = []
    for net in names:
        recs = list(many_table[net].values())

        def median(key, records=recs):
            return _median([r[key] for r in records])

        agg1, aggn = aggregate_throughput(one, net), aggregate_throughput(many, net)
        allreduce, grad = median("allreduce_seconds"), recs[0]["grad_bytes"]
        rows.append({"net": net, "params": recs[0]["params"], "grad_MB": grad / 1e6,
                     "step_ms_1": 1e3 * median("step_seconds", list(one_table[net].values())),
                     f"step_ms_{n}": 1e3 * median("step_seconds"), f"local_ms_{n}": 1e3 * median("local_step_seconds"),
                     "samples_per_s_1": agg1, f"samples_per_s_{n}": aggn,
                     "speedup": aggn / agg1, "efficiency": scaling_efficiency(aggn, agg1, n),
                     f"comm_ms_{n}": 1e3 * median("comm_seconds"), "comm_share": median("comm_share"),
                     f"allreduce_ms_{n}": 1e3 * allreduce,
                     "allreduce_MB_per_s": grad / allreduce / 1e6 if allreduce > 0 and n > 1 else float("nan")})
    return rows


def format_rows(rows: list[dict]) -> str:
    """A plain-text table of `scaling_rows()` (numbers rounded for reading)."""
    if not rows:
        return "(no rows)"

    def cell(value):
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
        return str(value)

    keys = list(rows[0])
    widths = {k: max(len(k), *(len(cell(r[k])) for r in rows)) for k in keys}
    lines = ["  ".join(k.rjust(widths[k]) for k in keys)]
    lines += ["  ".join(cell(r[k]).rjust(widths[k]) for k in keys) for r in rows]
    return "\n".join(lines)
