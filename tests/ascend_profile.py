"""A rank folder in the layout MindSpore 2.10's profiler writes on an Ascend card, for helpers.speed's tests.

No profile from a card is public (MindSpore's repository and CANN's msprof tools hold none), so this builds one the
way a card does: CANN's rows (msprof's timeline, in the shape of its own unit tests' expected output: Ascend/msprof,
test/msprof_cpp/analysis_ut/application/assemble/test/{hccl,ascend_hardware,overlap_analysis}_assembler_utest.cpp
at 9ba1ac7b) and MindSpore's framework records go through MindSpore 2.10's own writers (AscendTimelineAssembler,
AscendTimelineViewer, AscendKernelDetailsViewer), which write trace_view.json and kernel_details.csv. op_statistic.csv
is copied from CANN's op_statistic_*.csv by MindSpore, so it is written here with the header msprof's unit test
expects (op_statistic_assembler_utest.cpp).

The card's timeline, in microseconds from T0: a MatMul kernel 200..250 and another 700..800, an all-reduce
400..700 (communication alone), nothing 250..400. CANN's overlap row says the same: Computing, Communication,
Communication(Not Overlapped) and Free.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

T0 = 1_717_575_960_000_000_000          # ns
APP_PID, MAIN_TID, LAUNCH_TID, DEVICE = 12345, 12400, 12401, 0


def _pid(sort_index: int, device: int = DEVICE) -> int:
    """msprof's row id: (process << 10) | (sort index << 5) | device (31 for the host's rows)."""
    return (APP_PID << 10) | (sort_index << 5) | device


def _us(ns: int) -> str:                # msprof's ts: microseconds as a string, 3 decimals
    return f"{ns // 1000}.{ns % 1000:03d}"


def _meta(pid: int, tid: int, kind: str, value) -> dict:
    key = "sort_index" if kind.endswith("sort_index") else "labels" if kind == "process_labels" else "name"
    return {"name": kind, "pid": pid, "tid": tid, "ph": "M", "args": {key: value}}


def _row(pid: int, name: str, sort_index: int, labels: str, threads: dict[int, str]) -> list[dict]:
    events = [_meta(pid, 0, "process_name", name), _meta(pid, 0, "process_labels", labels),
              _meta(pid, 0, "process_sort_index", sort_index)]
    for tid, thread in threads.items():
        events += [_meta(pid, tid, "thread_name", thread), _meta(pid, tid, "thread_sort_index", tid)]
    return events


def _complete(pid: int, tid: int, name: str, start_us: float, dur_us: float, **args) -> dict:
    return {"name": name, "pid": pid, "tid": tid, "ts": _us(T0 + int(start_us * 1000)), "dur": dur_us, "ph": "X",
            "args": args}


def _flow(pid: int, tid: int, connection: int, start_us: float, end: bool) -> dict:
    """CANN's arrow from a launch on the host to its task on the card (HostToDevice<connection << 32>)."""
    flow = str(connection << 32)
    return {"name": "HostToDevice" + flow, "pid": pid, "tid": tid, "ph": "f" if end else "s", "cat": "HostToDevice",
            "id": flow, "ts": _us(T0 + int(start_us * 1000)), **({"bp": "e"} if end else {})}


def msprof_timeline() -> list[dict]:
    """CANN's rows of one card: launches, kernels, HCCL's all-reduce and the overlap analysis."""
    cann, hardware, comm, overlap = _pid(7, 31), _pid(14), _pid(16), _pid(31)
    events = _row(cann, "CANN", 7, "CPU", {LAUNCH_TID: f"Thread {LAUNCH_TID}"})
    events += [_complete(cann, LAUNCH_TID, "Node@launch", 120, 20.0, item_id="MatMul", connection_id=100),
               _complete(cann, LAUNCH_TID, "Node@launch", 320, 20.0, item_id="hcom_allReduce_", connection_id=101)]
    events += _row(hardware, "Ascend Hardware", 14, f"NPU {DEVICE}", {2: "Stream 2"})
    events += [_complete(hardware, 2, "MatMul", 200, 50.0, **{"Task Type": "AI_CORE", "connection_id": 100}),
               _complete(hardware, 2, "MatMul", 700, 100.0, **{"Task Type": "AI_CORE"})]
    events += _row(comm, "Communication", 16, f"NPU {DEVICE}", {0: "Group 16898834563344171674 Communication",
                                                               1: "Plane 0"})
    events += [_complete(comm, 0, "hcom_allReduce__428_0_1", 400, 300.0, rank_size=2, connection_id=101,
                         data_type="FP32", count=1048576),
               _complete(comm, 1, "Notify_Wait", 402, 20.0), _complete(comm, 1, "Reduce_Inline", 580, 110.0)]
    events += [_flow(cann, LAUNCH_TID, 100, 120, False), _flow(hardware, 2, 100, 200, True),
               _flow(cann, LAUNCH_TID, 101, 320, False), _flow(comm, 0, 101, 400, True)]
    events += _row(overlap, "Overlap Analysis", 31, f"NPU {DEVICE}",
                   dict(enumerate(("Computing", "Communication", "Communication(Not Overlapped)", "Free"))))
    for tid, name, start, dur in ((0, "Computing", 200, 50.0), (0, "Computing", 700, 100.0),
                                  (1, "Communication", 400, 300.0), (2, "Communication(Not Overlapped)", 400, 300.0),
                                  (3, "Free", 250, 150.0)):
        events.append(_complete(overlap, tid, name, start, dur))
    return events


