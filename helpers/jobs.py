"""A job's processes: found, tied to whoever started the job, stopped. Introduced in notebook 01; notebook 06
teaches the faults it handles.

helpers/launch.sh marks every process of a job with environment variables (TUTORIAL_JOB_ID, TUTORIAL_RUN_DIR,
TUTORIAL_PROJECT, TUTORIAL_LAUNCHER_PID) and starts a watchdog, `guard`, in a session of its own. The watchdog
stops the whole job when its launcher dies by any signal or when the launcher's caller goes away (a restarted
Jupyter kernel, a closed terminal, a killed test), and records why in RUN/ended.txt.

    python -m helpers.jobs guard --job-id ID --launcher PID --caller PID --run-dir RUN   (launch.sh starts it)
    python -m helpers.jobs leftovers PROJECT     # name processes of earlier jobs of this checkout still running
    python -m helpers.jobs stop RUN_DIR | PID... # stop a job by its run folder, or processes by their PIDs
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

ENDED = "ended.txt"   # RUN/ended.txt: one line saying how the job ended
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time in clock ticks since boot) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()   # the command name may hold spaces and parentheses
    return fields[0], int(fields[1]), int(fields[19])


def started_at(pid: int) -> int | None:
    """When the process started (clock ticks since boot): with its pid, it names one process for good."""
    stat = _stat(pid)
    return stat[2] if stat else None


def running(pid: int, start: int | None = None) -> bool:
    """True while process `pid` (started at `start`, if given) runs. A zombie has ended: it only awaits its parent."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and (start is None or stat[2] == start)


def environ(pid: int) -> dict[str, str]:
    """The environment a process was started with ({} if it is gone or not ours to read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _is_launcher(pid: int) -> bool:
    """True while `pid` is a running helpers/launch.sh (a pid of a gone launcher may have been reused)."""
    return running(pid) and any(arg.endswith("launch.sh") for arg in _cmdline(pid))


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and int(p.name) != os.getpid()]


def job_processes(job_id: str) -> list[int]:
    """Every live process of the job `job_id` (each carries TUTORIAL_JOB_ID=job_id)."""
    return [pid for pid in _pids() if environ(pid).get("TUTORIAL_JOB_ID") == job_id and running(pid)]


def run_processes(run_dir: str | os.PathLike) -> list[int]:
    """Every live process of the job whose run folder is `run_dir` (each carries TUTORIAL_RUN_DIR=run_dir)."""
    run_dir = str(run_dir)
    return [pid for pid in _pids() if environ(pid).get("TUTORIAL_RUN_DIR") == run_dir and running(pid)]


def stop(pids: list[int], grace: float = 1.0) -> None:
    """SIGTERM, up to `grace` seconds to exit, then SIGKILL for whatever is left."""
    starts = {pid: started_at(pid) for pid in pids}
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(running(p, s) for p, s in starts.items()):
        time.sleep(0.05)
    for pid, start in starts.items():
        if running(pid, start):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def record_end(run_dir: str | os.PathLike, how: str) -> bool:
    """Write RUN/ended.txt unless it exists: the first to say how a job ended is the one who knows."""
    try:
        with open(Path(run_dir) / ENDED, "x", encoding="utf-8") as f:
            f.write(how + "\n")
        return True
    except (FileExistsError, FileNotFoundError):
        return False


def guard(job_id: str, launcher: int, caller: int | None, run_dir: str, interval: float = 0.25) -> str:
    """Watch the launcher (and its caller) until the launcher exits; then stop whatever of the job is left.

    Returns what happened. The launcher's ranks also die with it by themselves where `setpriv --pdeathsig`
    exists (launch.sh); this sweep covers msrun's workers, the scheduler and systems without it."""
    launcher_start, caller_start = started_at(launcher), caller and started_at(caller)
    while running(launcher, launcher_start):
        if caller and not running(caller, caller_start):
            how = f"stopped: its launcher's caller went away (pid {caller})"
            record_end(run_dir, how)
            _signal(launcher, signal.SIGTERM)          # launch.sh stops its job and logs it
            deadline = time.monotonic() + 3
            while running(launcher, launcher_start) and time.monotonic() < deadline:
                time.sleep(0.05)
            if running(launcher, launcher_start):
                _signal(launcher, signal.SIGKILL)
            stop(job_processes(job_id))
            return how
        time.sleep(interval)
    how = f"stopped: its launcher (pid {launcher}) was killed"
    killed = record_end(run_dir, how)   # a launcher that ended by itself recorded how first
    stop(job_processes(job_id))
    return how if killed else "the launcher ended by itself"


