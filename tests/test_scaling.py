"""helpers.scaling (reading notebook 04's scaling records) and notebook 04's scripts/scaling.py in a real launch."""

import json
import math
from pathlib import Path

import pytest

from helpers import launch
from helpers.launcher import RunResult, read_metrics
from helpers.scaling import (
    SUMMARY_KIND,
    aggregate_throughput,
    format_rows,
    job_cores,
    other_cores,
    scaling_efficiency,
    scaling_rows,
    summaries,
)
from helpers.scripts import write_script


def test_scaling_efficiency():
    assert scaling_efficiency(200.0, 100.0, 2) == 1.0     # linear
    assert scaling_efficiency(100.0, 100.0, 2) == 0.5     # no gain
    assert scaling_efficiency(80.0, 100.0, 2) == 0.4      # slower than one worker
    assert scaling_efficiency(100.0, 100.0, 1) == 1.0
    with pytest.raises(ValueError):
        scaling_efficiency(1.0, 0.0, 2)
    with pytest.raises(ValueError):
        scaling_efficiency(1.0, 1.0, 0)


def _summary(rank, net, world, step_seconds, local_seconds, params, batch=32, machine=None, own=1.0):
    comm = max(step_seconds - local_seconds, 0.0)
    return {"rank": rank, "kind": SUMMARY_KIND, "net": net, "world": world, "batch_size": batch,
            "step_seconds": step_seconds, "local_step_seconds": local_seconds, "comm_seconds": comm,
            "comm_share": comm / step_seconds, "samples_per_s": batch / step_seconds, "params": params,
            "grad_bytes": 4 * params, "allreduce_seconds": 4 * params / 200e6,
            "window_seconds": 10.0, "machine_cpu_seconds": machine, "own_cpu_seconds": own, "cores": 2}


def _result(tmp_path, name, records_by_rank):
    run_dir = tmp_path / name
    for rank, records in records_by_rank.items():
        folder = run_dir / f"rank_{rank}"
        folder.mkdir(parents=True)
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return RunResult(returncode=0, wall_time=1.0, run_dir=run_dir, command=[], metrics=read_metrics(run_dir))


def test_rows_from_records(tmp_path):
    """Records written the way the worker writes them: a 1-rank and a 2-rank launch."""
    one = _result(tmp_path, "one", {0: [_summary(0, "mlp", 1, 0.1, 0.1, 1000), _summary(0, "conv", 1, 0.2, 0.2, 10)]})
    many = _result(tmp_path, "many", {
        rank: [_summary(rank, "mlp", 2, 0.4, 0.1, 1000), _summary(rank, "conv", 2, 0.2, 0.19, 10)] for rank in (0, 1)})
    assert set(summaries(many)) == {"mlp", "conv"}
    assert aggregate_throughput(one, "mlp") == pytest.approx(320.0)
    assert aggregate_throughput(many, "mlp") == pytest.approx(160.0)
    with pytest.raises(KeyError):
        aggregate_throughput(one, "simple")

    rows = {row["net"]: row for row in scaling_rows(one, many)}
    assert list(rows) == ["mlp", "conv"], "in the order of NETS"
    mlp, conv = rows["mlp"], rows["conv"]
    assert mlp["speedup"] == pytest.approx(0.5) and mlp["efficiency"] == pytest.approx(0.25)
    assert conv["speedup"] == pytest.approx(2.0) and conv["efficiency"] == pytest.approx(1.0)
    assert mlp["comm_share"] == pytest.approx(0.75) and mlp["comm_ms_2"] == pytest.approx(300.0)
    assert mlp["step_ms_1"] == pytest.approx(100.0) and mlp["local_ms_2"] == pytest.approx(100.0)
    assert mlp["allreduce_MB_per_s"] == pytest.approx(200.0)
    text = format_rows(list(rows.values()))
    assert text.splitlines()[0].split()[:3] == ["net", "params", "grad_MB"] and "mlp" in text
    assert format_rows([]) == "(no rows)"
    assert math.isnan(other_cores(many)), "no /proc/stat figures recorded"


def test_other_cores_is_the_machine_minus_the_job(tmp_path):
    # 10 s windows; the machine was busy 25 s, the two ranks used 8 s each: others used 9 s = 0.9 cores
    quiet = _result(tmp_path, "q", {r: [_summary(r, "mlp", 2, 0.4, 0.1, 1000, machine=16.5, own=8.0)] for r in (0, 1)})
    busy = _result(tmp_path, "b", {r: [_summary(r, "mlp", 2, 0.4, 0.1, 1000, machine=25.0, own=8.0)] for r in (0, 1)})
    assert other_cores(quiet) == pytest.approx(0.05) and other_cores(busy) == pytest.approx(0.9)
    assert job_cores(quiet) == pytest.approx(1.6)


def test_notebook_script_and_plot_in_a_real_launch(tmp_path, monkeypatch):
    """Notebook 04's scripts/scaling.py on 2 ranks and on 1, tiny: every record is there and the plot draws."""
    monkeypatch.setenv("TUTORIAL_RUNS_DIR", str(tmp_path))
    script = write_script("04_network_and_training.ipynb", "scripts/scaling.py", tmp_path)
    args = ("--nets", "simple", "--warmup", "1", "--steps", "3", "--allreduce-reps", "2")
    many = launch(script, *args, name="scale2", workers=2, timeout=120, quiet=True).check()
    one = launch(script, *args, name="scale1", workers=1, timeout=120, quiet=True).check()
    for result, world in ((many, 2), (one, 1)):
        assert result.ranks == list(range(world))
        for rank in result.ranks:
            (record,) = result.records(rank, SUMMARY_KIND)
            assert record["world"] == world and record["params"] == 2762 and record["steps"] == 3
            assert record["grad_bytes"] == 4 * 2762
            assert record["step_seconds"] > 0 and record["allreduce_seconds"] > 0
            assert 0 <= record["comm_share"] < 1
            if world == 1:
                assert record["local_step_seconds"] == record["step_seconds"], "one rank: nothing to exchange"
    rows = scaling_rows(one, many)
    assert [row["net"] for row in rows] == ["simple"] and rows[0]["speedup"] > 0
    assert other_cores(many) >= 0 and other_cores(one) >= 0 and job_cores(one) > 0

    from helpers.plots import plot_scaling

    path = Path(tmp_path) / "scaling.png"
    plot_scaling(rows, 2, path=path)
    assert path.stat().st_size > 10_000
