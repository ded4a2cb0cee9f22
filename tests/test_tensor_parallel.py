"""helpers.tensor_parallel: the slicing rules, the report checks, and one real launch in graph mode."""

import json

import numpy as np
import pytest

from helpers import launch
from helpers.tensor_parallel import (
    REPORT_FILE,
    TOLERANCE,
    agrees,
    compare,
    failures,
    hidden_size,
    parse_args,
    read_reports,
    shard_range,
)


def test_shard_range_covers_a_dimension_in_equal_blocks():
    blocks = [shard_range(64, r, 4) for r in range(4)]
    assert [(b.start, b.stop) for b in blocks] == [(0, 16), (16, 32), (32, 48), (48, 64)]
    with pytest.raises(ValueError, match="cannot be split"):
        shard_range(10, 0, 4)


def test_hidden_size_is_a_multiple_of_the_group():
    assert [hidden_size(n) for n in (1, 2, 4, 8)] == [64, 64, 64, 64]
    assert hidden_size(3) == 66 and hidden_size(3) % 3 == 0


def test_compare_and_agrees():
    entry = compare(np.array([1.0, 2.0 + 1e-6]), np.array([1.0, 2.0]))
    assert entry["scale"] == 2.0 and entry["max_err"] == pytest.approx(1e-6)
    assert agrees(entry)
    assert not agrees(compare(np.array([20.0]), np.array([10.0])))
    assert agrees({"max_err": 5e-5, "scale": 10.0})          # relative to the scale when it exceeds 1
    assert not agrees({"max_err": 5e-5, "scale": 0.1})       # absolute below 1
    with pytest.raises(ValueError, match="shape"):
        compare(np.zeros(2), np.zeros(3))


def _report(error=0.0):
    ok = {"max_err": error, "scale": 1.0}
    case = {"forward": ok, "grads": {"weight": ok, "bias": ok, "input": ok}}
    return {"checks": {"column": case, "row": case, "simplenet": case},
            "data_parallel": {"sum_vs_world_times_mean": ok, "article_vs_default": ok, "by_hand_vs_mean": ok}}


def test_failures_names_every_disagreeing_check():
    assert failures(_report()) == []
    bad = failures(_report(error=1.0))
    assert "column.forward" in bad and "simplenet.input" in bad and "data_parallel.by_hand_vs_mean" in bad


def test_read_reports(tmp_path):
    for rank in (1, 0):
        (tmp_path / f"rank_{rank}").mkdir()
        (tmp_path / f"rank_{rank}" / REPORT_FILE).write_text(json.dumps({"rank": rank}))
    assert list(read_reports(tmp_path)) == [0, 1]


def test_arguments():
    args = parse_args(["--batch", "4", "--mode", "graph"])
    assert (args.batch, args.mode, args.lr) == (4, "graph", 0.1)
    with pytest.raises(SystemExit):
        parse_args(["--batch", "0"])


@pytest.mark.launch
def test_real_launch_in_graph_mode_agrees_with_one_device():
    result = launch("--mode", "graph", module="helpers.tensor_parallel", workers=2, name="test-tensor-parallel",
                    quiet=True, timeout=120)
    assert result.ok, result.output[-3000:]
    reports = read_reports(result.run_dir)
    assert sorted(reports) == [0, 1]
    for report in reports.values():
        assert report["mode"] == "graph" and report["world"] == 2
        assert report["failures"] == []
        checks = report["checks"]
        assert abs(checks["row_plain_allreduce"]["grad_ratio"] - 2) < 1e-4, "plain AllReduce: gradients x world"
        assert checks["row"]["grad_ratio"] == pytest.approx(1, abs=TOLERANCE)
        if report["device"] == "CPU":
            assert "ReduceScatter" in checks["column_plain_allgather"]["error"]
            assert not report["semi_auto"]["set_auto_parallel_context"]["ran"]
            assert not report["semi_auto"]["AutoParallel"]["ran"]
        assert abs(report["data_parallel"]["ratio_sum_over_mean"] - 2) < 1e-4
        assert abs(report["data_parallel"]["ratio_2x_over_mean"] - 0.5) < 1e-4
