"""Run a notebook's script the way a reader runs it by hand: its scripts (and the ones it copies from other
notebooks) written into a folder, then `msrun` itself with CPU workers, none of the series' launcher
(`run_script`); or through the series' launcher, as the notebooks launch it (`launch_script`)."""

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

from helpers.joblog import rank_logs
from helpers.launcher import RUNS_DIR_ENV, launch
from helpers.ports import free_port
from helpers.scripts import borrowed_scripts, notebook_scripts


def write_scripts(notebook, folder):
    """Write `notebook`'s scripts, and the ones it copies from other notebooks, into `folder`."""
    for name, source in {**borrowed_scripts(notebook), **notebook_scripts(notebook)}.items():
        (Path(folder) / Path(name).name).write_text(source, encoding="utf-8")


def run_script(notebook, script, args, ranks, folder, timeout=300):
    """Write `notebook`'s scripts into `folder`, run `script` with `args` on `ranks` workers under msrun there;
    return (msrun's exit code, rank 0's log)."""
    folder = Path(folder)
    write_scripts(notebook, folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUTORIAL_", "MS_", "RANK_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # msrun starts `python`
    logs = folder / f"logs-{len(list(folder.glob('logs-*')))}"
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", f"--worker_num={ranks}",
               f"--local_worker_num={ranks}", f"--master_port={free_port()}", f"--log_dir={logs}", "--join=True",
               script, *args]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    return result.returncode, (logs / "worker_0.log").read_text(errors="replace")


def launch_script(notebook, script, args, ranks, folder, timeout=60):
    """Write `notebook`'s scripts into `folder` and launch `script` with `args` on `ranks` workers through the
    series' launcher (helpers.launch, as the notebooks do), its run folder inside `folder`; return the RunResult.

    For a job that one rank ends: the launcher stops the others the moment a rank exits non-zero. Under bare msrun
    the same job takes ~30 s longer: msrun SIGKILLs the ranks still running before they unregister, then waits for
    its scheduler, which waits out MindSpore's node timeout for them (scheduler.log: "The node: 0 is timed out")."""
    folder = Path(folder)
    write_scripts(notebook, folder)
    with mock.patch.dict(os.environ, {RUNS_DIR_ENV: str(folder / "runs")}):   # restored afterwards
        return launch(folder / script, *map(str, args), workers=ranks, name=Path(script).stem, timeout=timeout,
                      quiet=True)


def assert_stopped_with(result, reason):
    """The job failed, and every rank that ended it (the launcher names it) printed `reason`, not a stack trace."""
    failed = result.failed_ranks()
    assert result.returncode != 0 and failed, result.output[-2000:]
    logs = rank_logs(result.run_dir)
    for rank in failed:
        log = logs[rank].read_text(errors="replace")
        assert reason in log, f"rank {rank}: {log[-2000:]}"
        assert "Traceback" not in log, f"rank {rank}: the reason, not a stack trace\n{log[-2000:]}"
    assert reason in result.output, "the launcher's report shows the reason"
