"""helpers.pipeline_plot: reading pipeline step records and drawing their timeline (notebook 10)."""

from types import SimpleNamespace

import pytest

from helpers.pipeline_plot import (
    bubble_fraction,
    busy,
    compute_order,
    fastest_step,
    plot_timeline,
    predicted_bubble,
    span,
    step_records,
)


def ideal_gpipe(stages, micro_batches, forward=1.0, backward=2.0):
    """Step records of a GPipe step in which every forward and backward takes the same time, sends are free."""
    records = {}
    for s in range(stages):
        events = [["F", m, (s + m) * forward, (s + m + 1) * forward] for m in range(micro_batches)]
        begin = (micro_batches + stages - 1) * forward
        for m in range(micro_batches):
            start = begin + (stages - 1 - s + m) * backward
            events.append(["B", m, start, start + backward])
        if s:
            events.append(["recv", 0, s * forward - 0.01, s * forward])
        records[s] = {"kind": "step", "schedule": "gpipe", "step": 0, "S": stages, "M": micro_batches,
                      "events": events}
    return records


@pytest.mark.parametrize(("stages", "micro_batches"), [(1, 4), (2, 8), (4, 4), (8, 2)])
def test_an_ideal_step_has_exactly_the_formulas_bubble(stages, micro_batches):
    records = ideal_gpipe(stages, micro_batches)
    assert span(records) == pytest.approx((micro_batches + stages - 1) * 3.0)
    assert bubble_fraction(records) == pytest.approx(predicted_bubble(stages, micro_batches))


def test_the_formula():
    assert predicted_bubble(1, 8) == 0
    assert predicted_bubble(2, 8) == pytest.approx(1 / 9)
    assert predicted_bubble(4, 4) == pytest.approx(3 / 7)


def test_busy_and_order_read_only_compute_events():
    record = ideal_gpipe(2, 3)[1]
    assert busy(record) == pytest.approx(3 * 1.0 + 3 * 2.0)
    assert busy(record, kinds=("recv",)) == pytest.approx(0.01)
    assert compute_order(record) == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("B", 1), ("B", 2)]


def test_step_records_picks_one_schedule_and_step():
    steps = {rank: [{**rec, "step": k} for k in range(3)] for rank, rec in ideal_gpipe(2, 2).items()}
    steps[0].append({"kind": "step", "schedule": "1f1b", "step": 0, "S": 2, "M": 2, "events": []})
    result = SimpleNamespace(ranks=[0, 1], records=lambda rank, kind: steps[rank] if kind == "step" else [])
    assert {r: rec["step"] for r, rec in step_records(result, "gpipe").items()} == {0: 2, 1: 2}
    assert step_records(result, "gpipe", step=1)[1]["step"] == 1
    assert list(step_records(result, "1f1b")) == [0]


def test_the_timeline_draws_one_bar_per_event():
    from matplotlib.figure import Figure

    records = ideal_gpipe(4, 4)
    fig = plot_timeline(records)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.patches) == sum(len(r["events"]) for r in records.values())
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"rank {r} (stage {r})" for r in range(4)]
    assert "gpipe" in ax.get_title()


def test_fastest_step_skips_the_warm_up_and_picks_the_shortest_span():
    def scaled(factor, step):
        return {rank: {**rec, "step": step, "events": [[k, m, a * factor, b * factor] for k, m, a, b in rec["events"]]}
                for rank, rec in ideal_gpipe(2, 2).items()}

    steps = [scaled(0.5, 0), scaled(2.0, 1), scaled(1.0, 2), scaled(3.0, 3)]   # step 0 is fastest, but warms up
    result = SimpleNamespace(ranks=[0, 1], records=lambda rank, kind: [s[rank] for s in steps])
    assert {rec["step"] for rec in fastest_step(result, "gpipe").values()} == {2}
    assert {rec["step"] for rec in fastest_step(result, "gpipe", skip=0).values()} == {0}
