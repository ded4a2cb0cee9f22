"""helpers.multinode: a second "node" started as msrun starts workers on a remote node (notebook 06)."""

import json
import socket
import threading
from pathlib import Path

import pytest

from helpers import launch
from helpers.multinode import run_node, wait_for_listener, worker_env
from helpers.ports import free_port

ENV_DUMP = Path(__file__).with_name("env_dump_job.py")  # records its launch variables, then AllReduces


def test_worker_env_numbers_ranks_like_msrun():
    env = worker_env(rank=5, local_rank=1, workers=8, master_addr="192.0.2.10", port=8118, cluster_timeout=600)
    assert env["MS_ROLE"] == "MS_WORKER" and env["MS_NODE_ID"] == env["RANK_ID"] == "5"
    assert env["DEVICE_ID"] == "1" and env["MS_WORKER_NUM"] == env["RANK_SIZE"] == "8"
    assert (env["MS_SCHED_HOST"], env["MS_SCHED_PORT"], env["MS_TOPO_TIMEOUT"]) == ("192.0.2.10", "8118", "600")


@pytest.mark.parametrize("kwargs, message", [
    (dict(node_rank=1, local_workers=3, workers=4), "multiple of local_workers"),
    (dict(node_rank=2, local_workers=2, workers=4), "node_rank must be 0..1"),
])
def test_bad_node_options_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_node(port=free_port(), **kwargs)


def test_wait_for_listener():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert wait_for_listener(sock.getsockname()[1], timeout=5) < 1
    with pytest.raises(TimeoutError, match="is node 0 running"):
        wait_for_listener(free_port(), timeout=1)


@pytest.mark.launch
def test_msrun_node_and_run_node_form_one_cluster_with_msruns_environment():
    """Node 0 via msrun, node 1 via run_node: one 4-rank cluster, and node 1's workers got the same
    launch variables as msrun's own workers (only the per-rank values differ)."""
    script = ENV_DUMP
    port, results = free_port(), {}

    def node0():
        results[0] = launch(script=str(script), workers=4, local_workers=2, node_rank=0, port=port,
                            device="CPU", timeout=120, name="test-multinode-0", quiet=True)

    thread = threading.Thread(target=node0)
    thread.start()
    results[1] = run_node(script=script, node_rank=1, local_workers=2, workers=4, port=port, device="CPU",
                          name="test-multinode-1")
    thread.join()
    assert results[0].ok, results[0].output
    assert results[1].ok, results[1].output + results[1].log_tail
    records = {}
    for result in results.values():
        for path in Path(result.run_dir).glob("env_*.json"):
            record = json.loads(path.read_text())
            records[record["rank"]] = record
    assert sorted(records) == [0, 1, 2, 3]
    assert all(r["world"] == 4 and r["sum"] == 4.0 for r in records.values()), "one cluster, a real AllReduce"
    per_rank = {"RANK_ID", "MS_NODE_ID", "DEVICE_ID", "rank", "sum", "world"}
    msrun_side = {k: v for k, v in records[0].items() if k not in per_rank}
    ours = {k: v for k, v in records[2].items() if k not in per_rank}
    assert ours == msrun_side, "run_node's workers get exactly msrun's launch variables"
    assert [(records[r]["RANK_ID"], records[r]["DEVICE_ID"]) for r in (2, 3)] == [("2", "0"), ("3", "1")]
    assert not (Path(results[1].run_dir) / "scheduler.log").exists(), "node 1 runs no scheduler"


@pytest.mark.launch
def test_a_node_without_scheduler_fails_within_the_cluster_timeout():
    result = run_node(module="helpers.comm_check", node_rank=1, local_workers=2, workers=4, port=free_port(),
                      device="CPU", timeout=5, wait=120, name="test-multinode-alone")
    assert result.returncode not in (0, 124), result.output
    assert result.wall_time < 90
    assert "exited with code" in result.output


@pytest.mark.launch
def test_dynamic_startup_gives_each_worker_msruns_environment():
    """launch.sh's default startup and msrun: same launch variables for every rank (the port aside)."""
    envs = {}
    for startup in ("dynamic", "msrun"):
        result = launch(script=str(ENV_DUMP), workers=2, startup=startup,
                        device="CPU", name=f"test-env-{startup}", quiet=True).check()
        envs[startup] = {}
        for path in sorted(Path(result.run_dir).glob("env_*.json")):
            record = json.loads(path.read_text())
            record.pop("MS_SCHED_PORT")
            envs[startup][record["rank"]] = record
    assert sorted(envs["dynamic"]) == [0, 1]
    assert envs["dynamic"] == envs["msrun"]
