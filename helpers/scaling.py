"""Throughput and scaling: the worker `python -m helpers.scaling` and its analysis. Introduced in notebook 04.

Worker: inside ONE launch, every rank trains each network of `--nets` (simple, mlp, conv; see
helpers.train.build_network) with `ms.Model.train` for `--warmup` untimed steps (graph compilation)
and `--steps` timed steps, twice: under DATA_PARALLEL (the real job, gradients AllReduced every
step) and "local" (STAND_ALONE: the same training without the AllReduce, run by all ranks at
once, so it shares the machine the same way; skipped when there is only one rank). Then it times
a plain AllReduce of one step's gradient bytes. On CPU each rank is pinned to one core (after
`init()`) with one kernel thread: one worker is one core, as on Ascend one worker is one card.
Each rank appends to RUN/rank_<k>/metrics.jsonl:

    {"kind": "scaling_step", "net", "mode", "step", "seconds", "loss", "warmup"}      one per step
    {"kind": "scaling", "net", "world", "batch_size", "step_seconds", "local_step_seconds",
     "comm_seconds", "comm_share", "samples_per_s", "params", "grad_bytes", "allreduce_seconds",
     "window_seconds", "machine_cpu_seconds", "own_cpu_seconds", "cores", ...}

Analysis (cheap, no MindSpore): read those records from a `RunResult`, add up the ranks'
throughput, and compare a 1-worker launch with an N-worker launch:
scaling efficiency = aggregate(N) / (N x aggregate(1)); communication share = (data-parallel step
- local step) / data-parallel step, the part of a step spent communicating and waiting for peers;
`other_cores` tells how much of the machine other processes used meanwhile (a shared machine
makes launches at different moments incomparable).

    python -m helpers.scaling --nets simple,mlp,conv --steps 20      # under helpers.launch / launch.sh
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

NETS = ("simple", "mlp", "conv")
STEP_KIND = "scaling_step"
SUMMARY_KIND = "scaling"
BYTES_PER_VALUE = 4  # float32 gradients
RUN_DIR_ENV = "TUTORIAL_RUN_DIR"


# ---------------------------------------------------------------- arithmetic (no MindSpore needed)

def gradient_bytes(param_count: int, bytes_per_value: int = BYTES_PER_VALUE) -> int:
    """Bytes one rank contributes to the gradient AllReduce per step: one value per trainable parameter."""
    return int(param_count) * bytes_per_value


def scaling_efficiency(aggregate_n: float, aggregate_1: float, n: int) -> float:
    """aggregate(N) / (N x aggregate(1)): 1.0 is perfect linear scaling, below 1/N is slower than one worker."""
    if n < 1 or aggregate_1 <= 0:
        raise ValueError(f"need n >= 1 and a positive 1-worker throughput, got n={n}, aggregate_1={aggregate_1}")
    return aggregate_n / (n * aggregate_1)


def comm_share(allreduce_seconds: float, step_seconds: float) -> float:
    """Share of a step spent in the gradient AllReduce (clipped to [0, 1])."""
    if step_seconds <= 0:
        raise ValueError(f"step time must be positive, got {step_seconds}")
    return min(max(allreduce_seconds / step_seconds, 0.0), 1.0)


# ---------------------------------------------------------------- reading RunResults

def summaries(result) -> dict[str, dict[int, dict]]:
    """{net: {rank: that rank's "scaling" record}} from a RunResult of `python -m helpers.scaling`."""
    table: dict[str, dict[int, dict]] = {}
    for rank in result.ranks:
        for record in result.records(rank, SUMMARY_KIND):
            table.setdefault(record["net"], {})[rank] = record
    return table


def step_times(result, net: str, rank: int, mode: str = "data_parallel", warmup: bool = False) -> list[float]:
    """Seconds per step of `net` on `rank` in `mode` (data_parallel or local); timed steps unless `warmup`."""
    return [r["seconds"] for r in result.records(rank, STEP_KIND)
            if r["net"] == net and r["mode"] == mode and (warmup or not r["warmup"])]


def rank_throughput(result, net: str) -> dict[int, float]:
    """{rank: samples/s} of `net`: the rank's batch size over its median step time."""
    return {rank: record["samples_per_s"] for rank, record in sorted(summaries(result).get(net, {}).items())}


def aggregate_throughput(result, net: str) -> float:
    """Samples/s of the whole job for `net`: the sum over ranks (each rank reads different samples)."""
    per_rank = rank_throughput(result, net)
    if not per_rank:
        raise KeyError(f"no '{SUMMARY_KIND}' records for net {net!r} in {result.run_dir}")
    return float(sum(per_rank.values()))


def other_cores(result) -> float:
    """Cores that processes outside the job kept busy while it measured (averaged over its networks).

    Each rank records the machine's busy CPU seconds and its own over the same window; the machine's
    minus the sum of the ranks' is what everything else used. NaN when /proc/stat is unavailable.
    A value near 0 means the numbers are the job's alone; a large one means they are not comparable.
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


def _median(values):
    return float(statistics.median(values)) if values else float("nan")


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
    names += sorted(set(one_table) & set(many_table) - set(NETS))
    rows = []
    for net in names:
        recs = list(many_table[net].values())

        def median(key, records=recs):
            return _median([r[key] for r in records])

        agg1, aggn = aggregate_throughput(one, net), aggregate_throughput(many, net)
        allreduce = median("allreduce_seconds")
        grad = recs[0]["grad_bytes"]
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


# ---------------------------------------------------------------- the worker

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m helpers.scaling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nets", default=",".join(NETS), help=f"comma-separated, from {', '.join(NETS)}")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank (the global batch grows with ranks)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (the first compiles the graph)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per network")
    parser.add_argument("--allreduce-reps", type=int, default=5, help="timed AllReduces of one step's gradient bytes")
    parser.add_argument("--pin", choices=("auto", "yes", "no"), default="auto",
                        help="pin each rank to one CPU core, after init() (auto: on CPU), so that one worker is one "
                             "core as on Ascend one worker is one card; without it a lone worker spreads over all "
                             "cores and the comparison measures core sharing, not data parallelism")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU kernel threads per rank (0: 1 when pinned, else MindSpore's default)")
    parser.add_argument("--comm-fusion", default="auto",
                        help="gradient AllReduce fusion: auto (MindSpore's default: fuse up to 64 MB), off, or a "
                             "threshold in MB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.environ.get(RUN_DIR_ENV, "runs/manual-scaling"),
                        help=f"run folder (default: ${RUN_DIR_ENV}, set by the launcher)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.nets = [n.strip() for n in args.nets.split(",") if n.strip()]
    unknown = [n for n in args.nets if n not in NETS]
    if unknown or not args.nets:
        parser.error(f"--nets: unknown {unknown or 'empty list'}; choose from {', '.join(NETS)}")
    if args.threads < 0:
        parser.error("--threads must be 0 (automatic) or a positive count")
    if args.comm_fusion not in ("auto", "off") and not (args.comm_fusion.isdigit() and int(args.comm_fusion) > 0):
        parser.error(f"--comm-fusion must be auto, off or a positive number of MB, got {args.comm_fusion!r}")
    for name in ("batch_size", "warmup", "steps", "allreduce_reps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def machine_busy_seconds() -> float | None:
    """CPU seconds all processes of this machine have spent busy since boot (Linux /proc/stat), or None."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
    except (OSError, ValueError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds this process (all its threads) has used."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _allreduce_seconds(numel: int, reps: int) -> float:
    """Median seconds of a real AllReduce over a float32 buffer of `numel` values (one step's gradients)."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    allreduce = ops.AllReduce()
    buffer = ms.Tensor(np.ones(numel, np.float32))
    allreduce(buffer).asnumpy()  # first call sets things up: not timed
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        allreduce(buffer).asnumpy()
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def comm_fusion_config(value: str) -> dict:
    """`set_auto_parallel_context(comm_fusion=...)` for --comm-fusion auto | off | <MB>."""
    if value == "off":
        return {"openstate": False}
    if value == "auto":
        return {"openstate": True, "allreduce": {"mode": "auto", "config": None}}
    return {"openstate": True, "allreduce": {"mode": "size", "config": int(value)}}


def _time_training(net_name: str, args, rank: int, world: int, mode: str, write) -> tuple[list[float], int]:
    """Train a fresh `net_name` for warmup + steps steps in `mode`; write per-step records; (timed seconds, params).

    mode "data_parallel": the real job, gradients AllReduced every step. mode "local": the same
    training with parallel_mode STAND_ALONE (no AllReduce), run by every rank at the same time, so
    it sees the same sharing of the machine: the compute part of a data-parallel step.
    """
    import mindspore as ms
    from mindspore import nn

    from helpers.data import make_arrays, sharded_dataset
    from helpers.dist import barrier
    from helpers.train import build_network

    parallel_mode = ms.ParallelMode.DATA_PARALLEL if mode == "data_parallel" else ms.ParallelMode.STAND_ALONE
    ms.set_auto_parallel_context(parallel_mode=parallel_mode, gradients_mean=True,
                                 comm_fusion=comm_fusion_config(args.comm_fusion))
    ms.set_seed(args.seed)
    net, sample_shape, classes = build_network(net_name)
    total_steps = args.warmup + args.steps
    data, label = make_arrays(total_steps * args.batch_size * world, seed=args.seed, shape=sample_shape,
                              classes=classes)
    train_set = sharded_dataset(data, label, args.batch_size, rank=rank, world=world)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    model = ms.Model(net, loss_fn=loss_fn, optimizer=optimizer)
    ends: list[float] = []
    losses: list[float] = []

    class StepTimer(ms.Callback):
        def on_train_begin(self, run_context):
            ends.append(time.perf_counter())

        def on_train_step_end(self, run_context):
            ends.append(time.perf_counter())
            losses.append(float(run_context.original_args().net_outputs.asnumpy()))

    barrier()  # every rank starts together
    model.train(1, train_set, callbacks=[StepTimer()], dataset_sink_mode=False)
    seconds = [b - a for a, b in zip(ends, ends[1:])]
    for step, (sec, loss) in enumerate(zip(seconds, losses), start=1):
        write({"kind": STEP_KIND, "net": net_name, "mode": mode, "step": step, "seconds": sec, "loss": loss,
               "warmup": step <= args.warmup})
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    return seconds[args.warmup:], sum(int(p.size) for p in net.trainable_params())


def _measure(net_name: str, args, rank: int, world: int, write) -> dict:
    from helpers.dist import barrier

    wall, machine, own = time.perf_counter(), machine_busy_seconds(), own_cpu_seconds()
    timed, params = _time_training(net_name, args, rank, world, "data_parallel", write)
    # With one rank there is nothing to wait for and nothing to exchange: the step is all "local".
    local = _time_training(net_name, args, rank, world, "local", write)[0] if world > 1 else timed
    wall, own = time.perf_counter() - wall, own_cpu_seconds() - own
    machine = machine_busy_seconds() - machine if machine is not None else None
    barrier()
    allreduce = _allreduce_seconds(params, args.allreduce_reps)
    step_seconds = float(statistics.median(timed))
    local_seconds = float(statistics.median(local))
    comm_seconds = max(step_seconds - local_seconds, 0.0)
    return {"kind": SUMMARY_KIND, "net": net_name, "world": world, "batch_size": args.batch_size,
            "warmup": args.warmup, "steps": len(timed), "step_seconds": step_seconds,
            "step_seconds_mean": float(statistics.fmean(timed)), "local_step_seconds": local_seconds,
            "comm_seconds": comm_seconds, "comm_share": comm_share(comm_seconds, step_seconds),
            "samples_per_s": args.batch_size / step_seconds, "params": params,
            "grad_bytes": gradient_bytes(params), "allreduce_seconds": allreduce,
            "window_seconds": wall, "machine_cpu_seconds": machine, "own_cpu_seconds": own}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    from helpers.device import detect_device
    from helpers.dist import barrier, one_core_per_rank, setup_distributed

    device = detect_device()
    rank, world = setup_distributed(device)   # under msrun the scheduler never returns from here

    import mindspore as ms

    from helpers.callbacks import append_record

    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    core, threads = one_core_per_rank(rank, device, args.pin, args.threads)
    path = Path(args.out) / f"rank_{rank}" / "metrics.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(record: dict) -> None:
        append_record(path, rank, record)

    if rank == 0:
        where = f"each rank pinned to one of cores {cores}" if core is not None else "no core pinning"
        where += f", {threads} kernel thread(s) per rank" if threads else ""
        print(f"[rank 0] scaling: {world} ranks on {device}, {where}; nets {args.nets}, "
              f"{args.warmup} warm-up + {args.steps} timed steps of batch {args.batch_size} per rank", flush=True)
    for net_name in args.nets:
        summary = _measure(net_name, args, rank, world, write)
        summary.update(device=device, core=core, threads=threads, cores=len(cores) or os.cpu_count())
        write(summary)
        if rank == 0:
            print(f"[rank 0] {net_name}: {1e3 * summary['step_seconds']:.1f} ms/step, "
                  f"{summary['samples_per_s']:.0f} samples/s on this rank, {summary['grad_bytes'] / 1e6:.2f} MB "
                  f"of gradients, {100 * summary['comm_share']:.0f}% of the step communicating "
                  f"(the same step without AllReduce: {1e3 * summary['local_step_seconds']:.1f} ms)", flush=True)
    barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
