"""Measure and picture how MindSpore splits a dataset across ranks (数据切分). Introduced in notebook 03.

Nothing here computes a shard by formula: `shard_indices` builds real MindSpore datasets with
`num_shards`/`shard_id` (one per rank, in this process) and records the sample ids each one yields.
`coverage_report` then says whether the shards are disjoint and complete and how many samples were
read twice (the padding MindSpore adds when the size does not divide). `plot_shard_map` draws the
rank x sample-index picture. `read_rank_ids` loads what real ranks recorded (helpers.shard_probe).

MindSpore and matplotlib are imported inside the functions, so importing this module is cheap and
has no side effects.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

FORMS = ("slices", "source", "sampler")
IDS_FILE = "ids.json"   # what helpers.shard_probe writes into RUN/rank_<k>/


class IndexSource:
    """A random-access source (`__getitem__` + `__len__`) whose row i is just the sample id i.

    This is the shape MindSpore needs to shard a `GeneratorDataset`: it asks for rows by index, so
    it can hand each rank its own indices. A plain generator function cannot be sharded.
    """

    def __init__(self, num_samples: int):
        self.num_samples = num_samples

    def __getitem__(self, index):
        return (np.array(index, dtype=np.int32),)   # an ndarray, not a Python int: numpy<2, nb 03

    def __len__(self):
        return self.num_samples


def expected_padding(num_samples: int, num_shards: int) -> int:
    """Extra reads needed so every shard has ceil(num_samples / num_shards) rows."""
    return -num_samples % num_shards


def per_shard(num_samples: int, num_shards: int) -> int:
    """Rows each shard holds: ceil(num_samples / num_shards)."""
    return -(-num_samples // num_shards)


@contextmanager
def dataset_seed(seed: int):
    """Set `mindspore.dataset.config.set_seed(seed)` for a block, then restore the previous seeds.

    `set_seed` also reseeds Python's `random` and `numpy.random`; their states are restored too, so a
    measurement does not change what the rest of a notebook draws.
    """
    import mindspore.dataset as ds

    previous, py_state, np_state = ds.config.get_seed(), random.getstate(), np.random.get_state()
    ds.config.set_seed(seed)
    try:
        yield
    finally:
        ds.config.set_seed(previous)
        random.setstate(py_state)
        np.random.set_state(np_state)


def build_index_dataset(num_samples: int, num_shards: int, shard_id: int, shuffle: bool = False,
                        form: str = "slices"):
    """One rank's shard of a dataset whose only column "index" holds the sample id.

    `form` picks one of the three correct ways to shard: "slices" (`NumpySlicesDataset`), "source" (a
    `GeneratorDataset` over a random-access `IndexSource` with `num_shards`/`shard_id`), or "sampler"
    (the same source with a `DistributedSampler`).
    """
    import mindspore.dataset as ds

    if form == "slices":
        return ds.NumpySlicesDataset({"index": np.arange(num_samples, dtype=np.int32)}, shuffle=shuffle,
                                     num_shards=num_shards, shard_id=shard_id)
    if form == "source":
        return ds.GeneratorDataset(IndexSource(num_samples), ["index"], shuffle=shuffle,
                                   num_shards=num_shards, shard_id=shard_id)
    if form == "sampler":
        sampler = ds.DistributedSampler(num_shards, shard_id, shuffle=shuffle)
        return ds.GeneratorDataset(IndexSource(num_samples), ["index"], sampler=sampler)
    raise ValueError(f"unknown form {form!r}: use one of {', '.join(FORMS)}")


def read_ids(dataset, epochs: int = 1, column: str = "index") -> list[list[int]]:
    """Iterate `dataset` for `epochs` epochs; return the ids of `column` it yielded, one list per epoch.

    Works for batched and unbatched datasets (a batch contributes all its ids, in order).
    """
    iterator = dataset.create_dict_iterator(num_epochs=epochs, output_numpy=True)
    return [[int(i) for row in iterator for i in np.ravel(row[column])] for _ in range(epochs)]


def shard_indices(num_samples: int, num_shards: int, shuffle: bool = False, seed: int | Sequence[int] = 0,
                  epochs: int = 1, form: str = "slices") -> list[list[list[int]]]:
    """ids[rank][epoch]: the sample ids each rank's real MindSpore dataset yields, in order.

    Every rank's shard is built in this process with `num_shards`/`shard_id`, exactly as each rank
    of a job would build it. `seed` is the dataset seed: one int shared by all ranks (correct), or
    one seed per rank, which is what `ms.set_seed(rank)` in a training script amounts to (a bug).
    """
    if num_samples < 1 or num_shards < 1 or epochs < 1:
        raise ValueError("num_samples, num_shards and epochs must all be at least 1")
    seeds = [seed] * num_shards if isinstance(seed, int) else list(seed)
    if len(seeds) != num_shards:
        raise ValueError(f"got {len(seeds)} seeds for {num_shards} shards: "
                         "give one int or one seed per shard")
    shards = []
    for rank in range(num_shards):
        with dataset_seed(seeds[rank]):
            dataset = build_index_dataset(num_samples, num_shards, rank, shuffle=shuffle, form=form)
            shards.append(read_ids(dataset, epochs))
    return shards


def epoch_of(shards: list[list[list[int]]], epoch: int) -> list[list[int]]:
    """The ids each rank read in one epoch, from `shard_indices`' ids[rank][epoch]."""
    return [per_epoch[epoch] for per_epoch in shards]


