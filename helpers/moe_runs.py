"""What notebook 13's runs of train_moe.py left behind, read back and drawn.

Each rank k of a run wrote RUN/rank_k/metrics.jsonl (a line per step and per setting) and RUN/rank_k/<setting>.npz:
its weights ("weight:NAME"), its first step's gradients after the reduction ("grad:NAME") and its routing decisions
("choices": steps x layers x its tokens x k). The experts' arrays ("...moe.w1" and the like) are split along their
first axis, E / P experts per rank; every other array is whole on every rank.

It also holds a NumPy model of `all_to_all_single`, with which notebook 13 and its tests check, on CPU, how moe.py
pads the empty blocks of an all-to-all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def is_expert(key: str) -> bool:
    return ".moe.w" in key


def rank_arrays(run_dir: str | Path, setting: str) -> list[dict[str, np.ndarray]]:
    """Every rank's arrays for `setting` (e.g. "aux0.01_cf0"), in rank order."""
    files = sorted(Path(run_dir).glob(f"rank_*/{setting}.npz"), key=lambda p: int(p.parent.name.split("_")[1]))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no rank wrote {setting}.npz (did the run train that setting?)")
    return [dict(np.load(f)) for f in files]


def assembled(run_dir: str | Path, setting: str) -> dict[str, np.ndarray]:
    """The whole model's arrays from all ranks: experts put back together in rank order, the routing decisions
    of every rank's tokens side by side (the job's batch in order), every other array taken from rank 0 after
    checking that every rank holds the same."""
    ranks = rank_arrays(run_dir, setting)
    whole = {}
    for key in ranks[0]:
        if key == "choices":
            whole[key] = np.concatenate([r[key] for r in ranks], axis=2)
        elif is_expert(key):
            whole[key] = np.concatenate([r[key] for r in ranks], axis=0)
        else:
            for k, r in enumerate(ranks[1:], 1):
                if not np.array_equal(r[key], ranks[0][key]):
                    raise AssertionError(f"{key}: rank {k} holds other values than rank 0 (a missing all-reduce?)")
            whole[key] = ranks[0][key]
    return whole


def relative_gaps(reference: dict[str, np.ndarray], other: dict[str, np.ndarray], prefix: str) -> dict[str, float]:
    """max |other - reference| / max |reference| for every array whose key starts with `prefix`."""
    return {key.removeprefix(prefix): float(np.abs(other[key] - ref).max() / np.abs(ref).max())
            for key, ref in reference.items() if key.startswith(prefix)}


def steps(result, setting: str, rank: int = 0) -> list[dict]:
    """Rank `rank`'s step records for `setting` in a launch's result (helpers.launcher.RunResult)."""
    return [m for m in result.records(rank, "step") if m["run"] == setting]


def run_record(result, setting: str, rank: int = 0) -> dict:
    """Rank `rank`'s record of the whole run of `setting`: its tokens per step and its bytes of weights."""
    return next(m for m in result.records(rank, "run") if m["run"] == setting)


def imbalance(records: list[dict]) -> np.ndarray:
    """Max over mean tokens per expert, steps x layers: 1 is perfect balance, E / k all tokens on k experts."""
    return np.array([[max(load) / np.mean(load) for load in r["load"]] for r in records])


def draw_load(settings: dict[str, list[dict]], experts: int, top_k: int):
    """Left: tokens per expert at the last step, per setting; right: imbalance per step, mean over layers."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained")
    width = 0.8 / len(settings)
    for i, (name, records) in enumerate(settings.items()):
        load = np.mean(records[-1]["load"], axis=0)
        left.bar(np.arange(experts) + i * width, load, width, label=name)
        right.plot(imbalance(records).mean(axis=1), label=name)
    left.set(xlabel="expert", ylabel="tokens (mean over layers)", title="the last step's load",
             xticks=np.arange(experts) + 0.4 - width / 2, xticklabels=range(experts))
    right.axhline(1, color="grey", linewidth=0.8)
    right.axhline(experts / top_k, color="grey", linewidth=0.8, linestyle=":")
    right.set(xlabel="step", ylabel="max / mean tokens per expert", title="imbalance (dotted: all on k experts)")
    for ax in (left, right):
        ax.legend(fontsize=8)
    return fig


def all_to_all_single(inputs: list[np.ndarray], send, recv) -> list[np.ndarray]:
    """What `all_to_all_single` computes, for every rank at once, in NumPy: rank i cuts `inputs[i]` into blocks of
    send[i][j] rows and sends block j to rank j; rank j stacks the blocks it receives in rank order. Stops with an
    AssertionError where a rank's sizes do not add up or a receiver expects (recv[j][i]) other than what is sent."""
    ranks = len(inputs)
    blocks = []
    for i, x in enumerate(inputs):
        assert len(x) == sum(send[i]), f"rank {i}: {len(x)} rows, split sizes {list(send[i])}"
        blocks.append(np.split(x, np.cumsum(send[i])[:-1]))
    for i in range(ranks):
        for j in range(ranks):
            assert len(blocks[i][j]) == recv[j][i], f"rank {j} expects {recv[j][i]} rows from rank {i}, gets " \
                                                    f"{len(blocks[i][j])}"
    return [np.concatenate([blocks[i][j] for i in range(ranks)]) for j in range(ranks)]


def check_padding(padded_splits, rng: np.random.Generator, trials: int = 300, width: int = 3) -> int:
    """Check notebook 13's `padded_splits` (moe.py) on random exchanges among 1 to 8 ranks whose split sizes are
    mostly zeros, the all-zero one included: after padding no block is empty, senders and receivers agree on every
    size, and each rank keeps exactly the rows the exchange without padding gives it. Returns how many empty blocks
    were padded; an AssertionError names the first failure."""
    padded = 0
    for trial in range(trials):
        ranks = int(rng.integers(1, 9))
        counts = rng.integers(0, 4, (ranks, ranks)) * (rng.random((ranks, ranks)) < 0.5) * (trial > 0)  # i -> j rows
        inputs = [rng.standard_normal((int(counts[i].sum()), width)) for i in range(ranks)]
        expected = all_to_all_single(inputs, counts, counts.T)
        plans = [padded_splits(counts[i], counts[:, i]) for i in range(ranks)]   # (send, recv, take, keep) per rank
        send, recv = [p[0] for p in plans], [p[1] for p in plans]
        assert min(min(s) for s in send) >= 1 and min(min(r) for r in recv) >= 1, \
            f"{ranks} ranks, rows {counts.tolist()}: an empty block is left"
        arrived = all_to_all_single([np.concatenate([x, np.zeros((1, width))])[p[2]] for x, p in zip(inputs, plans)],
                                    send, recv)
        for j, p in enumerate(plans):
            assert np.array_equal(arrived[j][p[3]], expected[j]), \
                f"{ranks} ranks, rows {counts.tolist()}: rank {j} keeps other rows than the exchange gives it"
        padded += int((counts == 0).sum())
    return padded
