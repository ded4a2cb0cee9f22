"""Notebook 12's results: what each rank of a 3D-parallel job wrote (rank_<k>/metrics.jsonl and
weights_<layout>.npz), per layout, and the figures of its mesh and its costs."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

from helpers.mesh import Mesh


def _lines(run_dir: str | Path) -> list[tuple[int, dict]]:
    out = []
    for folder in sorted(Path(run_dir).glob("rank_*"), key=lambda p: int(p.name.split("_")[1])):
        rank = int(folder.name.split("_")[1])
        out += [(rank, json.loads(line)) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return out


def layouts(run_dir: str | Path) -> dict[str, dict]:
    """Per layout ("DPxPPxTP", in the order run): the loss per step (the last stage's, the same on each of its
    ranks), and per step and rank the seconds, communication seconds, bytes sent by kind and activations held;
    per rank its coordinates and the exact bytes of its weights and of its slice of Adam's state."""
    runs: dict[str, dict] = {}
    for rank, line in _lines(run_dir):
        run = runs.setdefault(line["layout"], {"loss": {}, "steps": {}, "ranks": {}})
        if line["kind"] == "step":
            if "loss" in line:
                run["loss"].setdefault(line["step"], line["loss"])
            run["steps"].setdefault(line["step"], {})[rank] = line
        else:
            run["ranks"][rank] = line
    for name, run in runs.items():
        run["layout"] = name
        run["dp"], run["pp"], run["tp"] = (int(n) for n in name.split("x"))
        run["loss"] = [run["loss"][step] for step in sorted(run["loss"])]
    return runs


def assembled_weights(run_dir: str | Path, run: dict, reference: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The whole model's weights after a layout's run (one of `layouts(run_dir)`), put together from its ranks'
    slices: each weight from the ranks of data-parallel replica 0, a tensor-parallel slice joined along the axis
    where it is smaller than the `reference` weight of the same name."""
    layout = run["layout"]
    slices: dict[str, dict[int, np.ndarray]] = {}
    for rank, info in run["ranks"].items():
        d, _, t = info["coords"]
        if d == 0:
            with np.load(Path(run_dir) / f"rank_{rank}" / f"weights_{layout}.npz") as saved:
                for name in saved.files:
                    slices.setdefault(name, {})[t] = saved[name]
    whole = {}
    for name, parts in slices.items():
        first = parts[0]
        axis = next((i for i, (a, b) in enumerate(zip(first.shape, reference[name].shape)) if a != b), None)
        whole[name] = first if axis is None else np.concatenate([parts[t] for t in sorted(parts)], axis=axis)
    missing = set(reference) - set(whole)
    if missing:
        raise ValueError(f"{layout}: no rank saved {sorted(missing)[:3]}")
    return whole


def costs(run: dict, skip: int = 1) -> dict:
    """One layout's costs, steps after the first `skip` (warm-up): the median step time (the slowest rank's),
    the median share of it each rank spent in send/recv and data-parallel collectives (the mean over ranks),
    bytes sent per step by the rank that sends most, split by kind, and the largest weights + Adam slice."""
    steps = [run["steps"][s] for s in sorted(run["steps"])][skip:]
    seconds = statistics.median(max(r["seconds"] for r in step.values()) for step in steps)
    share = statistics.median(statistics.mean(r["comm_seconds"] / r["seconds"] for r in step.values())
                              for step in steps)
    last = steps[-1]
    busiest = max(last, key=lambda rank: sum(last[rank]["sent"].values()))
    states = {rank: info["param_bytes"] + info["optimizer_bytes"] for rank, info in run["ranks"].items()}
    tokens = next(iter(run["ranks"].values()))["tokens_per_step"]
    return {"seconds": seconds, "tokens_per_s": tokens / seconds, "comm_share": share,
            "sent": dict(last[busiest]["sent"]), "sent_rank": busiest,
            "state_bytes": max(states.values()), "held_bytes": max(r["held_bytes"] for r in last.values())}


def draw_mesh(mesh: Mesh, title: str | None = None, per_node: int | None = None):
    """The ranks of a (dp, pp, tp) mesh as boxes: a row per data-parallel replica, a column block per pipeline
    stage, tensor-parallel neighbours side by side in one frame. Each box shows the rank its mesh's order gives;
    with `per_node`, also its node (per_node consecutive ranks a node), and boxes on odd nodes are hatched."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    dp, pp, tp = (mesh.degrees[a] for a in ("dp", "pp", "tp"))
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * pp * tp + 0.4 * pp, 0.9 + (1.1 if per_node else 0.9) * dp))
    colours = plt.get_cmap("tab10")
    for rank in range(mesh.size):
        c = mesh.coords(rank)
        x, y = c["pp"] * (tp + 0.4) + c["tp"], dp - 1 - c["dp"]
        node = rank // per_node if per_node else 0
        ax.add_patch(Rectangle((x + 0.05, y + 0.1), 0.9, 0.8, facecolor=colours(c["pp"] % 10), alpha=0.35,
                               hatch="//" if node % 2 else None, edgecolor="grey", lw=0))
        label = f"rank {rank}\n({c['dp']},{c['pp']},{c['tp']})" + (f"\nnode {node}" if per_node else "")
        ax.text(x + 0.5, y + 0.5, label, ha="center", va="center", fontsize=8)
    for d in range(dp):
        for p in range(pp):
            ax.add_patch(Rectangle((p * (tp + 0.4), dp - 1 - d + 0.05), tp, 0.9, fill=False, lw=1.5))
    ax.set_xlim(-0.2, pp * (tp + 0.4))
    ax.set_ylim(-0.1, dp + 0.1)
    ax.set_xticks([p * (tp + 0.4) + tp / 2 for p in range(pp)], [f"stage {p}" for p in range(pp)])
    ax.set_yticks([dp - 1 - d + 0.5 for d in range(dp)], [f"replica {d}" for d in range(dp)])
    ax.set_title(title or f"dp {dp} x pp {pp} x tp {tp}\na frame is a tensor-parallel group (coords: d, p, t)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def draw_costs(table: list[dict], title: str | None = None):
    """Bytes sent per step by the busiest rank, by kind, and the step time, one bar per layout."""
    import matplotlib.pyplot as plt

    names = [row["layout"] for row in table]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    bottom = np.zeros(len(table))
    for kind, colour in (("tp", "tab:blue"), ("pp", "tab:orange"), ("dp", "tab:green")):
        values = np.array([row["sent"][kind] / 2**20 for row in table])
        left.bar(names, values, bottom=bottom, color=colour, label=kind)
        bottom += values
    left.set_ylabel("MiB sent per step (busiest rank)")
    left.legend(title="sent for")
    right.bar(names, [row["seconds"] * 1000 for row in table], color="tab:gray")
    right.set_ylabel("step time, ms (slowest rank, median)")
    for ax in (left, right):
        ax.tick_params(axis="x", rotation=45)
    fig.suptitle(title or "what each layout costs (dp x pp x tp)")
    fig.tight_layout()
    return fig
