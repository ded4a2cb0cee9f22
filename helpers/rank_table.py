"""Load, validate and generate Ascend rank tables (v1.0). Introduced in notebook 01.

A rank table tells HCCL which card on which server holds which rank:

    {"version": "1.0", "server_count": "1", "status": "completed",
     "server_list": [{"server_id": "10.0.0.1", "host_nic_ip": "reserve",
                      "device": [{"device_id": "0", "device_ip": "192.0.2.1", "rank_id": "0"}, ...]}]}

Every id is a string. Rank ids are 0..N-1 and unique. With several servers, MindSpore's rank-table
tutorial (tutorials/source_en/parallel/rank_table.md, "Multi-Machine Multi-Card") requires "that the
order of rank_id is consistent with the dictionary order of server_id": sort the servers by their
server_id as strings, and each one holds higher rank ids than every server before it. As strings,
"192.0.2.10" sorts before "192.0.2.9". A table that breaks it raises RankOrderError.

The cross-cluster form of the same tutorial ("Cross Cluster") names each server (`server_id`), gives
its address in `server_ip`, adds to each card its `dpu_ip` (the card's virtual IP in the tenant VPC,
used across clusters) and `numa_id` (the card's NUMA-affine CPU cores; "" in the tutorial's example),
and groups servers into clusters with a top-level `cluster_list`:

    "server_list": [{"server_id": "server_0", "server_ip": "10.0.0.1",
                     "device": [{..., "dpu_ip": "203.0.113.1", "numa_id": ""}, ...]}, ...],
    "cluster_list": [{"cluster_id": "cluster_0", "network_type": "ROCE", "az_id": "az_0",
                      "server_list": [{"server_id": "server_0"}]}, ...]

The tutorial says HCCL does not communicate across clusters; MindSpore's own library does, and
MindSpore 2.10's Ascend collective library (lib/plugin/ascend/libd_collective.so) holds the field
names cluster_list, server_list, server_id, server_ip and rank_id. The rules here are those of the
tutorial's field descriptions.

    python -m helpers.rank_table validate FILE [--workers N]
    python -m helpers.rank_table generate --devices 8 --server-ip IP [IP ...] [--clusters] [--sort] [-o FILE]
    python -m helpers.rank_table merge NODE0.json NODE1.json [--sort] [-o FILE]   # ranks in this server order
    python -m helpers.rank_table local FILE [--server-id ID]     # "rank_id device_id" per local card
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
from pathlib import Path

VERSION = "1.0"
STATUS = "completed"
MAX_DEVICES_PER_SERVER = 8  # device ids 0-7: one Ascend 910 node


class RankTableError(ValueError):
    """A rank table that HCCL would reject. The message lists every problem with its field and fix."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid rank table {source}:\n{lines}")


# The rule of MindSpore's rank-table tutorial for multi-server tables; every message that breaks it starts so.
ORDER_RULE = "rank ids must follow the dictionary order of server_id"


class RankOrderError(RankTableError):
    """A multi-server table whose rank ids do not follow the dictionary order of server_id (the tutorial's rule)."""


def _error(source: str, problems: list[str]) -> RankTableError:
    """RankOrderError when the order rule is among the problems, else RankTableError."""
    cls = RankOrderError if any(p.startswith(ORDER_RULE) for p in problems) else RankTableError
    return cls(source, problems)


