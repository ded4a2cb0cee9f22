"""`launch(...)`: the Python front of helpers/launch.sh that the notebooks call. Introduced in notebook 01.

It picks a fresh run folder, runs the shell launcher, shows rank 0's progress while the job runs,
and returns a `RunResult` with the exit code, wall time, per-rank metrics and rank 0's log tail.
A launched script finds its run folder in $TUTORIAL_RUN_DIR and writes rank k's JSON lines to
RUN/rank_<k>/metrics.jsonl; `RunResult.metrics` holds them.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import joblog, jobs

PROJECT_ROOT = Path(__file__).resolve().parents[1]
LAUNCH_SH = Path(__file__).resolve().with_name("launch.sh")
RUNS_DIR_ENV = "TUTORIAL_RUNS_DIR"
_NOISE = re.compile(r"^\[(INFO|WARNING|DEBUG)\] |^Start (scheduler|worker) process")


def runs_root() -> Path:
    """Where run folders go: $TUTORIAL_RUNS_DIR, else <project>/runs."""
    return Path(os.environ.get(RUNS_DIR_ENV, PROJECT_ROOT / "runs"))


def new_run_dir(name: str) -> Path:
    """A run folder that no other launch uses: runs/<name>-<date-time>-<random>."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"run name {name!r} may only hold letters, digits, '.', '_' and '-'")
    return runs_root() / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def read_metrics(run_dir: Path) -> dict[int, list[dict]]:
    """{rank: records} from every RUN/rank_<k>/metrics.jsonl."""
    metrics = {}
    for path in sorted(Path(run_dir).glob("rank_*/metrics.jsonl")):
        rank = int(path.parent.name.split("_")[1])
        lines = path.read_text(encoding="utf-8").splitlines()
        metrics[rank] = [json.loads(line) for line in lines if line.strip()]
    return dict(sorted(metrics.items()))


def live_processes(run_dir: str | os.PathLike) -> list[int]:
    """Pids of the live processes started for the run in `run_dir` (each carries TUTORIAL_RUN_DIR=run_dir)."""
    return jobs.run_processes(run_dir)


def html_table(rows: list[dict]) -> str:
    """A list of dicts as an HTML table, columns from the first row: it does not wrap like fixed-width text."""
    if not rows:
        return "<p>(no rows)</p>"
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def show_table(rows: list[dict]):
    """`html_table(rows)` for a notebook cell (IPython.display.HTML). Introduced in notebook 01."""
    from IPython.display import HTML

    return HTML(html_table(rows))


@dataclass
class RunResult:
    """What one launch produced. `metrics[rank]` holds that rank's metrics.jsonl records; `log_tail`
    is the end of the lowest local rank's log (rank 0's, except on the other nodes of a multi-node job)."""

    returncode: int
    wall_time: float
    run_dir: Path
    command: list[str]
    output: str = ""
    metrics: dict[int, list[dict]] = field(default_factory=dict)
    log_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def ranks(self) -> list[int]:
        return sorted(self.metrics)

    def records(self, rank: int, kind: str) -> list[dict]:
        return [r for r in self.metrics.get(rank, []) if r.get("kind") == kind]

    def losses(self, rank: int) -> list[float]:
        return [r["loss"] for r in self.records(rank, "step")]

    def final(self, rank: int) -> dict:
        finals = self.records(rank, "final")
        return finals[-1] if finals else {}

    @property
    def ended(self) -> str:
        """How the job ended, as RUN/ended.txt records it ("finished: ...", "failed: ...", "stopped: ...")."""
        path = self.run_dir / jobs.ENDED
        return path.read_text(encoding="utf-8").strip() if path.exists() else ""

    def failed_ranks(self) -> dict[int, str]:
        return joblog.failed_ranks(self.run_dir)

    def check(self) -> RunResult:
        """Raise RuntimeError naming the failed rank(s) and their log tails unless the job succeeded."""
        if not self.ok:
            raise RuntimeError(f"the job failed with exit code {self.returncode}\n"
                               f"{joblog.failure_report(self.run_dir)}")
        return self

    def summary_rows(self) -> list[dict]:
        """One row per rank: first and last loss, steps, eval accuracy, weights checksum."""
        rows = []
        for rank in self.ranks:
            losses, final = self.losses(rank), self.final(rank)
            rows.append({"rank": rank, "steps": len(losses),
                         "first_loss": round(losses[0], 4) if losses else None,
                         "last_loss": round(losses[-1], 4) if losses else None,
                         "eval_accuracy": round(final.get("eval_accuracy", float("nan")), 4),
                         "weights_sha": final.get("weights_sha")})
        return rows

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"FAILED (exit code {self.returncode})"
        return (f"RunResult({state}, {len(self.ranks)} ranks with metrics, {self.wall_time:.1f} s, "
                f"run folder {self.run_dir})")

    def _repr_html_(self) -> str:
        """What Jupyter shows for a RunResult: the outcome, then one row per rank (no raw logs)."""
        head = html.escape(repr(self))
        rows = self.summary_rows() if any(self.losses(r) for r in self.ranks) else []
        return f"<p><code>{head}</code></p>" + (html_table(rows) if rows else "")

    def summary(self) -> str:
        """A plain-text table of `summary_rows()` plus the wall time."""
        rows = self.summary_rows()
        if not rows:
            return f"no metrics in {self.run_dir} (exit code {self.returncode})"
        keys = list(rows[0])
        widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
        lines = ["  ".join(k.rjust(widths[k]) for k in keys)]
        lines += ["  ".join(str(r[k]).rjust(widths[k]) for k in keys) for r in rows]
        lines.append(f"wall time {self.wall_time:.1f} s, exit code {self.returncode}, run folder {self.run_dir}")
        return "\n".join(lines)


