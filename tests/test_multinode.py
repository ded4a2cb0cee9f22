"""Several "nodes" on one machine: node 0 runs the scheduler, node 1 only its workers (notebook 06)."""

import json
import threading
from pathlib import Path

import pytest

from helpers import launch
from helpers.ports import free_port

JOB = Path(__file__).with_name("step_job.py")  # records its launch variables, then AllReduces
PER_RANK = {"RANK_ID", "MS_NODE_ID", "DEVICE_ID", "MS_SCHED_PORT"}


def launch_vars(result) -> dict[int, dict]:
    records = {}
    for path in Path(result.run_dir).glob("rank_*/launch.json"):
        record = json.loads(path.read_text())
        records[record["rank"]] = record
    return records


@pytest.mark.launch
def test_two_nodes_form_one_cluster_with_msruns_environment():
    """Node 0 through msrun, node 1 through the direct dynamic startup: one 4-rank cluster, real AllReduces,
    and node 1's workers get exactly the launch variables msrun gives its own (only per-rank values differ).
    (msrun for node 1 cannot work on ONE machine: it sees a local master address and starts a second
    scheduler on the taken port, so that msrun exits 1. On a real second machine it starts workers only.)"""
    port, results = free_port(), {}

    def node0():
        results[0] = launch(JOB, workers=4, local_workers=2, node_rank=0, port=port, startup="msrun",
                            device="CPU", timeout=120, name="test-multinode-0", quiet=True)

    thread = threading.Thread(target=node0)
    thread.start()
    results[1] = launch(JOB, workers=4, local_workers=2, node_rank=1, port=port,
                        device="CPU", timeout=120, name="test-multinode-1", quiet=True)
    thread.join()
    assert results[0].ok, results[0].output
    assert results[1].ok, results[1].output
    records = {**launch_vars(results[0]), **launch_vars(results[1])}
    assert sorted(records) == [0, 1, 2, 3]
    assert all(r["world"] == 4 for r in records.values())
    assert all(m["sum"] == 4.0 for result in results.values() for rank in result.ranks
               for m in result.records(rank, "step")), "one cluster: every AllReduce summed 4 ranks"
    msrun_side = {k: v for k, v in records[0]["env"].items() if k not in PER_RANK}
    node1 = {k: v for k, v in records[2]["env"].items() if k not in PER_RANK}
    assert node1 == msrun_side
    assert [(records[r]["env"]["RANK_ID"], records[r]["env"]["DEVICE_ID"]) for r in (2, 3)] == [("2", "0"), ("3", "1")]
    assert not (Path(results[1].run_dir) / "scheduler.log").exists(), "node 1 runs no scheduler"


@pytest.mark.launch
def test_a_node_without_scheduler_fails_within_the_cluster_timeout():
    result = launch(JOB, workers=4, local_workers=2, node_rank=1, port=free_port(), device="CPU", timeout=5,
                    name="test-multinode-alone", quiet=True)
    assert result.returncode not in (0, 124), result.output
    assert result.wall_time < 90
    assert "exited with code" in result.output


@pytest.mark.launch
def test_dynamic_startup_gives_each_worker_msruns_environment():
    """launch.sh's default startup and msrun: same launch variables for every rank (the port aside)."""
    envs = {}
    for startup in ("dynamic", "msrun"):
        result = launch(JOB, workers=2, startup=startup, device="CPU", name=f"test-env-{startup}",
                        quiet=True).check()
        envs[startup] = {rank: {k: v for k, v in r["env"].items() if k != "MS_SCHED_PORT"}
                         for rank, r in launch_vars(result).items()}
    assert sorted(envs["dynamic"]) == [0, 1]
    assert envs["dynamic"] == envs["msrun"]
