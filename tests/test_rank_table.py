"""The rank-table validator names every malformed case (issue: the spine, item 7)."""

import copy
import json

import pytest

from helpers import rank_table
from helpers.rank_table import RankTableError, find_problems, generate, load, local_ranks

VALID = generate(8, "192.0.2.10")


def problems_after(edit):
    table = copy.deepcopy(VALID)
    edit(table)
    return "\n".join(find_problems(table))


def test_committed_table_is_valid():
    table = load("rank_table_file.json", workers=8)
    assert rank_table.rank_count(table) == 8
    assert local_ranks(table) == [(i, i) for i in range(8)]


def test_generated_table_is_valid_for_any_size():
    for devices in range(1, 9):
        assert find_problems(generate(devices, "192.0.2.10"), workers=devices) == []


def dev(table, i):
    return table["server_list"][0]["device"][i]


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.pop("version"), "missing key 'version'"),
    (lambda t: t.pop("status"), "missing key 'status'"),
    (lambda t: t.pop("server_count"), "missing key 'server_count'"),
    (lambda t: t.pop("server_list"), "missing key 'server_list'"),
    (lambda t: t["server_list"][0].pop("server_id"), "missing key 'server_id' in server_list[0]"),
    (lambda t: t["server_list"][0].pop("device"), "missing key 'device' in server_list[0]"),
    (lambda t: dev(t, 2).pop("device_ip"), "missing key 'device_ip' in server_list[0].device[2]"),
    (lambda t: dev(t, 2).pop("rank_id"), "missing key 'rank_id' in server_list[0].device[2]"),
    (lambda t: dev(t, 2).pop("device_id"), "missing key 'device_id' in server_list[0].device[2]"),
    (lambda t: t.update(version="2.0"), "version is '2.0'"),
    (lambda t: t.update(status="pending"), "status is 'pending'"),
    (lambda t: t.update(server_count=1), "server_count is 1 (int): ids are strings"),
    (lambda t: dev(t, 3).update(rank_id=3), "server_list[0].device[3].rank_id is 3 (int): ids are strings"),
    (lambda t: dev(t, 3).update(device_id=3), "device[3].device_id is 3 (int): ids are strings"),
    (lambda t: dev(t, 3).update(rank_id="2"), "rank_id(s) [2] appear more than once"),
    (lambda t: dev(t, 7).update(rank_id="9"), "are not contiguous"),
    (lambda t: dev(t, 3).update(rank_id="x"), "rank_id is 'x'"),
    (lambda t: dev(t, 4).update(device_id="8"), "device_id is \"8\": card ids on a node are 0-7"),
    (lambda t: dev(t, 4).update(device_id="1"), "device_id \"1\" is used twice"),
    (lambda t: dev(t, 5).update(device_ip="192.168.1"), "device_ip is '192.168.1', not an IP address"),
    (lambda t: t["server_list"][0].update(server_id="node-a"), "server_id is 'node-a', not an IP address"),
    (lambda t: t.update(server_count="2"), "server_count is \"2\" but server_list has 1 server"),
    (lambda t: t.update(server_list=[]), "server_list must be a non-empty list"),
    (lambda t: t["server_list"][0]["device"].append(dict(dev(t, 0), rank_id="8", device_id="0")),
     "lists 9 cards"),
])
def test_each_malformed_table_is_named(edit, expected):
    assert expected in problems_after(edit)


def test_rank_order_must_follow_servers():
    table = copy.deepcopy(VALID)
    second = generate(8, "192.0.2.11", first_rank=0)["server_list"][0]
    for d in table["server_list"][0]["device"]:
        d["rank_id"] = str(int(d["rank_id"]) + 8)
    table["server_list"].append(second)
    table["server_count"] = "2"
    problems = "\n".join(find_problems(table))
    assert "rank ids must follow the dictionary order of server_id" in problems
    assert "server '192.0.2.11' holds ranks 0-7, but '192.0.2.10', which sorts before it, holds ranks 8-15" in problems
    assert "Expected: '192.0.2.10' ranks 0-7; '192.0.2.11' ranks 8-15" in problems


