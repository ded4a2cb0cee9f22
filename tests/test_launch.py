"""helpers/launch.sh and helpers.launch(): arguments, dry runs, a real job and a failing one."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import launch
from helpers.launcher import LAUNCH_SH, PROJECT_ROOT, live_processes, show_table

JOB = Path(__file__).with_name("step_job.py")  # a small plain-MindSpore job with real AllReduces

ENV = {**os.environ, "TUTORIAL_PYTHON": sys.executable, "TUTORIAL_DEVICE": "CPU"}


def run_sh(*args, timeout=60):
    return subprocess.run(["bash", str(LAUNCH_SH), *args], capture_output=True, text=True, env=ENV,
                          cwd=PROJECT_ROOT, timeout=timeout)


def test_help_documents_every_option():
    out = run_sh("--help").stdout
    for option in ("--workers", "--device", "--startup", "--rank-table", "--log-dir", "--port", "--timeout",
                   "--dry-run", "SCRIPT"):
        assert option in out


def test_ranktable_dry_run_prints_each_rank_environment(tmp_path):
    result = run_sh("--dry-run", "--startup", "ranktable", "--rank-table", "rank_table_file.json",
                    "--log-dir", str(tmp_path / "rt"), str(JOB))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert len(lines) == 8
    table = str(PROJECT_ROOT / "rank_table_file.json")
    for k, line in enumerate(lines):
        assert f"RANK_TABLE_FILE={table}" in line
        assert f"RANK_ID={k} DEVICE_ID={k} RANK_SIZE=8" in line
        assert f"rank_{k}/worker_{k}.log" in line
        assert f"python {JOB}" in line
    assert not (tmp_path / "rt").exists(), "a dry run must not create anything"


def test_dynamic_dry_run_is_the_default_and_shows_each_process(tmp_path):
    result = run_sh("--dry-run", "--workers", "3", "--timeout", "45", "--port", "23457",
                    "--log-dir", str(tmp_path / "d"), "--", str(JOB), "--steps", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# dynamic-cluster startup, 3 ranks on CPU")
    sched = [line for line in result.stdout.splitlines() if line.startswith("scheduler:")]
    assert len(sched) == 1 and "MS_ROLE=MS_SCHED MS_SCHED_HOST=127.0.0.1 MS_SCHED_PORT=23457" in sched[0]
    ranks = [line for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert len(ranks) == 3
    for k, line in enumerate(ranks):
        assert (f"MS_ROLE=MS_WORKER MS_SCHED_HOST=127.0.0.1 MS_SCHED_PORT=23457 MS_WORKER_NUM=3 MS_TOPO_TIMEOUT=45 "
                f"MS_NODE_ID={k} RANK_ID={k} DEVICE_ID={k} RANK_SIZE=3") in line
        cores = sorted(os.sched_getaffinity(0))
        pin = f"taskset -c {cores[k % len(cores)]} "   # one core per rank on CPU
        assert line.endswith(f"-> {pin}python {JOB} --steps 1 > {tmp_path / 'd'}/worker_{k}.log")
    assert not (tmp_path / "d").exists(), "a dry run must not create anything"


def test_msrun_dry_run_shows_bounded_timeout_and_workers(tmp_path):
    result = run_sh("--dry-run", "--startup", "msrun", "--workers", "3", "--timeout", "45",
                    "--log-dir", str(tmp_path / "d"), "--", str(JOB), "--steps", "1")
    assert result.returncode == 0, result.stderr
    assert "--worker_num=3" in result.stdout and "--cluster_time_out=45" in result.stdout
    assert "--bind_core=True" in result.stdout, "one core per rank on CPU"
    assert "--join=True" in result.stdout and f"python {JOB} --steps 1" in result.stdout
    assert sum(line.startswith("rank ") for line in result.stdout.splitlines()) == 3


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers must be a positive integer"),
    (["--workers", "two"], "--workers must be a positive integer"),
    (["--device", "GPU"], "unknown device 'GPU'"),
    (["--startup", "mpirun"], "unknown --startup 'mpirun': use dynamic, msrun or ranktable"),
    (["--timeout", "0"], "--timeout must be a positive number"),
    (["--bogus"], "unknown option '--bogus'"),
    (["--timeout"], "--timeout needs a value"),
    (["no_such_script.py"], "SCRIPT 'no_such_script.py' not found"),
    (["--startup", "ranktable"], "needs --rank-table FILE"),
    (["--startup", "ranktable", "--rank-table", "rank_table_file.json", "--workers", "2"],
     "the table has 8 ranks but the job asks for 2 workers"),
    (["--startup", "ranktable", "--rank-table", "rank_table_file.json"], "rank-table startup needs Ascend"),
    ([], "give the script every rank runs"),
])
def test_bad_input_is_named_before_anything_starts(args, message, tmp_path):
    needs_script = args and not args[-1].endswith(".py") and args != ["--timeout"]
    result = run_sh("--log-dir", str(tmp_path / "bad"), *args, *([str(JOB)] if needs_script else []))
    assert result.returncode == 2
    assert message in result.stderr


def test_busy_port_is_named(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = run_sh("--port", str(port), "--log-dir", str(tmp_path / "p"), str(JOB))
    assert result.returncode == 2
    assert f"port {port} is already in use" in result.stdout + result.stderr


def test_malformed_rank_table_is_named(tmp_path):
    table = tmp_path / "t.json"
    table.write_text('{"version": "1.0", "server_count": "1", "status": "completed", "server_list": '
                     '[{"server_id": "192.0.2.1", "device": [{"device_id": "0", "device_ip": "x", "rank_id": 0}]}]}')
    result = run_sh("--dry-run", "--startup", "ranktable", "--rank-table", str(table), str(JOB))
    assert result.returncode == 2
    assert "device_ip is 'x', not an IP address" in result.stderr
    assert "rank_id is 0 (int): ids are strings" in result.stderr


def test_existing_run_folder_is_never_overwritten(tmp_path):
    used = tmp_path / "run"
    used.mkdir()
    (used / "worker_0.log").write_text("an earlier run\n")
    result = run_sh("--dry-run", "--log-dir", str(used), str(JOB))
    assert result.returncode == 0
    assert f"writing to {used}-2 instead" in result.stderr
    assert (used / "worker_0.log").read_text() == "an earlier run\n"


def test_real_two_rank_job_streams_rank_0_pins_cores_and_collects_metrics():
    result = launch(JOB, "--steps", "3", workers=2, name="test-launch", quiet=True)
    assert result.ok, result.output
    assert result.ranks == [0, 1]
    assert [result.losses(rank) for rank in (0, 1)] == [[1.0, 0.5, 1 / 3]] * 2
    assert all(r["sum"] == 2.0 for rank in (0, 1) for r in result.records(rank, "step")), "a real AllReduce"
    cores = sorted(os.sched_getaffinity(0))
    launched = [json.loads((result.run_dir / f"rank_{k}" / "launch.json").read_text()) for k in (0, 1)]
    assert [rank["cpu_affinity"] for rank in launched] == [[cores[k % len(cores)]] for k in (0, 1)], "one core per rank"
    assert all(rank["sched_batch"] for rank in launched), "SCHED_BATCH on CPU (MindSpore's teardown race)"
    assert "[rank 0] step 3 AllReduce sum 2" in result.output, "rank 0's progress is streamed"
    assert "[rank 1]" not in result.output, "only rank 0's log is streamed"
    assert "[rank 0] done" in result.log_tail
    assert "2 ranks with metrics" in repr(result) and "<table>" in result._repr_html_()


def test_a_failing_rank_is_named_and_nothing_is_left_running(tmp_path):
    script = tmp_path / "fail_rank1.py"
    script.write_text(
        "import os\n"
        "if os.environ.get('MS_ROLE') == 'MS_WORKER' and os.environ.get('RANK_ID') == '1':\n"
        "    raise RuntimeError('injected failure on rank 1')\n"
        "import mindspore as ms\n"
        "from mindspore.communication import init\n"
        "ms.set_device('CPU')\n"
        "init()\n")
    result = launch(script, workers=2, name="test-fail", quiet=True)
    assert result.returncode != 0
    assert result.failed_ranks() == {1: "raised an error"}
    assert "rank 1 raised an error" in result.output
    assert "RuntimeError: injected failure on rank 1" in result.output
    with pytest.raises(RuntimeError, match="injected failure on rank 1"):
        result.check()
    assert live_processes(result.run_dir) == []


def test_multi_node_dry_run_numbers_ranks_by_node(tmp_path):
    result = run_sh("--dry-run", "--workers", "4", "--local-workers", "2", "--node-rank", "1", "--port", "23456",
                    "--master-addr", "127.0.0.1", "--log-dir", str(tmp_path / "n1"), str(JOB))
    assert result.returncode == 0, result.stderr
    ranks = [line for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert [r.split(":")[0] for r in ranks] == ["rank 2", "rank 3"]
    assert "RANK_ID=2 DEVICE_ID=0" in ranks[0] and "RANK_ID=3 DEVICE_ID=1" in ranks[1]
    assert "scheduler:" not in result.stdout, "node 1 joins node 0's scheduler"
    msrun = run_sh("--dry-run", "--startup", "msrun", "--workers", "4", "--local-workers", "2", "--node-rank", "1",
                   "--port", "23456", "--log-dir", str(tmp_path / "n1m"), str(JOB))
    assert "--node_rank=1" in msrun.stdout and "--local_worker_num=2" in msrun.stdout


@pytest.mark.parametrize("args, message", [
    (["--workers", "4", "--local-workers", "2", "--port", "23456"], "needs --node-rank 0..1"),
    (["--workers", "4", "--local-workers", "2", "--node-rank", "0"], "needs the same --port on every node"),
    (["--workers", "4", "--local-workers", "3", "--node-rank", "0", "--port", "23456"], "not a multiple"),
    (["--workers", "2", "--local-workers", "3"], "--local-workers must be between 1 and --workers"),
])
def test_bad_multi_node_options_are_named(args, message, tmp_path):
    result = run_sh("--dry-run", *args, "--log-dir", str(tmp_path / "m"), str(JOB))
    assert result.returncode == 2
    assert message in result.stderr


def test_table_is_escaped_html():
    html = show_table([{"a": 1, "b": "<x>"}, {"a": 22}]).data
    assert html.startswith("<table>") and "<th>a</th><th>b</th>" in html
    assert "&lt;x&gt;" in html and "<td>22</td><td></td>" in html
    assert "no rows" in show_table([]).data
