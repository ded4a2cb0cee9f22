"""Run a notebook's script the way a reader runs it by hand: its scripts (and the ones it copies from other
notebooks) written into a folder, then `msrun` itself with CPU workers, none of the series' launcher."""

import os
import subprocess
import sys
from pathlib import Path

from helpers.ports import free_port
from helpers.scripts import borrowed_scripts, notebook_scripts


def run_script(notebook, script, args, ranks, folder, timeout=300):
    """Write `notebook`'s scripts into `folder`, run `script` with `args` on `ranks` workers under msrun there;
    return (msrun's exit code, rank 0's log)."""
    folder = Path(folder)
    for name, source in {**borrowed_scripts(notebook), **notebook_scripts(notebook)}.items():
        (folder / Path(name).name).write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUTORIAL_", "MS_", "RANK_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # msrun starts `python`
    logs = folder / f"logs-{len(list(folder.glob('logs-*')))}"
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", f"--worker_num={ranks}",
               f"--local_worker_num={ranks}", f"--master_port={free_port()}", f"--log_dir={logs}", "--join=True",
               script, *args]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    return result.returncode, (logs / "worker_0.log").read_text(errors="replace")
