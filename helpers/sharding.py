"""Plumbing for notebook 03 (data sharding): read what its probe wrote, draw shard maps.

The lesson itself (building shards, the padding arithmetic, the checks) is in the notebook; the
script its ranks run is the notebook's `%%writefile scripts/shard_probe.py` cell. Matplotlib is
imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

IDS_FILE = "ids.json"   # what scripts/shard_probe.py writes into RUN/rank_<k>/


def read_probe(run_dir: str | Path) -> dict[int, dict]:
    """{rank: record} from every RUN/rank_<k>/ids.json, in rank order."""
    records = {}
    for path in Path(run_dir).glob(f"rank_*/{IDS_FILE}"):
        records[int(path.parent.name.split("_")[1])] = json.loads(path.read_text(encoding="utf-8"))
    return dict(sorted(records.items()))


def read_counts(shards: Sequence[Sequence[int]], num_samples: int) -> np.ndarray:
    """counts[rank, sample] = how often that rank read that sample."""
    counts = np.zeros((len(shards), num_samples), dtype=int)
    for rank, ids in enumerate(shards):
        np.add.at(counts[rank], np.asarray(ids, dtype=int), 1)
    return counts


def _draw(fig, spec, shards, num_samples: int, title: str) -> None:
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    counts = read_counts(shards, num_samples)
    ranks = len(shards)
    inner = spec.subgridspec(2, 1, height_ratios=[max(ranks, 2), 1], hspace=0.08)
    top, bottom = fig.add_subplot(inner[0]), fig.add_subplot(inner[1])
    # Top: cell (rank, sample) takes the rank's colour when that rank read the sample.
    owner = np.where(counts > 0, np.arange(1, ranks + 1)[:, None], 0)
    top.imshow(owner, aspect="auto", interpolation="nearest",
               cmap=ListedColormap(["#f4f4f4"] + [f"C{r % 10}" for r in range(ranks)]),
               norm=BoundaryNorm(np.arange(-0.5, ranks + 1.5), ranks + 1))
    top.set_yticks(range(ranks), [f"rank {r}" for r in range(ranks)])
    top.set_xticks([])
    top.set_title(title, fontsize=10)
    # Bottom: reads of each sample by all ranks together: 0 missing, 1 once, 2+ duplicated.
    total = np.minimum(counts.sum(axis=0), 2)[None, :]
    bottom.imshow(total, aspect="auto", interpolation="nearest", cmap=ListedColormap(["black", "#bdbdbd", "crimson"]),
                  norm=BoundaryNorm([-0.5, 0.5, 1.5, 2.5], 3))
    if num_samples > 100:   # one pixel per sample is too thin to see: mark the exceptions with lines
        for value, colour in ((0, "black"), (2, "crimson")):
            bottom.vlines(np.flatnonzero(total[0] == value), -0.5, 0.5, colors=colour, linewidth=0.8)
    bottom.set_yticks([0], ["all"])
    bottom.set_xlabel("sample index")
    if num_samples <= 40:
        top.set_xticks(range(num_samples), [])
        bottom.set_xticks(range(num_samples), [str(i) for i in range(num_samples)], fontsize=7)
    handles = [Patch(color="black", label="never read"), Patch(color="#bdbdbd", label="read once"),
               Patch(color="crimson", label="read 2+ times")]
    bottom.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.9), ncol=3, fontsize=8, frameon=False)


def plot_shard_maps(panels: Sequence[tuple[str, Sequence[Sequence[int]], int]], ncols: int = 2):
    """One rank x sample-index picture per (title, shards, num_samples) panel; returns the Figure.

    Each panel: a row per rank, coloured where that rank read the sample, and below it a strip of
    how often all ranks together read each sample (black: never, grey: once, red: twice or more).
    """
    import matplotlib.pyplot as plt

    ncols = max(1, min(ncols, len(panels)))
    nrows = -(-len(panels) // ncols)
    fig = plt.figure(figsize=(6.2 * ncols, 2.9 * nrows), layout="constrained")
    grid = fig.add_gridspec(nrows, ncols)
    for k, (title, shards, num_samples) in enumerate(panels):
        _draw(fig, grid[k // ncols, k % ncols], shards, num_samples, title)
    return fig