def framework_records() -> list[dict]:
    """MindSpore's own records of the same step (PyNative): the operators it launched on the host."""
    from mindspore.profiler.analysis.parser.timeline_event.fwk_event import OpRangeStructField as Field
    from mindspore.profiler.analysis.parser.timeline_event.fwk_event import ProfilerEvent, ProfilerModule
    from mindspore.profiler.common.constant import FileConstant

    modules, kinds = list(ProfilerModule), list(ProfilerEvent)

    def record(tid, start_us, end_us, module, kind, name):
        fixed = (tid, 18446744073709551615, 1, T0 + start_us * 1000, T0 + end_us * 1000, APP_PID,
                 modules.index(module), kinds.index(kind), 0, 0, False, False, False)
        return {FileConstant.FIX_SIZE_DATA: fixed, Field.NAME.value: name, Field.FULL_NAME.value: name}

    launch = ProfilerEvent.PYNATIVE_LAUNCH_TASK
    return [record(MAIN_TID, 0, 1000, ProfilerModule.PYTHON, ProfilerEvent.PYTHON_OBSERVED, "ProfilerStep#1"),
            record(LAUNCH_TID, 100, 160, ProfilerModule.PYNATIVE_FRAMEWORK, launch, "MatMulExt"),
            record(LAUNCH_TID, 300, 380, ProfilerModule.PYNATIVE_FRAMEWORK, launch, "DistCommAllReduce")]


OP_SUMMARY = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
              "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Mix Block Num",
              "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
              "Output Data Types", "Output Formats", "Context ID"]


def write_ascend_profile(rank_dir: Path, name: str = "profile", statistic: bool = False) -> Path:
    """rank_dir/<name>/<host>_..._ascend_ms/ASCEND_PROFILER_OUTPUT/ with trace_view.json and kernel_details.csv as
    MindSpore 2.10 writes them on a card, and op_statistic.csv if `statistic` (profiler level 1 and above)."""
    from mindspore.profiler.analysis.parser.timeline_assembly_factory.ascend_timeline_assembler import (
        AscendTimelineAssembler,
    )
    from mindspore.profiler.analysis.time_converter import TimeConverter
    from mindspore.profiler.analysis.viewer.ascend_kernel_details_viewer import AscendKernelDetailsViewer
    from mindspore.profiler.analysis.viewer.ascend_timeline_viewer import AscendTimelineViewer
    from mindspore.profiler.common.file_manager import FileManager

    folder = rank_dir / name / "node0_12345_20240605000000_ascend_ms"
    out, work = folder / "ASCEND_PROFILER_OUTPUT", folder / "work"
    out.mkdir(parents=True)
    work.mkdir()
    TimeConverter.init_parameters(freq=1000.0, cntvct=0, localtime_diff=0)     # one count per nanosecond
    options = dict(ascend_ms_dir=str(work), ascend_profiler_output_path=str(out), profiler_level="Level1",
                   jit_level="O0", is_set_schedule=True, activities=["CPU", "NPU"])
    assembler = AscendTimelineAssembler(**options)
    assembler.assemble({"mindspore_op_list": framework_records(), "cpu_op_lines": [],
                        "msprof_timeline": msprof_timeline()})
    data = {"trace_view_container": assembler.get_trace_view_container()}
    AscendTimelineViewer(**options).save(data)
    summary = work / "op_summary_20240605000000.csv"   # CANN's, which kernel_details.csv is made from
    with summary.open("w", newline="") as f:
        rows = [["0", "4294967295", "10", "2", "MatMul", "MatMul", "dynamic", "AI_CORE", _us(T0 + 200_000) + "\t",
                 "50.000", "0", "20", "0", "NO", "1024,1024;1024,1024", "FLOAT;FLOAT", "ND;ND", "1024,1024", "FLOAT",
                 "ND", "N/A"],
                ["0", "4294967295", "11", "2", "MatMul", "MatMul", "dynamic", "AI_CORE", _us(T0 + 700_000) + "\t",
                 "100.000", "0", "20", "0", "NO", "1024,1024;1024,1024", "FLOAT;FLOAT", "ND;ND", "1024,1024", "FLOAT",
                 "ND", "N/A"],
                ["0", "4294967295", "N/A", "N/A", "hcom_allReduce__428_0_1", "hcom_allReduce_", "N/A",
                 "COMMUNICATION", _us(T0 + 400_000) + "\t", "300.000", "150.000000"] + ["N/A"] * 10]
        csv.writer(f).writerows([OP_SUMMARY, *rows])
    table, headers = FileManager.read_csv_file_as_numpy(str(summary), extern_headers=["Step ID"])
    AscendKernelDetailsViewer(**options).save({**data, "op_summary": table, "op_summary_headers": headers})
    if statistic:   # CANN's op_statistic_*.csv, copied as it is; communication tasks are not in it
        (out / "op_statistic.csv").write_text(
            "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
            "0,MatMul,AI_CORE,2,150.0,50.0,75.0,100.0,100.0\n")
    shutil.rmtree(work)
    return rank_dir