def _boot_time() -> float:
    return next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime "))


def _in(path: str, project: str) -> bool:
    return path == project or path.startswith(project.rstrip("/") + "/")


def leftovers(project: str | os.PathLike) -> list[dict]:
    """Processes of earlier jobs of this checkout that are still running, one dict per job.

    A launch.sh job whose launcher is gone (its watchdog killed too), and MindSpore cluster processes
    started by hand here (msrun, a scheduler or worker, a rank-table rank: working folder in the checkout)."""
    project = str(Path(project).resolve())
    boot, jobs = _boot_time(), {}
    for pid in _pids():
        env = environ(pid)
        if not env or not running(pid):
            continue
        if env.get("TUTORIAL_PROJECT") == project:
            launcher = int(env.get("TUTORIAL_LAUNCHER_PID", "0"))
            if launcher and _is_launcher(launcher):
                continue   # a job running now, with its launcher (another node of a multi-node job, say)
            run_dir = env.get("TUTORIAL_RUN_DIR", "?")
            key, stop_with = run_dir, f"bash helpers/launch.sh --stop {run_dir}"
        else:
            cmd = _cmdline(pid)
            is_msrun = "mindspore.parallel.cluster.run" in cmd or any(Path(a).name == "msrun" for a in cmd[:2])
            if not (is_msrun or "MS_ROLE" in env or "RANK_TABLE_FILE" in env):
                continue
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            if not _in(cwd, project):
                continue
            run_dir, key, stop_with = None, "by hand", None
        job = jobs.setdefault(key, {"run_dir": run_dir, "pids": [], "age_s": 0.0, "stop": stop_with})
        job["pids"].append(pid)
        job["age_s"] = max(job["age_s"], time.time() - boot - (started_at(pid) or 0) / _CLOCK_TICKS)
    for job in jobs.values():
        job["pids"].sort()
        job["stop"] = job["stop"] or "bash helpers/launch.sh --stop " + " ".join(map(str, job["pids"]))
    return list(jobs.values())


def describe(job: dict) -> str:
    """One leftover job, as launch.sh and launch() print it."""
    where = f"run folder {job['run_dir']}" if job["run_dir"] else "started by hand in this checkout"
    return (f"launch.sh: warning: {len(job['pids'])} process(es) of an earlier job are still running "
            f"(pids {' '.join(map(str, job['pids']))}; {where}; started {job['age_s']:.0f} s ago). "
            f"They may hold the cards, ports or cores this job needs. Stop them with: {job['stop']}")


def stop_target(targets: list[str]) -> str:
    """`launch.sh --stop RUN_DIR` or `--stop PID...`: stop a job (its launcher first) or listed processes."""
    if len(targets) == 1 and not targets[0].isdigit():
        run_dir = str(Path(targets[0]).resolve())
        pids = run_processes(run_dir)
        launchers = {int(environ(p).get("TUTORIAL_LAUNCHER_PID", "0")) for p in pids} - {0}
        if not pids:
            return f"nothing of the job in {run_dir} is running"
        record_end(run_dir, "stopped: by launch.sh --stop")
        stop([p for p in launchers if _is_launcher(p)] + pids)
        stop(run_processes(run_dir))
        return f"stopped {len(pids)} process(es) of the job in {run_dir}"
    if not all(t.isdigit() for t in targets):
        raise SystemExit("launch.sh --stop: give one run folder, or the PIDs a warning named (see --help)")
    pids = [int(t) for t in targets if running(int(t))]
    stop(pids)
    return f"stopped {len(pids)} process(es): {' '.join(map(str, pids)) or '(none was running)'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.jobs", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("guard", help="watch a launcher and its caller; stop the job when either goes")
    g.add_argument("--job-id", required=True)
    g.add_argument("--launcher", type=int, required=True)
    g.add_argument("--caller", type=int, default=0, help="0: outlive the caller")
    g.add_argument("--run-dir", required=True)
    sub.add_parser("leftovers", help="name earlier jobs of a checkout still running").add_argument("project")
    sub.add_parser("stop", help="stop a job by its run folder, or processes by PID").add_argument("target", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "guard":
        how = guard(args.job_id, args.launcher, args.caller or None, args.run_dir)
        if how.startswith("stopped"):
            print(f"launch.sh (watchdog): {how}; every process of the job stopped", file=sys.stderr)
    elif args.command == "leftovers":
        for job in leftovers(args.project):
            print(describe(job), file=sys.stderr)
    else:
        print(f"launch.sh: {stop_target(args.target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