def _stop(process: subprocess.Popen) -> None:
    """Ask launch.sh to stop its job (it traps TERM), then make sure its whole group is gone."""
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def launch(script: str | os.PathLike, *script_args: str, workers: int | None = None,
           local_workers: int | None = None, node_rank: int | None = None, master_addr: str | None = None,
           device: str | None = None, name: str = "run", startup: str | None = None,
           rank_table: str | os.PathLike | None = None, server_id: str | None = None,
           port: int | None = None, timeout: int = 60,
           hang_timeout: int | None = None, dry_run: bool = False, quiet: bool = False,
           env: dict[str, str] | None = None) -> RunResult:
    """Run a distributed job through helpers/launch.sh and return its RunResult.

    Every rank runs `python script *script_args` (`script` is a path, relative to the current folder).
    Rank 0's lines are printed as they come unless `quiet`. Worker count and device follow
    helpers.device unless given. `startup` is launch.sh's `--startup`: None for its default
    (MindSpore's dynamic cluster started directly), "msrun" or "ranktable".
    `timeout` bounds cluster formation; `hang_timeout` stops a job whose ranks all fall silent.
    `local_workers`, `node_rank` and `master_addr` make this launch one node of a multi-node job
    (notebook 06); `port` must then be the same on every node, and node 0 runs the scheduler.
    Interrupting (Ctrl-C, or the notebook's stop button) stops every process of the job, and so does a
    restarted or killed kernel: launch.sh's watchdog sees its caller go (`RunResult.ended` says how a job
    ended). Processes of an earlier job still running are named before the job starts, even when `quiet`.
    """
    run_dir = new_run_dir(name)
    command = ["bash", str(LAUNCH_SH), "--log-dir", str(run_dir), "--timeout", str(timeout)]
    options = {"--startup": startup, "--workers": workers, "--local-workers": local_workers, "--node-rank": node_rank,
               "--master-addr": master_addr, "--device": device, "--rank-table": rank_table,
               "--server-id": server_id, "--port": port,
               "--hang-timeout": hang_timeout}
    for option, value in options.items():
        if value is not None:
            command += [option, str(value)]
    if dry_run:
        command.append("--dry-run")
    command += ["--", str(Path(script).resolve()), *(str(a) for a in script_args)]
    child_env = {**os.environ, "TUTORIAL_PYTHON": sys.executable, **(env or {})}

    start = time.perf_counter()
    output: list[str] = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=child_env, cwd=PROJECT_ROOT, start_new_session=True)
    try:
        for line in process.stdout:
            output.append(line)
            if (not quiet and not _NOISE.match(line)) or line.startswith("launch.sh: warning:"):
                print(line, end="", flush=True)
        process.wait()
    except KeyboardInterrupt:
        _stop(process)
        raise
    finally:
        process.stdout.close()
    wall = time.perf_counter() - start
    logs = joblog.rank_logs(run_dir)
    return RunResult(returncode=process.returncode, wall_time=wall, run_dir=run_dir, command=command,
                     output="".join(output), metrics=read_metrics(run_dir),
                     log_tail=joblog.tail(logs[min(logs)]) if logs else "")
