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