# MindSpore's rank-table tutorial: "the order of rank_id is consistent with the dictionary order of server_id".
NINE_TEN_ELEVEN = [generate(4, f"192.0.2.{i}") for i in (9, 10, 11)]   # each says ranks 0-3


def test_dictionary_order_compares_server_ids_as_strings():
    numeric = rank_table.merge(NINE_TEN_ELEVEN, sort=True)   # "192.0.2.10" < "192.0.2.11" < "192.0.2.9"
    assert [s["server_id"] for s in numeric["server_list"]] == ["192.0.2.10", "192.0.2.11", "192.0.2.9"]
    assert find_problems(numeric, workers=12) == []
    assert local_ranks(numeric, "192.0.2.9") == [(8, 0), (9, 1), (10, 2), (11, 3)]


def test_merge_refuses_servers_out_of_dictionary_order_with_a_named_error():
    with pytest.raises(rank_table.RankOrderError) as caught:
        rank_table.merge(NINE_TEN_ELEVEN)   # numeric order: .9 would get ranks 0-3
    message = str(caught.value)
    assert "rank ids must follow the dictionary order of server_id" in message
    assert "server '192.0.2.9' holds ranks 0-3, but '192.0.2.10', which sorts before it, holds ranks 4-7" in message
    assert "Expected: '192.0.2.10' ranks 0-3; '192.0.2.11' ranks 4-7; '192.0.2.9' ranks 8-11" in message
    assert isinstance(caught.value, RankTableError), "still a RankTableError for callers that catch that"


def test_generate_refuses_or_sorts_servers_out_of_dictionary_order():
    with pytest.raises(rank_table.RankOrderError, match="server '192.0.2.9' holds ranks 0-1"):
        generate(2, ["192.0.2.9", "192.0.2.10"])
    table = generate(2, ["192.0.2.9", "192.0.2.10"], sort=True)
    assert local_ranks(table, "192.0.2.10") == [(0, 0), (1, 1)] and local_ranks(table, "192.0.2.9") == [(2, 0), (3, 1)]


def test_the_rule_is_on_server_ids_not_on_the_files_order():
    table = rank_table.merge(NINE_TEN_ELEVEN, sort=True)
    table["server_list"].reverse()   # listed .9, .11, .10; each still holds the ranks its id sorts to
    assert find_problems(table, workers=12) == []


def test_load_and_cli_name_the_order_error(tmp_path, capsys):
    bad = copy.deepcopy(rank_table.merge(NINE_TEN_ELEVEN, sort=True))
    ids = [s["server_id"] for s in bad["server_list"]]
    for server, server_id in zip(bad["server_list"], reversed(ids)):   # swap the names: .9 now holds 0-3
        server["server_id"] = server_id
    path = tmp_path / "bad_order.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(rank_table.RankOrderError):
        load(path)
    assert rank_table.main(["validate", str(path)]) == 1
    assert "rank ids must follow the dictionary order of server_id" in capsys.readouterr().err
    nodes = []
    for i, table in enumerate(NINE_TEN_ELEVEN):
        nodes.append(tmp_path / f"node{i}.json")
        nodes[-1].write_text(json.dumps(table))
    assert rank_table.main(["merge", *map(str, nodes)]) == 1
    assert "Expected: '192.0.2.10' ranks 0-3" in capsys.readouterr().err
    out = tmp_path / "sorted.json"
    assert rank_table.main(["merge", "--sort", *map(str, nodes), "-o", str(out)]) == 0
    assert local_ranks(load(out, workers=12), "192.0.2.9") == [(8, 0), (9, 1), (10, 2), (11, 3)]


def test_cross_cluster_names_sort_in_the_order_given_past_ten_servers():
    table = generate(1, [f"192.0.2.{i}" for i in range(1, 13)], clusters=True)
    names = [s["server_id"] for s in table["server_list"]]
    assert names[:3] == ["server_00", "server_01", "server_02"] and names == sorted(names)
    assert find_problems(table, workers=12) == []


