"""Read and draw a pipeline step's timestamps. Introduced in notebook 10 (pipeline parallelism).

Notebook 10's `scripts/pipeline_by_hand.py` writes one "step" record per rank and step: its schedule, S and M,
and `events`, a list of [kind, micro-batch, start, end] in seconds from the step's start, where kind is
"F" (forward), "B" (backward), "send" or "recv". This module only reads those records and draws them; the
lesson (what a schedule is, why it has a bubble) is in the notebook.
"""

from __future__ import annotations

COMPUTE = ("F", "B")


def step_records(result, schedule: str, step: int | None = None) -> dict[int, dict]:
    """{rank: its step record} for one schedule and step (the last step when `step` is None)."""
    by_rank = {}
    for rank in result.ranks:
        records = [r for r in result.records(rank, "step") if r["schedule"] == schedule]
        if records:
            by_rank[rank] = records[-1] if step is None else next(r for r in records if r["step"] == step)
    return by_rank


def fastest_step(result, schedule: str, skip: int = 1) -> dict[int, dict]:
    """{rank: record} of the step with the shortest span after the first `skip` (warm-up) steps.

    On a shared machine it is the step least disturbed by other work; every rank's record of that step.
    """
    steps = sorted({r["step"] for rank in result.ranks for r in result.records(rank, "step")
                    if r["schedule"] == schedule})
    candidates = [step_records(result, schedule, step) for step in steps[skip:] or steps]
    return min(candidates, key=span)


def span(records: dict[int, dict]) -> float:
    """Seconds from the step's start to the last event of any rank."""
    return max(end for record in records.values() for _, _, _, end in record["events"])


def busy(record: dict, kinds=COMPUTE) -> float:
    """Seconds one rank spent in events of the given kinds."""
    return sum(end - start for kind, _, start, end in record["events"] if kind in kinds)


def bubble_fraction(records: dict[int, dict]) -> float:
    """The share of the step (ranks x span) in which no rank computes: 1 - sum of compute / (ranks * span)."""
    total = span(records)
    return 1 - sum(busy(r) for r in records.values()) / (len(records) * total)


def predicted_bubble(stages: int, micro_batches: int) -> float:
    """(S - 1) / (M + S - 1): the bubble of GPipe and 1F1B when every stage costs the same and sends are free."""
    return (stages - 1) / (micro_batches + stages - 1)


def compute_order(record: dict) -> list[tuple[str, int]]:
    """The (kind, micro-batch) of this rank's forwards and backwards, in the order they ran."""
    return [(kind, m) for kind, m, _, _ in sorted(record["events"], key=lambda e: e[2]) if kind in COMPUTE]


def plot_timeline(records: dict[int, dict], title: str | None = None, ax=None):
    """One row per rank, one bar per forward (solid) or backward (hatched), coloured by micro-batch.

    Sends and receives are thin grey ticks under each row. Returns the Figure (a new one unless `ax` is given).
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    if ax is None:
        fig = Figure(figsize=(10, 0.55 * len(records) + 1.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    first = next(iter(records.values()))
    micro_batches = first["M"]
    colours = [f"C{m % 10}" for m in range(micro_batches)]
    for rank, record in records.items():
        for kind, m, start, end in record["events"]:
            if kind in COMPUTE:
                ax.barh(rank, (end - start) * 1000, left=start * 1000, height=0.7, color=colours[m],
                        hatch="//" if kind == "B" else None, edgecolor="black", linewidth=0.4)
            else:
                ax.barh(rank + 0.42, (end - start) * 1000, left=start * 1000, height=0.12, color="0.5")
    ax.set_yticks(list(records), [f"rank {r} (stage {r})" for r in records])
    ax.invert_yaxis()
    ax.set_xlabel("ms from the step's start")
    ax.set_title(title or f"{first['schedule']}: S={first['S']}, M={micro_batches}")
    handles = [Patch(color=colours[m], label=f"micro-batch {m}") for m in range(micro_batches)]
    handles += [Patch(facecolor="white", edgecolor="black", hatch="//", label="backward"),
                Patch(color="0.5", label="send / recv")]
    ax.legend(handles=handles, fontsize="x-small", ncol=min(6, len(handles)), loc="upper center",
              bbox_to_anchor=(0.5, -0.25 if len(records) < 3 else -0.12), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig
