"""Launch cost of a minimal 2-worker MindSpore job, launcher against launcher, interleaved.

    .venv/bin/python benchmarks/launch_cost.py --rounds 3 \
        --variants msrun,launch_sh,launch_sh_msrun --out benchmarks/results/launch_cost_H.jsonl

Every round runs each variant once, in turn (A, B, C, A, B, C, ...), so a change in the machine's
load hits all variants alike. Each run is the job of benchmarks/minimal_job.py (init() + 10 steps
of a 32->64->10 net); its workers print wall-clock marks, from which the run is split into phases:

    spawn    launcher start -> first worker's Python starts (msrun imports MindSpore first)
    import   -> `import mindspore` done in every worker
    init     -> init() returned in every worker (cluster formed)
    step1    -> first step done in every worker (graph compiled)
    steps    -> last step done in every worker
    exit     -> the launcher has returned (workers and scheduler gone)

One JSON line per run goes to --out, with the 1-minute load average before and after the run and
the CPU seconds (user + system) of the whole process tree: on a shared machine the wall time
follows the load, the CPU seconds hardly do.
Variants:

    msrun            bare msrun, as a reader would type it (venv on PATH)
    msrun_hb1        bare msrun with MS_RETRY_INTERVAL_LOWER=1 MS_RETRY_INTERVAL_UPPER=1
    launch_sh        the series' helpers/launch.sh as committed (its default startup)
    launch_sh_msrun  helpers/launch.sh --startup msrun (the same launcher driving msrun)
    fast             --fast-launcher FILE: a candidate launch.sh, measured before it is adopted
    msrun1           bare msrun, 1 worker (the single-worker reference)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "benchmarks" / "minimal_job.py"
VENV_BIN = Path(sys.executable).parent
PHASES = ("spawn", "import", "init", "step1", "steps", "exit")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(variant: str, log_dir: Path, fast_launcher: str) -> tuple[list[str], dict, int]:
    env = dict(os.environ, PATH=f"{VENV_BIN}:{os.environ['PATH']}", PYTHONUNBUFFERED="1")
    env.pop("MS_RETRY_INTERVAL_LOWER", None)
    env.pop("MS_RETRY_INTERVAL_UPPER", None)
    workers = 1 if variant == "msrun1" else 2
    if variant in ("msrun", "msrun_hb1", "msrun1"):
        if variant == "msrun_hb1":
            env.update(MS_RETRY_INTERVAL_LOWER="1", MS_RETRY_INTERVAL_UPPER="1")
        cmd = [str(VENV_BIN / "msrun"), f"--worker_num={workers}", f"--local_worker_num={workers}",
               f"--master_port={free_port()}", f"--log_dir={log_dir}", "--join=True", str(JOB)]
    elif variant in ("launch_sh", "launch_sh_msrun"):
        cmd = ["bash", str(ROOT / "helpers" / "launch.sh"), "--workers", "2", "--log-dir", str(log_dir), str(JOB)]
        if variant == "launch_sh_msrun":
            cmd[2:2] = ["--startup", "msrun"]
    elif variant == "fast":
        env["TUTORIAL_PYTHON"] = sys.executable  # the copy lives outside the project
        cmd = ["bash", fast_launcher, "--workers", "2", "--log-dir", str(log_dir), str(JOB)]
    else:
        raise SystemExit(f"unknown variant {variant}")
    return cmd, env, workers


def marks(log_dir: Path, workers: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for k in range(workers):
        path = log_dir / f"worker_{k}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        for name, when in re.findall(r"^MARK (\w+) ([\d.]+)$", text, re.M):
            found.setdefault(name, []).append(float(when))
    return found


def run_once(variant: str, base: Path, fast_launcher: str, round_no: int) -> dict:
    log_dir = base / f"{variant}-r{round_no}"
    shutil.rmtree(log_dir, ignore_errors=True)
    cmd, env, workers = command(variant, log_dir, fast_launcher)
    load_before = os.getloadavg()[0]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    m = marks(log_dir, workers)
    ok = proc.returncode == 0 and len(m.get("last_step", [])) == workers
    record = {"variant": variant, "round": round_no, "workers": workers, "ok": ok, "rc": proc.returncode,
              "wall": end - start, "cpu": cpu, "load_before": load_before, "load_after": os.getloadavg()[0]}
    if ok:
        points = [start, min(m["python"]), max(m["imported"]), max(m["init"]), max(m["first_step"]),
                  max(m["last_step"]), end]
        record.update({name: b - a for name, a, b in zip(PHASES, points, points[1:])})
    else:
        record["output_tail"] = proc.stdout[-1500:]
    return record


def ratios(records: list[dict], base: str = "msrun") -> dict[str, float]:
    """{variant: median over rounds of wall(variant) / wall(base) in the same round (and batch)}."""
    walls: dict[tuple, dict[str, float]] = {}
    for r in records:
        if r["ok"]:
            walls.setdefault((r.get("batch", ""), r["round"]), {})[r["variant"]] = r["wall"]
    out = {}
    for v in dict.fromkeys(r["variant"] for r in records):
        values = [w[v] / w[base] for w in walls.values() if v in w and base in w]
        if values and v != base:
            out[v] = statistics.median(values)
    return out


def summarize(records: list[dict]) -> str:
    variants = list(dict.fromkeys(r["variant"] for r in records))
    lines = ["| variant | runs ok | wall median (s) | CPU s median | " + " | ".join(PHASES) + " | load (1 min) |",
             "|---" * (len(PHASES) + 5) + "|"]
    for v in variants:
        ok = [r for r in records if r["variant"] == v and r["ok"]]
        n = len([r for r in records if r["variant"] == v])
        if not ok:
            lines.append(f"| {v} | 0/{n} |" + " |" * (len(PHASES) + 3))
            continue
        med = {k: statistics.median(r[k] for r in ok) for k in ("wall", *PHASES)}
        loads = [r["load_before"] for r in ok]
        cpus = [r["cpu"] for r in ok if "cpu" in r]
        cpu = f"{statistics.median(cpus):.1f}" if cpus else "–"
        lines.append(f"| {v} | {len(ok)}/{n} | {med['wall']:.1f} | {cpu} | "
                     + " | ".join(f"{med[p]:.1f}" for p in PHASES)
                     + f" | {min(loads):.1f}–{max(loads):.1f} |")
    lines += ["", "wall / bare msrun's wall in the same round (median over rounds): "
              + ", ".join(f"{v} {x:.2f}" for v, x in ratios(records).items())]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="msrun,launch_sh,launch_sh_msrun")
    parser.add_argument("--fast-launcher", default="/tmp/launch_fast.sh")
    parser.add_argument("--logs", default="/tmp/launch_cost_runs")
    parser.add_argument("--out", default="benchmarks/results/launch_cost.jsonl")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    parser.add_argument("--batch", help="with --summary: only the records of this batch (A, B, ...)")
    args = parser.parse_args()
    out = Path(args.out)
    if args.summary:
        records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        print(summarize([r for r in records if args.batch in (None, r.get("batch"))]))
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    records = []
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for round_no in range(1, args.rounds + 1):
        for variant in variants:
            record = run_once(variant, Path(args.logs), args.fast_launcher, round_no)
            records.append(record)
            with out.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
            print(f"round {round_no} {variant}: ok={record['ok']} wall={record['wall']:.1f}s "
                  f"load={record['load_before']:.1f}", flush=True)
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