def coverage_report(shards: Sequence[Sequence[int]], num_samples: int) -> dict:
    """Disjointness, completeness and padding of one epoch's shards (`shards[rank]` = ids that rank read).

    - reads: rows read by all ranks together; unique: distinct samples among them
    - missing: samples nobody read (complete when 0)
    - overlap: distinct samples read by more than one rank (disjoint when 0)
    - padding: reads - unique, the duplicated reads; MindSpore needs (-num_samples) % num_shards of them
    - padding_ids: the samples read more than once
    """
    counts = Counter(i for ids in shards for i in ids)
    outside = sorted(i for i in counts if not 0 <= i < num_samples)
    if outside:
        raise ValueError(f"ids outside 0..{num_samples - 1}: {outside[:5]}")
    owners = Counter(i for ids in shards for i in set(ids))
    reads = sum(counts.values())
    report = {
        "samples": num_samples,
        "ranks": len(shards),
        "per_rank": [len(ids) for ids in shards],
        "reads": reads,
        "unique": len(counts),
        "missing": num_samples - len(counts),
        "overlap": sum(1 for n in owners.values() if n > 1),
        "padding": reads - len(counts),
        "expected_padding": expected_padding(num_samples, len(shards)),
        "padding_ids": sorted(i for i, n in counts.items() if n > 1),
    }
    report["complete"] = report["missing"] == 0
    report["disjoint"] = report["overlap"] == 0
    return report


def overlap_matrix(shards: Sequence[Sequence[int]]) -> np.ndarray:
    """m[a, b] = how many distinct samples ranks a and b both read (the diagonal: a rank's own count)."""
    sets = [set(ids) for ids in shards]
    return np.array([[len(a & b) for b in sets] for a in sets], dtype=int)


def read_counts(shards: Sequence[Sequence[int]], num_samples: int) -> np.ndarray:
    """counts[rank, sample] = how often that rank read that sample."""
    counts = np.zeros((len(shards), num_samples), dtype=int)
    for rank, ids in enumerate(shards):
        np.add.at(counts[rank], np.asarray(ids, dtype=int), 1)
    return counts


