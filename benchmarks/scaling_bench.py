"""Data-parallel scaling, MindSpore (notebook 04's scripts/scaling.py) against PyTorch DDP, interleaved.

    .venv/bin/python benchmarks/scaling_bench.py --rounds 3 --out benchmarks/results/scaling.jsonl

Each round runs, in turn: MindSpore at 1 worker, MindSpore at 2 workers, PyTorch at 1, PyTorch at 2
(the PyTorch runs only when --torch points at a venv's torchrun; see benchmarks/peer_torch.py).
MindSpore runs go through helpers/launch.sh (or --launcher) with notebook 04's scripts/scaling.py, taken
from the notebook's %%writefile cell (helpers.scripts), the same measurement code the notebook runs: the
launcher pins every rank to its own core on CPU; the same per-rank batch, warm-up and timed steps for
both frameworks (PyTorch: peer_torch.py --pin yes). One JSON line per (framework,
workers, net, round) goes to --out; the summary prints medians over rounds of aggregate samples/s,
scaling efficiency = aggregate(2) / (2 x aggregate(1)) within the same round, the communication
share of a step and the AllReduce bandwidth (MindSpore), and MindSpore/PyTorch aggregate at 2 workers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def ms_run(workers: int, args, round_no: int) -> list[dict]:
    from helpers.launcher import RunResult, read_metrics
    from helpers.scaling import summaries
    from helpers.scripts import write_script

    script = write_script("04_network_and_training.ipynb", "scripts/scaling.py", Path(args.logs) / "scripts")
    run_dir = Path(args.logs) / f"ms{workers}-{args.tag}-r{round_no}"
    cmd = ["bash", args.launcher, "--workers", str(workers), "--timeout", "120", "--log-dir", str(run_dir),
           str(script), "--nets", args.nets, "--batch-size", str(args.batch_size), "--steps", str(args.steps)]
    env = dict(os.environ, TUTORIAL_PYTHON=sys.executable)
    load = os.getloadavg()[0]
    start = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        return [{"framework": "mindspore", "workers": workers, "round": round_no, "ok": False}]
    result = RunResult(returncode=0, wall_time=time.time() - start, run_dir=run_dir, command=cmd,
                       metrics=read_metrics(run_dir))
    rows = []
    for net, per_rank in summaries(result).items():
        recs = list(per_rank.values())
        rows.append({"framework": "mindspore", "tag": args.tag, "workers": workers, "round": round_no, "ok": True,
                     "net": net, "batch_size": args.batch_size, "pin": "launcher",
                     "samples_per_s": sum(r["samples_per_s"] for r in recs),
                     "step_ms": 1e3 * statistics.median(r["step_seconds"] for r in recs),
                     "local_step_ms": 1e3 * statistics.median(r["local_step_seconds"] for r in recs),
                     "comm_share": statistics.median(r["comm_share"] for r in recs),
                     "allreduce_ms": 1e3 * statistics.median(r["allreduce_seconds"] for r in recs),
                     "grad_bytes": recs[0]["grad_bytes"], "load_before": load, "load_after": os.getloadavg()[0]})
    return rows


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_run(workers: int, args, round_no: int) -> list[dict]:
    cmd = [args.torch, "--nproc_per_node", str(workers), "--master_port", str(free_port()),
           str(ROOT / "benchmarks" / "peer_torch.py"), "--nets", args.nets, "--batch-size", str(args.batch_size),
           "--steps", str(args.steps), "--pin", "yes"]
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        return [{"framework": "torch", "workers": workers, "round": round_no, "ok": False}]
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            rows.append({"framework": "torch", "tag": args.tag, "workers": workers, "round": round_no, "ok": True,
                         "net": rec["net"], "batch_size": rec["batch_size"], "pin": rec["pin"],
                         "samples_per_s": rec["samples_per_s"], "step_ms": rec["step_ms"],
                         "load_before": load, "load_after": os.getloadavg()[0]})
    return rows


def summarize(records: list[dict]) -> str:
    ok = [r for r in records if r.get("ok")]
    out = ["| framework | tag | net | samples/s 1w | samples/s 2w | efficiency | comm share 2w | AllReduce MB/s | "
           "rounds | load |", "|---" * 10 + "|"]
    keys = sorted({(r["framework"], r.get("tag", ""), r["net"]) for r in ok})
    ratios = {}
    for fw, tag, net in keys:
        by_round = {}
        for r in ok:
            if (r["framework"], r.get("tag", ""), r["net"]) == (fw, tag, net):
                by_round.setdefault(r["round"], {})[r["workers"]] = r
        pairs = [v for v in by_round.values() if 1 in v and 2 in v]
        if not pairs:
            continue
        eff = statistics.median(p[2]["samples_per_s"] / (2 * p[1]["samples_per_s"]) for p in pairs)
        a1 = statistics.median(p[1]["samples_per_s"] for p in pairs)
        a2 = statistics.median(p[2]["samples_per_s"] for p in pairs)
        ratios[(fw, tag, net)] = {p_round: p[2]["samples_per_s"] for p_round, p in by_round.items() if 2 in p}
        comm = bw = "–"
        if fw == "mindspore":
            comm = f"{statistics.median(p[2]['comm_share'] for p in pairs):.2f}"
            bw = f"{statistics.median(p[2]['grad_bytes'] / (p[2]['allreduce_ms'] / 1e3) / 1e6 for p in pairs):.0f}"
        loads = [p[w]["load_before"] for p in pairs for w in (1, 2)]
        out.append(f"| {fw} | {tag} | {net} | {a1:.0f} | {a2:.0f} | {eff:.2f} | {comm} | {bw} | {len(pairs)} | "
                   f"{min(loads):.1f}–{max(loads):.1f} |")
    lines = ["", "MindSpore / PyTorch aggregate samples/s at 2 workers (median of per-round ratios):"]
    for (fw, tag, net), per_round in ratios.items():
        if fw != "mindspore" or ("torch", tag, net) not in ratios:
            continue
        peer = ratios[("torch", tag, net)]
        common = [r for r in per_round if r in peer]
        if common:
            lines.append(f"  {tag} {net}: {statistics.median(per_round[r] / peer[r] for r in common):.2f}")
    return "\n".join(out + lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first-round", type=int, default=1, help="number of the first round (to add rounds to a tag)")
    parser.add_argument("--nets", default="simple,mlp,conv")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--tag", default="pinned")
    parser.add_argument("--launcher", default=str(ROOT / "helpers" / "launch.sh"))
    parser.add_argument("--torch", default="/tmp/torchvenv/bin/torchrun", help="'' to skip the peer")
    parser.add_argument("--logs", default="/tmp/scaling_runs")
    parser.add_argument("--out", default="benchmarks/results/scaling.jsonl")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    args = parser.parse_args()
    out = Path(args.out)
    if args.summary:
        print(summarize([json.loads(x) for x in out.read_text().splitlines() if x.strip()]))
        return 0
    records = []
    for round_no in range(args.first_round, args.first_round + args.rounds):
        runs = [("ms", 1), ("ms", 2)] + ([("torch", 1), ("torch", 2)] if args.torch else [])
        for fw, workers in runs:
            rows = ms_run(workers, args, round_no) if fw == "ms" else torch_run(workers, args, round_no)
            records += rows
            with out.open("a") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")
            print(f"round {round_no} {fw} x{workers}: " + ", ".join(
                f"{r['net']} {r['samples_per_s']:.0f}/s" for r in rows if r.get("ok")), flush=True)
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