def _span(ranks: list[int]) -> str:
    """'8-11' for a contiguous run of rank ids, else the list."""
    ranks = sorted(ranks)
    if len(ranks) > 1 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def order_problem(server_ranks: list[tuple[str, list[int]]]) -> str | None:
    """The tutorial's rule for [(server_id, its rank ids)], with rank ids 0..N-1 each used once.

    Sorted by server_id as strings, each server must hold higher rank ids than every server before it.
    Returns None when it holds, else one message: the first server that breaks it, its ranks, the server
    sorting before it that holds higher ones, and the numbering expected.
    """
    ordered = sorted(server_ranks, key=lambda item: item[0])
    for k, (server_id, ranks) in enumerate(ordered):
        higher = [(other, other_ranks) for other, other_ranks in ordered[:k] if max(other_ranks) > min(ranks)]
        if higher:
            other, other_ranks = higher[0]
            expected, first = [], 0
            for sid, rs in ordered:
                expected.append(f"{sid!r} ranks {_span(list(range(first, first + len(rs))))}")
                first += len(rs)
            return (f"{ORDER_RULE} (MindSpore's rank-table tutorial; compared as strings, so \"10.0.0.10\" sorts "
                    f"before \"10.0.0.9\"): server {server_id!r} holds ranks {_span(ranks)}, but {other!r}, which "
                    f"sorts before it, holds ranks {_span(other_ranks)}. Expected: {'; '.join(expected)}. "
                    "Fix: list the servers in that order, or let merge/generate do it (--sort, sort=True)")
    return None