def try_dataset(build) -> dict:
    """Build a dataset with `build()` and read one row; report where it failed and MindSpore's key message.

    Some sharding mistakes raise when the dataset is created, others only when it is first read.
    Returns {"stage": "construction" | "iteration" | "ok", "error": type name, "message": one line}.
    """
    stage = "construction"
    try:
        dataset = build()
        stage = "iteration"
        next(dataset.create_tuple_iterator(num_epochs=1, output_numpy=True))
    except Exception as error:  # reporting any MindSpore error is the point
        return {"stage": stage, "error": type(error).__name__, "message": key_message(error)}
    return {"stage": "ok", "error": "", "message": ""}


def key_message(error: BaseException) -> str:
    """The one line of a (often 20-line) MindSpore error that says what went wrong."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for prefix in ("Invalid Python function", "ValueError:", "TypeError:", "[ERROR]"):
        for line in lines:
            if line.startswith(prefix):
                return line.removeprefix("[ERROR] ")
    return lines[0] if lines else repr(error)


def format_table(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """A plain-text table of dicts (right-aligned columns), for printing in a notebook."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0])
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[j]) for r in cells)) for j, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def read_rank_ids(run_dir: str | Path) -> dict[int, dict]:
    """{rank: record} from every RUN/rank_<k>/ids.json that helpers.shard_probe wrote."""
    records = {}
    for path in Path(run_dir).glob(f"rank_*/{IDS_FILE}"):
        records[int(path.parent.name.split("_")[1])] = json.loads(path.read_text(encoding="utf-8"))
    return dict(sorted(records.items()))


def _draw(fig, spec, shards, num_samples: int, title: str) -> None:
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    counts = read_counts(shards, num_samples)
    ranks = len(shards)
    inner = spec.subgridspec(2, 1, height_ratios=[max(ranks, 2), 1], hspace=0.08)
    top, bottom = fig.add_subplot(inner[0]), fig.add_subplot(inner[1])

    # Top: cell (rank, sample) takes the rank's colour when that rank read the sample.
    palette = ["#f4f4f4"] + [f"C{r % 10}" for r in range(ranks)]
    owner = np.where(counts > 0, np.arange(1, ranks + 1)[:, None], 0)
    top.imshow(owner, aspect="auto", interpolation="nearest", cmap=ListedColormap(palette),
               norm=BoundaryNorm(np.arange(-0.5, ranks + 1.5), ranks + 1))
    top.set_yticks(range(ranks), [f"rank {r}" for r in range(ranks)])
    top.set_xticks([])
    top.set_title(title, fontsize=10)

    # Bottom: reads of each sample by all ranks together: 0 missing, 1 once, 2+ duplicated.
    total = np.minimum(counts.sum(axis=0), 2)[None, :]
    strip = ListedColormap(["black", "#bdbdbd", "crimson"])
    bottom.imshow(total, aspect="auto", interpolation="nearest", cmap=strip,
                  norm=BoundaryNorm([-0.5, 0.5, 1.5, 2.5], 3))
    if num_samples > 100:   # one pixel per sample is too thin to see: mark the exceptions with lines
        for value, colour in ((0, "black"), (2, "crimson")):
            ids = np.flatnonzero(total[0] == value)
            bottom.vlines(ids, -0.5, 0.5, colors=colour, linewidth=0.8)
    bottom.set_yticks([0], ["all"])
    bottom.set_xlabel("sample index")
    if num_samples <= 40:
        top.set_xticks(range(num_samples), [])
        bottom.set_xticks(range(num_samples), [str(i) for i in range(num_samples)], fontsize=7)
    handles = [Patch(color="black", label="never read"), Patch(color="#bdbdbd", label="read once"),
               Patch(color="crimson", label="read 2+ times")]
    bottom.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.9), ncol=3, fontsize=8,
                  frameon=False)


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


def plot_shard_map(shards: Sequence[Sequence[int]], num_samples: int, title: str = ""):
    """The rank x sample-index picture of one epoch's shards; returns the Figure."""
    return plot_shard_maps([(title, shards, num_samples)], ncols=1)
