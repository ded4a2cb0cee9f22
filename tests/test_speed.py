"""helpers.speed (notebook 15): reading the profiler's output, splitting a timeline, fitting alpha + n / beta."""

import json

import numpy as np
import pytest

from helpers.speed import (
    busy_during,
    fit_latency_bandwidth,
    hccl_test_points,
    is_communication,
    on_tick_grid,
    op_type,
    op_types,
    operators,
    scheduler_tick,
    time_split,
    trace_events,
)


def fake_profile(tmp_path, rank=0):
    """A rank folder laid out as MindSpore 2.10's profiler writes it on CPU (checked against a real run)."""
    folder = tmp_path / f"rank_{rank}" / "profile" / "host_123_20261205_ascend_ms"
    (folder / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (folder / "FRAMEWORK").mkdir()
    events = [{"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "CPU OP"}},
              {"ph": "X", "name": "MatMul", "pid": 2, "tid": 0, "ts": "1000.0", "dur": "300.0"},
              {"ph": "X", "name": "Default/AllReduce-op0", "pid": 2, "tid": 0, "ts": "1300.0", "dur": "200.0"},
              {"ph": "X", "name": "Default/Add-op19", "pid": 2, "tid": 0, "ts": "1400.0", "dur": "50.0"},
              {"ph": "X", "name": "Mul", "pid": 2, "tid": 0, "ts": "1800.0", "dur": "200.0"}]
    (folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text(json.dumps(events))
    (folder / "FRAMEWORK" / f"cpu_op_type_info_{rank}.csv").write_text(
        "op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n"
        "MatMul,90,1,15.3,0.17,0.05\nAllReduce,24,6,55.8,2.3,0.17\nMul,380,190,127.9,0.34,0.4\n")
    return tmp_path / f"rank_{rank}"


def test_op_type_and_communication():
    assert op_type("Default/AllReduce-op0") == "AllReduce" and op_type("MatMul") == "MatMul"
    assert op_type("Expand/_SoftmaxBackward/ReduceSum-op0") == "ReduceSum"
    assert is_communication("AllReduce") and is_communication("AllGather") and is_communication("HcomSend")
    assert not is_communication("MatMul") and not is_communication("ReduceSum")


def test_trace_and_csv_are_read(tmp_path):
    rank_dir = fake_profile(tmp_path, rank=1)
    events = trace_events(rank_dir)
    assert [e["type"] for e in events] == ["MatMul", "AllReduce", "Add", "Mul"]
    assert events[0]["start"] == pytest.approx(1e-3) and events[0]["seconds"] == pytest.approx(3e-4)
    rows = op_types(rank_dir)
    assert [r["type"] for r in rows] == ["Mul", "AllReduce", "MatMul"] and rows[1]["communication"]
    with pytest.raises(FileNotFoundError):
        trace_events(tmp_path / "rank_7")


def test_time_split_counts_overlaps_once(tmp_path):
    split = time_split(trace_events(fake_profile(tmp_path)))
    # span 1000..2000 us; communication 1300..1500; Add (1400..1450) inside it; MatMul and Mul 500 us; idle 1500..1800
    assert split["span"] == pytest.approx(1e-3)
    assert split["communication"] == pytest.approx(2e-4)
    assert split["compute"] == pytest.approx(5e-4)
    assert split["idle"] == pytest.approx(3e-4)
    assert time_split([]) == {"span": 0.0, "compute": 0.0, "communication": 0.0, "idle": 0.0}


def test_a_second_profile_folder_is_read(tmp_path):
    rank_dir = fake_profile(tmp_path)
    (rank_dir / "profile").rename(rank_dir / "profile_pp")
    assert [e["type"] for e in trace_events(rank_dir, "profile_pp")][0] == "MatMul"
    with pytest.raises(FileNotFoundError):
        trace_events(rank_dir)


def test_busy_during_is_the_operators_time_inside_the_intervals(tmp_path):
    events = trace_events(fake_profile(tmp_path))   # operators 1000..1500 and 1800..2000 us; a gap 1500..1800
    assert busy_during([(1.5e-3, 1.8e-3)], events) == pytest.approx(0.0), "a wait in the gap meets no operator"
    assert busy_during([(1.4e-3, 1.9e-3)], events) == pytest.approx(2e-4), "100 us before the gap, 100 us after"
    assert busy_during([(1.2e-3, 1.35e-3), (1.9e-3, 2.5e-3)], events) == pytest.approx(2.5e-4), "overlaps count once"
    scope = {"name": "Default", "type": "Default", "start": 0.0, "seconds": 1.0}   # PyNative's scope over a step
    assert operators([scope, *events]) == events
    assert busy_during([(1.5e-3, 1.8e-3)], [scope, *events]) == pytest.approx(0.0), "the scope fills no gap"
    assert busy_during([], events) == 0.0


def test_calls_on_the_scheduler_tick_are_recognised():
    tick = 4e-3   # CONFIG_HZ=250
    # measured with a busy loop on each core beside a 2-rank job (benchmarks/RESULTS.md, section 15), in ms
    waited = [15.98, 16.03, 12.15, 12.0, 15.81, 15.99, 15.98, 16.0, 12.02, 16.0, 15.97, 16.02, 15.97, 16.0, 12.17]
    assert on_tick_grid([t / 1e3 for t in waited], tick)
    # the same machine quiet: a 4 MB all-reduce near 12 ms, spread as real work spreads
    quiet = [11.32, 11.7, 12.21, 12.2, 13.38, 11.96, 13.43, 11.67, 12.19, 12.52, 12.21, 11.88, 11.77, 11.81, 12.42]
    assert not on_tick_grid([t / 1e3 for t in quiet], tick)
    assert not on_tick_grid([0.25e-3] * 15, tick), "shorter than a tick is never on it"
    assert not on_tick_grid([t / 1e3 for t in waited], None) and not on_tick_grid([], tick)


def test_scheduler_tick_reads_the_kernel_configuration():
    tick = scheduler_tick()
    assert tick is None or tick in (1 / 100, 1 / 250, 1 / 300, 1 / 1000), tick


def test_fit_recovers_alpha_and_beta():
    n = np.geomspace(1e3, 4e6, 7)
    fit = fit_latency_bandwidth(n, 1e-3 + n / 2e8)
    assert fit["alpha"] == pytest.approx(1e-3) and fit["beta"] == pytest.approx(2e8) and fit["error"] < 1e-9
    noisy = fit_latency_bandwidth(n, (1e-3 + n / 2e8) * np.array([1.2, 0.9, 1.1, 1.0, 0.8, 1.1, 1.0]))
    assert 0.1 < noisy["error"] < 0.5
    assert fit_latency_bandwidth([1, 2, 3], [3.0, 2.0, 1.0])["beta"] == float("inf")   # a falling slope


# The Ascend layout: MindSpore 2.10's own profiler writers run on CANN-shaped rows (tests/ascend_profile.py says
# where each part's shape comes from). The card did MatMul 200..250 and 700..800 us and an all-reduce 400..700.
def test_a_cards_trace_is_split_by_canns_overlap_row(tmp_path):
    from ascend_profile import write_ascend_profile

    events = trace_events(write_ascend_profile(tmp_path / "rank_0"))
    rows = {e["process"] for e in events}
    assert {"MindSpore", "CANN", "Ascend Hardware", "Communication", "Overlap Analysis"} <= rows, rows
    assert [e["thread"] for e in operators(events)] == ["Computing", "Communication", "Computing"], \
        "only the overlap row's compute and communication: not Free, not the host's or the streams' duplicates"
    split = time_split(events)
    assert split["span"] == pytest.approx(600e-6, abs=1e-6)
    assert split["communication"] == pytest.approx(300e-6, abs=1e-6), "HCCL's all-reduce, counted once"
    assert split["compute"] == pytest.approx(150e-6, abs=1e-6), "Free (250..400 us) is not compute"
    assert split["idle"] == pytest.approx(150e-6, abs=1e-6)
    assert is_communication("hcom_allReduce__428_0_1") and is_communication("DistCommIrecv")
    assert not is_communication("Computing") and not is_communication("MatMulV3")


def test_a_cards_time_per_operator_type(tmp_path):
    from ascend_profile import write_ascend_profile

    rank_dir = write_ascend_profile(tmp_path / "rank_0")          # profiler level 0: kernel_details.csv only
    rows = {r["type"]: r for r in op_types(rank_dir)}
    assert rows["MatMul"]["calls"] == 2 and rows["MatMul"]["ms"] == pytest.approx(0.15)
    assert rows["hcom_allReduce_"]["communication"] and rows["hcom_allReduce_"]["ms"] == pytest.approx(0.3)
    statistic = write_ascend_profile(tmp_path / "rank_1", statistic=True)   # op_statistic.csv is read first
    assert [(r["type"], r["calls"], r["ms"]) for r in op_types(statistic)] == [("MatMul", 2, 0.15)]
    (tmp_path / "rank_2" / "profile" / "x_ascend_ms").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="op_statistic.csv nor kernel_details.csv"):
        op_types(tmp_path / "rank_2")


# hccl_test's table as its source prints it (hicann/oam-tools, src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc:
# printf("%-17llu | %-14.2f | %-20.5f | success\n", ...)) and as its documentation shows it (docs/zh/hccl_test/
# execution.md: header avg_time, right-aligned numbers).
HCCL_TEST_SOURCE = """the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5
data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
8192              | 764.55         | 0.01071              | success
67108864          | 2630.20        | 25.51474             | success
"""
HCCL_TEST_DOCUMENTED = """the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5
data_size(Bytes): |   avg_time(us): | alg_bandwidth(GB/s): | check_result:
8192              |     764.55    |       0.00998        | success
16384             |     858.80    |       0.01777        | failed
67108864          |    2630.20    |      23.76245        | success
"""


def test_hccl_test_table_is_read_in_both_forms():
    for text in (HCCL_TEST_SOURCE, HCCL_TEST_DOCUMENTED):
        nbytes, seconds = hccl_test_points(text)
        assert nbytes == [8192, 67108864], "a failed check's row is left out"
        assert seconds == pytest.approx([764.55e-6, 2630.20e-6])
    with pytest.raises(ValueError, match="no hccl_test table"):
        hccl_test_points("mpirun: command not found\n")