def test_worker_count_must_match():
    assert "has 8 ranks but the job asks for 2 workers" in "\n".join(find_problems(VALID, workers=2))


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"version": "1.0",\n "status": }')
    with pytest.raises(RankTableError, match="not valid JSON at line 2"):
        load(path)


def test_missing_file(tmp_path):
    with pytest.raises(RankTableError, match="cannot read the file"):
        load(tmp_path / "nope.json")


def test_cli_validate_exit_codes(tmp_path, capsys):
    assert rank_table.main(["validate", "rank_table_file.json", "--workers", "8"]) == 0
    bad = copy.deepcopy(VALID)
    dev(bad, 0)["rank_id"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert rank_table.main(["validate", str(path)]) == 1
    assert "rank_id is 0 (int)" in capsys.readouterr().err


def test_cli_generate_round_trip(tmp_path):
    out = tmp_path / "rt.json"
    assert rank_table.main(["generate", "--devices", "4", "--server-ip", "192.0.2.20", "-o", str(out)]) == 0
    assert local_ranks(load(out, workers=4)) == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_multi_server_local_ranks_need_server_id():
    first = generate(2, "192.0.2.10")
    second = generate(2, "192.0.2.11", first_rank=2)
    table = dict(first, server_count="2", server_list=first["server_list"] + second["server_list"])
    assert find_problems(table) == []
    assert local_ranks(table, "192.0.2.11") == [(2, 0), (3, 1)]
    with pytest.raises(RankTableError, match="--server-id"):
        local_ranks(table)


def test_merge_renumbers_ranks_in_server_order(tmp_path):
    node0, node1 = generate(8, "192.0.2.10"), generate(8, "192.0.2.11")  # each says ranks 0-7
    merged = rank_table.merge([node0, node1])
    assert find_problems(merged, workers=16) == []
    assert merged["server_count"] == "2"
    assert local_ranks(merged, "192.0.2.11") == [(8 + i, i) for i in range(8)]
    paths = []
    for i, table in enumerate((node0, node1)):
        paths.append(tmp_path / f"node{i}.json")
        paths[-1].write_text(json.dumps(table))
    out = tmp_path / "both.json"
    assert rank_table.main(["merge", *map(str, paths), "-o", str(out)]) == 0
    assert load(out, workers=16) == merged


def test_merging_the_same_server_twice_is_refused():
    with pytest.raises(RankTableError, match="appears twice"):
        rank_table.merge([VALID, VALID])


# The cross-cluster form of MindSpore's rank-table tutorial: named servers, server_ip, cluster_list.
CROSS = generate(8, ["192.0.2.10", "192.0.2.11"], clusters=True)


def test_cross_cluster_form_is_generated_and_valid():
    assert find_problems(CROSS, workers=16) == []
    assert [s["server_id"] for s in CROSS["server_list"]] == ["server_0", "server_1"]
    assert [s["server_ip"] for s in CROSS["server_list"]] == ["192.0.2.10", "192.0.2.11"]
    assert [[m["server_id"] for m in c["server_list"]] for c in CROSS["cluster_list"]] == [["server_0"], ["server_1"]]
    assert local_ranks(CROSS, "server_1") == [(8 + i, i) for i in range(8)]
    assert local_ranks(CROSS, "192.0.2.11") == local_ranks(CROSS, "server_1"), "a server is found by its address too"
    # The tutorial's per-card fields of the cross-cluster form: dpu_ip (the card's VPC address) and numa_id.
    assert all(set(d) == {"device_id", "device_ip", "rank_id", "dpu_ip", "numa_id"}
               for s in CROSS["server_list"] for d in s["device"])


def cross_after(edit):
    table = copy.deepcopy(CROSS)
    edit(table)
    return "\n".join(find_problems(table))


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t["cluster_list"][0]["server_list"].append({"server_id": "server_9"}),
     "cluster_list[0].server_list[1].server_id 'server_9' is not a server of the table"),
    (lambda t: t["cluster_list"][1]["server_list"].append({"server_id": "server_0"}),
     "server 'server_0' is in cluster_list[0] and cluster_list[1]: each server belongs to exactly one cluster"),
    (lambda t: t["cluster_list"].pop(), "server 'server_1' is in no cluster"),
    (lambda t: t["server_list"][1].pop("server_ip"), "server_list[1].server_id is 'server_1', not an IP address"),
    (lambda t: t["server_list"][1].update(server_ip="10.0.0"), "server_list[1].server_ip is '10.0.0', not an IP"),
    (lambda t: t["server_list"][1].update(server_id="server_0"), "server_id server_0 appears twice"),
    (lambda t: t.update(cluster_list=[]), "cluster_list must be a non-empty list"),
    (lambda t: t["cluster_list"][0].pop("cluster_id"), "cluster_list[0].cluster_id is None"),
    (lambda t: t["server_list"][0]["device"][1].pop("dpu_ip"), "missing key 'dpu_ip' in server_list[0].device[1]"),
    (lambda t: t["server_list"][0]["device"][1].update(dpu_ip="8.2"), "device[1].dpu_ip is '8.2', not an IP"),
    (lambda t: t["server_list"][0]["device"][1].pop("numa_id"), "missing key 'numa_id' in server_list[0].device[1]"),
    (lambda t: t["server_list"][0]["device"][1].update(numa_id=0), "device[1].numa_id is 0: write"),
])
def test_each_malformed_cross_cluster_table_is_named(edit, expected):
    assert expected in cross_after(edit)


