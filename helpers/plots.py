"""Matplotlib figures for run results. Introduced in notebook 01 (per-rank loss curves).

Functions return a Figure and never change global state (no rcParams, no pyplot state left open).
"""

from __future__ import annotations

from pathlib import Path


def plot_loss(result, title: str | None = None, path: str | Path | None = None):
    """Per-rank training loss against step, one line per rank; saved to `path` when given."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for rank in result.ranks:
        steps = [r["step"] for r in result.records(rank, "step")]
        ax.plot(steps, result.losses(rank), label=f"rank {rank}", alpha=0.8, linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (this rank's batch)")
    ax.set_title(title or f"{len(result.ranks)} ranks, data parallel")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_rank_throughput(result, title: str | None = None, skip: int = 1):
    """Samples/s of every rank at every training step (notebook 04), from scripts/train.py's step records.

    The first `skip` steps (graph compilation) are left out; a dashed line marks each rank's median.
    """
    import statistics

    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for rank in result.ranks:
        records = result.records(rank, "step")[skip:]
        if not records:
            continue
        line, = ax.plot([r["step"] for r in records], [r["samples_per_s"] for r in records],
                        label=f"rank {rank}", alpha=0.75, linewidth=1.0)
        median = statistics.median(r["samples_per_s"] for r in records)
        ax.axhline(median, color=line.get_color(), linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("samples/s on this rank")
    ax.set_title(title or f"throughput per rank ({len(result.ranks)} ranks); dashed: median")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small", ncol=2)
    return fig


def plot_scaling(rows: list[dict], workers: int, title: str | None = None, path: str | Path | None = None):
    """Scaling of each network from 1 to `workers` ranks (notebook 04), from helpers.scaling.scaling_rows.

    Left: speedup of the whole job (aggregate samples/s at N over 1), with the ideal N and 1.0 marked.
    Right: one step at N ranks as shares: the same step measured without AllReduce (compute) and the rest
    (communication and waiting for peers), with the milliseconds written on each bar.
    """
    from matplotlib.figure import Figure

    nets = [r["net"] for r in rows]
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    speedups = [r["speedup"] for r in rows]
    bars = left.bar(nets, speedups, color=["tab:green" if s >= 1 else "tab:red" for s in speedups])
    for bar, row in zip(bars, rows):
        left.annotate(f"x{row['speedup']:.2f}\neff {row['efficiency']:.2f}", (bar.get_x() + bar.get_width() / 2,
                      bar.get_height()), ha="center", va="bottom", fontsize="small")
    left.axhline(workers, color="gray", linestyle="--", linewidth=1, label=f"ideal: x{workers}")
    left.axhline(1, color="black", linewidth=0.8, label="x1: no gain")
    left.set_ylim(0, max(workers, *speedups) * 1.45)
    left.set_ylabel(f"speedup, {workers} ranks vs 1 (aggregate samples/s)")
    left.legend(fontsize="small", loc="upper left", ncol=2)
    left.set_title("throughput of the whole job")

    for i, row in enumerate(rows):
        step = row[f"step_ms_{workers}"]
        compute = min(row[f"local_ms_{workers}"], step)
        share = 1 - compute / step
        right.barh(i, 1 - share, height=0.5, color="tab:blue",
                   label="compute: the same step without AllReduce" if i == 0 else None)
        right.barh(i, share, left=1 - share, height=0.5, color="tab:orange",
                   label="communication and waiting for peers" if i == 0 else None)
        right.annotate(f"{step:.0f} ms/step: {compute:.0f} compute + {step - compute:.0f} comm; "
                       f"{row['grad_MB']:.2g} MB of gradients", (0.0, i + 0.3), fontsize="small", va="top")
    right.set_yticks(range(len(rows)), nets)
    right.set_ylim(len(rows) - 0.2, -0.5)
    right.set_xlim(0, 1)
    right.xaxis.set_major_formatter(lambda x, _: f"{100 * x:.0f}%")
    right.set_xlabel(f"share of one step at {workers} ranks")
    right.legend(fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1, frameon=False)
    fig.suptitle(title or f"data-parallel scaling, 1 -> {workers} ranks")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