def _is_ip(value: object) -> bool:
    try:
        ipaddress.ip_address(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _check_string_id(problems: list[str], where: str, value: object, *, ip: bool = False) -> bool:
    if not isinstance(value, str):
        problems.append(f"{where} is {value!r} ({type(value).__name__}): ids are strings, write \"{value}\"")
        return False
    if ip and not _is_ip(value):
        problems.append(f"{where} is {value!r}, not an IP address: write the card's or host's IPv4 address")
        return False
    if not ip and not value.isdigit():
        problems.append(f"{where} is {value!r}: write a non-negative integer as a string, e.g. \"0\"")
        return False
    return True


def placeholders(table: object, where: str = "") -> list[str]:
    """Fields whose value still holds a `*` placeholder, as in the published templates ("192.1.*.6")."""
    if isinstance(table, dict):
        return [p for key, value in table.items() for p in placeholders(value, f"{where}.{key}" if where else key)]
    if isinstance(table, list):
        return [p for i, value in enumerate(table) for p in placeholders(value, f"{where}[{i}]")]
    return [f"{where} = {table!r}"] if isinstance(table, str) and "*" in table else []


def _check_clusters(problems: list[str], clusters: object, server_ids: list[str]) -> None:
    """`cluster_list`: each cluster names existing servers; every server is in exactly one cluster."""
    if not isinstance(clusters, list) or not clusters:
        problems.append("cluster_list must be a non-empty list of clusters (or leave it out)")
        return
    home: dict[str, str] = {}
    for c, cluster in enumerate(clusters):
        where = f"cluster_list[{c}]"
        if not isinstance(cluster, dict) or not isinstance(cluster.get("server_list"), list) or \
                not cluster["server_list"]:
            problems.append(f"{where} must be an object with cluster_id and a non-empty server_list")
            continue
        cluster_id = cluster.get("cluster_id")
        if not isinstance(cluster_id, str) or not cluster_id:
            problems.append(f"{where}.cluster_id is {cluster_id!r}: name the cluster, e.g. \"cluster_{c}\"")
        for m, member in enumerate(cluster["server_list"]):
            server_id = member.get("server_id") if isinstance(member, dict) else None
            if server_id not in server_ids:
                problems.append(f"{where}.server_list[{m}].server_id {server_id!r} is not a server of the table: "
                                f"use one of {server_ids}")
            elif server_id in home:
                problems.append(f"server {server_id!r} is in {home[server_id]} and {where}: "
                                "each server belongs to exactly one cluster")
            else:
                home[server_id] = where
    for server_id in server_ids:
        if server_id not in home:
            problems.append(f"server {server_id!r} is in no cluster: add it to one cluster's server_list")


def _check_cross_cluster_device(problems: list[str], where: str, device: dict) -> None:
    """dpu_ip (an IP) and numa_id (a string: "" as in the tutorial's example, or the NUMA node's id)."""
    if "dpu_ip" not in device:
        problems.append(f"missing key 'dpu_ip' in {where}: the cross-cluster form gives each card its virtual IP "
                        "in the tenant VPC (MindSpore's rank-table tutorial, Cross Cluster)")
    else:
        _check_string_id(problems, f"{where}.dpu_ip", device["dpu_ip"], ip=True)
    if "numa_id" not in device:
        problems.append(f"missing key 'numa_id' in {where}: the card's NUMA-affine CPU cores, \"\" when unknown "
                        "(as in the tutorial's example)")
    elif not isinstance(device["numa_id"], str) or (device["numa_id"] and not device["numa_id"].isdigit()):
        problems.append(f"{where}.numa_id is {device['numa_id']!r}: write \"\" or a NUMA node id as a string")


def find_problems(table: object, workers: int | None = None) -> list[str]:
    """Every problem in `table` (parsed JSON), each naming its field and the fix. Empty when valid.

    A template (addresses still holding `*`) gets one line saying so first, then the details.
    """
    if not isinstance(table, dict):
        return ["the top level must be a JSON object with version, server_count, server_list, status"]
    problems: list[str] = []
    unfilled = placeholders(table)
    if unfilled:
        problems.append(f"this is a template: {len(unfilled)} field(s) still hold '*' placeholders (first: "
                        f"{unfilled[0]}). Fill in the real addresses: each card's device_ip from "
                        "`hccn_tool -i <card> -ip -g` (or /etc/hccn.conf), each host's own IP for server_id "
                        "(or server_ip in the cross-cluster form)")
    for key in ("version", "server_count", "server_list", "status"):
        if key not in table:
            problems.append(f"missing key '{key}' at the top level: add it (see rank_table_file.json)")
    if "version" in table and table["version"] != VERSION:
        problems.append(f"version is {table['version']!r}: this format is \"{VERSION}\"")
    if "status" in table and table["status"] != STATUS:
        problems.append(f"status is {table['status']!r}: a finished table says \"{STATUS}\"")
    servers = table.get("server_list")
    if "server_list" in table and (not isinstance(servers, list) or not servers):
        problems.append("server_list must be a non-empty list of servers")
        servers = None
    if "server_count" in table and _check_string_id(problems, "server_count", table["server_count"]):
        if servers is not None and int(table["server_count"]) != len(servers):
            problems.append(f"server_count is \"{table['server_count']}\" but server_list has {len(servers)} "
                            f"server(s): set server_count to \"{len(servers)}\"")
    ranks_in_order: list[int] = []
    server_ranks: list[tuple[str, list[int]]] = []   # (server_id, its rank ids) for the order rule
    seen_servers: set[str] = set()
    for s, server in enumerate(servers or []):
        where = f"server_list[{s}]"
        if not isinstance(server, dict):
            problems.append(f"{where} must be an object with server_id and device")
            continue
        for key in ("server_id", "device"):
            if key not in server:
                problems.append(f"missing key '{key}' in {where}: add it")
        named = "server_ip" in server   # the cross-cluster form: server_id is a name, server_ip the address
        if named:
            _check_string_id(problems, f"{where}.server_ip", server["server_ip"], ip=True)
        server_id = server.get("server_id")
        if "server_id" not in server:   # reported above as a missing key
            pass
        elif named or "*" in str(server_id):   # a name (the address is in server_ip), or a template's placeholder
            if not isinstance(server_id, str) or not server_id:
                problems.append(f"{where}.server_id is {server_id!r}: a server's id is a non-empty string")
        elif isinstance(server_id, str) and server_id and not _is_ip(server_id):
            problems.append(f"{where}.server_id is {server_id!r}, not an IP address: write the host's IP, or "
                            "keep the name and give the address in server_ip (the cross-cluster form)")
        else:
            _check_string_id(problems, f"{where}.server_id", server_id, ip=True)
        if isinstance(server_id, str):
            if server_id in seen_servers:
                problems.append(f"{where}.server_id {server_id} appears twice: one entry per server")
            seen_servers.add(server_id)
        devices = server.get("device")
        if "device" in server and (not isinstance(devices, list) or not devices):
            problems.append(f"{where}.device must be a non-empty list of cards")
            continue
        if len(devices or []) > MAX_DEVICES_PER_SERVER:
            problems.append(f"{where} lists {len(devices)} cards: a node has at most {MAX_DEVICES_PER_SERVER}")
        seen_devices: set[int] = set()
        server_ranks.append((server_id if isinstance(server_id, str) else str(server_id), []))
        for d, device in enumerate(devices or []):
            dwhere = f"{where}.device[{d}]"
            if not isinstance(device, dict):
                problems.append(f"{dwhere} must be an object with device_id, device_ip, rank_id")
                continue
            for key in ("device_id", "device_ip", "rank_id"):
                if key not in device:
                    problems.append(f"missing key '{key}' in {dwhere}: add it")
            if "device_id" in device and _check_string_id(problems, f"{dwhere}.device_id", device["device_id"]):
                device_id = int(device["device_id"])
                if device_id >= MAX_DEVICES_PER_SERVER:
                    problems.append(f"{dwhere}.device_id is \"{device_id}\": card ids on a node are 0-7")
                elif device_id in seen_devices:
                    problems.append(f"{dwhere}.device_id \"{device_id}\" is used twice on {where}: "
                                    "each card appears once per server")
                seen_devices.add(device_id)
            if "device_ip" in device:
                _check_string_id(problems, f"{dwhere}.device_ip", device["device_ip"], ip=True)
            if "rank_id" in device and _check_string_id(problems, f"{dwhere}.rank_id", device["rank_id"]):
                ranks_in_order.append(int(device["rank_id"]))
                server_ranks[-1][1].append(int(device["rank_id"]))
            if named:   # the cross-cluster form: each card also has its dpu_ip and numa_id
                _check_cross_cluster_device(problems, dwhere, device)
    if "cluster_list" in table:
        _check_clusters(problems, table["cluster_list"], [s.get("server_id") for s in servers or []
                                                          if isinstance(s, dict)])
    if ranks_in_order:
        duplicates = sorted({r for r in ranks_in_order if ranks_in_order.count(r) > 1})
        if duplicates:
            problems.append(f"rank_id(s) {duplicates} appear more than once: every card needs its own rank id")
        elif sorted(ranks_in_order) != list(range(len(ranks_in_order))):
            problems.append(f"rank ids {sorted(ranks_in_order)} are not contiguous: number the cards "
                            f"0..{len(ranks_in_order) - 1}")
        else:
            order = order_problem([(sid, ranks) for sid, ranks in server_ranks if ranks])
            if order:
                problems.append(order)
    if workers is not None and not problems and workers != len(ranks_in_order):
        problems.append(f"the table has {len(ranks_in_order)} ranks but the job asks for {workers} workers: "
                        f"use --workers {len(ranks_in_order)} or a table with {workers} cards")
    return problems


def load(path: str | Path, workers: int | None = None) -> dict:
    """Read and validate a rank table; raise RankTableError naming every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RankTableError(str(path), [f"cannot read the file ({exc.strerror}): check the path"]) from None
    try:
        table = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RankTableError(str(path), [f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]) \
            from None
    problems = find_problems(table, workers)
    if problems:
        raise _error(str(path), problems)
    return table


def rank_count(table: dict) -> int:
    return sum(len(server["device"]) for server in table["server_list"])


def local_ranks(table: dict, server_id: str | None = None) -> list[tuple[int, int]]:
    """(rank_id, device_id) for the cards of one server (named by its server_id or server_ip), or of the
    only server in the table."""
    servers = table["server_list"]
    if server_id is None:
        if len(servers) != 1:
            ids = [s["server_id"] for s in servers]
            raise RankTableError("(local ranks)", [f"the table has {len(servers)} servers {ids}: "
                                                   "say which one this is with --server-id"])
        server = servers[0]
    else:
        matches = [s for s in servers if server_id in (s["server_id"], s.get("server_ip"))]
        if not matches:
            known = [s.get("server_ip", s["server_id"]) for s in servers]
            raise RankTableError("(local ranks)", [f"no server {server_id} in the table (server_id or "
                                                   f"server_ip): it has {known}"])
        server = matches[0]
    return [(int(d["rank_id"]), int(d["device_id"])) for d in server["device"]]


def generate(devices: int, server_ip: str | list[str], device_ips: list[str] | None = None,
             first_rank: int = 0, clusters: bool = False, dpu_ips: list[str] | None = None,
             sort: bool = False) -> dict:
    """A valid table with `devices` cards (ids 0..devices-1) on each server of `server_ip` (one or a list).

    Rank ids are numbered server by server in the order given, which must be the dictionary order of the
    server ids (RankOrderError otherwise), or pass `sort` to put the servers in that order first. With
    `clusters`, the cross-cluster form of MindSpore's rank-table tutorial: servers named server_<k> (zero-padded,
    so the names sort in the order given), their address in server_ip, each card's dpu_ip and numa_id, one
    cluster per server. With `first_rank` > 0 it is one server's part of a multi-server table, to be merged.
    """
    server_ips = [server_ip] if isinstance(server_ip, str) else list(server_ip)
    if not 1 <= devices <= MAX_DEVICES_PER_SERVER:
        raise ValueError(f"--devices must be 1-{MAX_DEVICES_PER_SERVER}, got {devices}")
    if not server_ips:
        raise ValueError("give one --server-ip per server")
    total = devices * len(server_ips)
    if device_ips is None:
        # 198.51.100.0/24 is a documentation range (RFC 5737): clearly illustrative, never routed.
        device_ips = [f"198.51.100.{i + 1}" for i in range(total)]
    if len(device_ips) != total:
        raise ValueError(f"got {len(device_ips)} --device-ips for {total} cards: give one per card")
    if dpu_ips is None:
        # 203.0.113.0/24, another documentation range (RFC 5737): each card's VPC address across clusters.
        dpu_ips = [f"203.0.113.{i + 1}" for i in range(total)]
    if len(dpu_ips) != total:
        raise ValueError(f"got {len(dpu_ips)} --dpu-ips for {total} cards: give one per card")
    width = len(str(len(server_ips) - 1))   # server_00 .. server_10: names sort as strings in the order given
    servers = []
    for k, ip in enumerate(server_ips):
        cards = [{"device_id": str(i), "device_ip": device_ips[k * devices + i],
                  "rank_id": str(first_rank + k * devices + i)} for i in range(devices)]
        if clusters:
            for i, card in enumerate(cards):
                card.update(dpu_ip=dpu_ips[k * devices + i], numa_id="")
        server = {"server_id": f"server_{k:0{width}d}" if clusters else ip, "host_nic_ip": "reserve", "device": cards}
        if clusters:
            server["server_ip"] = ip
        servers.append(server)
    if sort:
        servers = _renumbered(sorted(servers, key=lambda server: server["server_id"]), first_rank)
    table = {"version": VERSION, "server_count": str(len(servers)), "server_list": servers, "status": STATUS}
    if clusters:
        table["cluster_list"] = [{"cluster_id": f"cluster_{k:0{width}d}", "network_type": "ROCE",
                                  "az_id": f"az_{k:0{width}d}", "server_list": [{"server_id": s["server_id"]}]}
                                 for k, s in enumerate(servers)]
    problems = find_problems(table) if first_rank == 0 else []
    if problems:
        raise _error("(generated)", problems)
    return table


def _renumbered(servers: list[dict], first_rank: int = 0) -> list[dict]:
    """Copies of `servers` with rank ids first_rank.. card by card, server by server, in list order."""
    servers = [json.loads(json.dumps(server)) for server in servers]
    rank = first_rank
    for server in servers:
        for device in server["device"]:
            device["rank_id"] = str(rank)
            rank += 1
    return servers


def merge(tables: list[dict], sort: bool = False) -> dict:
    """One table from several single- or multi-server tables, rank ids renumbered 0..N-1 server by server.

    The servers are numbered in the order given, which must be the dictionary order of their server_id
    (MindSpore's rank-table tutorial); otherwise RankOrderError names the server and the order expected.
    With `sort`, the servers are put in that order first. Tables generated separately on each node (each
    saying ranks 0..7) thus combine consistently. A cross-cluster part keeps its clusters. The result is
    validated.
    """
    servers = [server for table in tables for server in table["server_list"]]
    if sort:
        servers = sorted(servers, key=lambda server: str(server.get("server_id")))
    merged = {"version": VERSION, "server_count": str(len(servers)), "server_list": _renumbered(servers),
              "status": STATUS}
    clusters = [cluster for table in tables for cluster in table.get("cluster_list", [])]
    if clusters:
        merged["cluster_list"] = json.loads(json.dumps(clusters))
    problems = find_problems(merged)
    if problems:
        raise _error("(merged)", problems)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.rank_table", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    validate = sub.add_parser("validate", help="check a rank table; exit 1 naming every problem")
    validate.add_argument("file")
    validate.add_argument("--workers", type=int, help="also check the table has this many ranks")
    gen = sub.add_parser("generate", help="write a valid table: one server per --server-ip")
    gen.add_argument("--devices", type=int, default=8, help="cards per server")
    gen.add_argument("--server-ip", required=True, nargs="+", help="each server's host IP, in rank order")
    gen.add_argument("--clusters", action="store_true",
                     help="the cross-cluster form: named servers, server_ip, one cluster per server")
    gen.add_argument("--device-ips", nargs="+", help="every card's IP, server by server")
    gen.add_argument("--dpu-ips", nargs="+", help="with --clusters: every card's VPC IP, server by server")
    gen.add_argument("--sort", action="store_true",
                     help="number the servers in the dictionary order of their server_id (the rule for rank ids)")
    gen.add_argument("-o", "--output", help="file to write (default: print)")
    join = sub.add_parser("merge", help="merge per-node tables into one, rank ids renumbered server by server")
    join.add_argument("files", nargs="+")
    join.add_argument("--sort", action="store_true",
                      help="number the servers in the dictionary order of their server_id, not the files' order")
    join.add_argument("-o", "--output", help="file to write (default: print)")
    local = sub.add_parser("local", help="print 'rank_id device_id' for this server's cards")
    local.add_argument("file")
    local.add_argument("--server-id", help="this server's server_id or server_ip")
    local.add_argument("--workers", type=int, help="the job's total rank count, checked against the table")
    args = parser.parse_args(argv)
    try:
        if args.command == "validate":
            table = load(args.file, args.workers)
            print(f"{args.file}: valid rank table, {len(table['server_list'])} server(s), "
                  f"{rank_count(table)} ranks")
        elif args.command in ("generate", "merge"):
            if args.command == "generate":
                table = generate(args.devices, args.server_ip, args.device_ips, clusters=args.clusters,
                                 dpu_ips=args.dpu_ips, sort=args.sort)
            else:
                table = merge([load(path) for path in args.files], sort=args.sort)
            text = json.dumps(table, indent=4) + "\n"
            if args.output:
                Path(args.output).write_text(text, encoding="utf-8")
                print(f"wrote {args.output}")
            else:
                print(text, end="")
        else:
            table = load(args.file, args.workers)  # --workers: the whole job, as for msrun
            for rank_id, device_id in local_ranks(table, args.server_id):
                print(rank_id, device_id, rank_count(table))
    except (RankTableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