def template(table):
    """What the tutorial publishes: the same table with '*' where the addresses go."""
    table = copy.deepcopy(table)
    for k, server in enumerate(table["server_list"]):
        server["server_ip" if "server_ip" in server else "server_id"] = "10.*.*.*"
        for device in server["device"]:
            device["device_ip"] = f"192.{int(device['device_id']) % 4 + 1}.*.{6 + k}"
    return table


@pytest.mark.parametrize("table", [generate(8, "192.0.2.10"), generate(8, ["192.0.2.10", "192.0.2.11"]), CROSS],
                         ids=["8-cards", "16-cards", "cross-cluster"])
def test_a_template_is_named_as_such_first(table):
    problems = find_problems(template(table))
    assert problems[0].startswith("this is a template:"), problems[0]
    assert "hccn_tool -i <card> -ip -g" in problems[0]
    assert find_problems(table) == [], "filled in, it is valid"


def test_cross_cluster_dry_run_starts_the_second_servers_ranks(tmp_path):
    import os
    import subprocess
    import sys

    from helpers.launcher import LAUNCH_SH, PROJECT_ROOT

    path = tmp_path / "cross.json"
    path.write_text(json.dumps(CROSS))
    result = subprocess.run(["bash", str(LAUNCH_SH), "--dry-run", "--startup", "ranktable", "--rank-table", str(path),
                             "--server-id", "server_1", "--workers", "16", "--log-dir", str(tmp_path / "run"),
                             str(PROJECT_ROOT / "tests" / "step_job.py")],
                            capture_output=True, text=True, cwd=PROJECT_ROOT,
                            env={**os.environ, "TUTORIAL_PYTHON": sys.executable}, timeout=60)
    assert result.returncode == 0, result.stderr
    ranks = [line for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert [line.split(":")[0] for line in ranks] == [f"rank {r}" for r in range(8, 16)]
    assert all(f"RANK_ID={8 + i} DEVICE_ID={i} RANK_SIZE=16" in line for i, line in enumerate(ranks))


def test_generate_cli_writes_a_cross_cluster_table(tmp_path):
    out = tmp_path / "t.json"
    assert rank_table.main(["generate", "--devices", "2", "--server-ip", "192.0.2.1", "192.0.2.2",
                            "--clusters", "-o", str(out)]) == 0
    assert find_problems(json.loads(out.read_text()), workers=4) == []
