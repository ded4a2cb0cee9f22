"""Read a run folder's logs: which rank failed, and the tail of its log. Introduced in notebook 01.

Layout of a run folder (both startups):
    RUN/launcher.log           what the launcher and msrun printed
    RUN/worker_<k>.log         rank k's log under msrun (RUN/scheduler.log: the scheduler's)
    RUN/rank_<k>/worker_<k>.log  rank k's log under rank-table startup
    RUN/rank_<k>/metrics.jsonl rank k's metrics (what the notebook scripts write)
    RUN/ranks.pid              "pid rank" of every worker, written by the launcher

    python -m helpers.joblog RUN      # print the failed rank(s) and their log tails
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

_NOISE = re.compile(r"^\[(INFO|WARNING|DEBUG)\] ")
_FAILURE = re.compile(r"Traceback \(most recent call last\)|^\[(ERROR|CRITICAL)\]|^\w*(Error|Exception): ")
_MSRUN_EXIT = re.compile(r"Worker process (\d+) exit with exception\. Error code: (-?\d+)")
_LAUNCHER_EXIT = re.compile(r"launch\.sh: rank (\d+) exited with code (-?\d+)")
_NO_CLUSTER = "Failed to initialize distributed job cluster"   # init() gave up waiting for the others
_JOINED = re.compile(r"This node \d+ rank id: \d+")             # MindSpore's line once a rank has joined
_REGISTERED = re.compile(r"The new node: \d+\(role: MS_WORKER\), rank id: (\d+)")  # the scheduler's, per rank


def rank_logs(run_dir: str | Path) -> dict[int, Path]:
    """{rank: log path} for every worker log in the run folder."""
    run_dir = Path(run_dir)
    logs = {}
    for path in list(run_dir.glob("worker_*.log")) + list(run_dir.glob("rank_*/worker_*.log")):
        match = re.fullmatch(r"worker_(\d+)\.log", path.name)
        if match:
            logs[int(match.group(1))] = path
    return dict(sorted(logs.items()))


def tail(path: str | Path, lines: int = 20) -> str:
    """The last `lines` lines of a log, without MindSpore's INFO/WARNING chatter."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join([line for line in text if not _NOISE.match(line)][-lines:])


def _rank_of_pid(run_dir: Path) -> dict[int, int]:
    """{pid: rank} from RUN/ranks.pid, which the launcher writes as the workers start."""
    path = run_dir / "ranks.pid"
    if not path.exists():
        return {}
    pairs = (line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {int(pid): int(rank) for pid, rank in pairs}


def failed_ranks(run_dir: str | Path) -> dict[int, str]:
    """{rank: reason} for ranks that raised, or that exited with an error code (e.g. killed by a signal)."""
    run_dir = Path(run_dir)
    failed = {}
    for rank, path in rank_logs(run_dir).items():
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(_FAILURE.search(line) for line in text.splitlines()):
            failed[rank] = "raised an error"
    launcher_log = run_dir / "launcher.log"
    text = launcher_log.read_text(encoding="utf-8", errors="replace") if launcher_log.exists() else ""
    exits = [(_rank_of_pid(run_dir).get(int(pid)), int(code)) for pid, code in _MSRUN_EXIT.findall(text)]
    exits += [(int(rank), int(code)) for rank, code in _LAUNCHER_EXIT.findall(text)]
    for rank, code in exits:
        if rank is not None and rank not in failed:
            # msrun reports a signal as a negative code, bash as 128 + signal
            signum = -code if code < 0 else code - 128 if code > 128 else 0
            signal = f" (killed by signal {signum})" if signum else ""
            failed[rank] = f"exited with code {code}{signal}"
    return dict(sorted(failed.items()))


def never_joined(run_dir: str | Path) -> list[int]:
    """Ranks that never joined the cluster, when the cluster failed to form (else []).

    A rank joined if the scheduler registered it (scheduler.log, on the node that runs it), or if its
    own log shows it waiting for the others or joined: whichever process timed out first, the scheduler
    or a waiting rank, the ranks that never called `init()` are named.
    """
    texts = {rank: path.read_text(encoding="utf-8", errors="replace") for rank, path in rank_logs(run_dir).items()}
    scheduler_log = Path(run_dir) / "scheduler.log"
    scheduler = scheduler_log.read_text(encoding="utf-8", errors="replace") if scheduler_log.exists() else ""
    if not any(_NO_CLUSTER in text for text in [scheduler, *texts.values()]):
        return []
    registered = {int(rank) for rank in _REGISTERED.findall(scheduler)}
    return [rank for rank, text in texts.items()
            if rank not in registered and _NO_CLUSTER not in text and not _JOINED.search(text)]


def failure_report(run_dir: str | Path) -> str:
    """A short text naming each failed rank with the tail of its log."""
    failed = failed_ranks(run_dir)
    logs = rank_logs(run_dir)
    header = []
    missing = never_joined(run_dir)
    if missing:
        failed = {rank: "never joined the cluster" for rank in missing}
        header = [f"the cluster did not form: rank(s) {', '.join(map(str, missing))} never called init() within "
                  "the cluster timeout (--timeout / timeout=), and the others gave up waiting for them."]
    elif not failed:  # e.g. a hung job: show where every rank stopped
        return "\n\n".join([f"no rank log shows an error; the last lines of each rank's log (all in {run_dir}):"]
                           + [f"rank {rank} ({path}):\n{tail(path, 8)}" for rank, path in logs.items()])
    return "\n\n".join(header + [f"rank {rank} {reason}; last lines of {logs[rank]}:\n{tail(logs[rank])}"
                                  for rank, reason in failed.items()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.joblog")
    parser.add_argument("run_dir")
    args = parser.parse_args(argv)
    print(failure_report(args.run_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
