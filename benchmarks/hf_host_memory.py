"""Notebook 17's train_hf.py (notebook 16's until issue 54): peak host memory per rank on a model large enough to see
the model in it. Run by hand.

    .venv/bin/python benchmarks/hf_host_memory.py [--notebook notebooks/17_training_job.ipynb] [--dir DIR]

An 88.5-million-parameter Llama-style model (vocabulary 32768, hidden 896, 2 layers, 14 heads, 2 key/value heads,
MLP 4864, sequences of 64: 338 MiB in float32), written as the notebook writes its model (config.json and
weights.npz). Two jobs at 2 ranks with the notebook's scripts: a fresh run on 2x1x1 (batch 4, 2 steps, saved after
each), then a resharded resume of step 1 on 1x2x1. Each rank's peak resident memory, as the script records it:
peak_mb (VmHWM on CPU) and, where the script records it, host_mb (ru_maxrss after init(), after loading, at the
end). --notebook takes another version of the notebook (for example `git show main:notebooks/17_training_job.ipynb`)
to compare before and after a change. The machine's other load moves the times, not the memory. The token ids are
random over the vocabulary (the figures are memory, not learning). benchmarks/hf_job.py compares step time and
memory before and after issue 54.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers import launch  # noqa: E402
from helpers.scripts import notebook_scripts  # noqa: E402

CONFIG = {"vocab": 32768, "dim": 896, "layers": 2, "heads": 14, "kv_heads": 2, "ffn": 4864, "seq": 64,
          "head_dim": 64, "rope_theta": 1e6, "norm_eps": 1e-6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default=str(ROOT / "notebooks" / "17_training_job.ipynb"))
    parser.add_argument("--dir", default="/tmp/hf_host_memory")
    args = parser.parse_args()
    work = Path(args.dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    scripts = {**notebook_scripts(ROOT / "notebooks" / "11_gpt_tensor_parallel.ipynb"),
               **notebook_scripts(ROOT / "notebooks" / "12_3d_parallelism.ipynb"),
               **notebook_scripts(ROOT / "notebooks" / "16_your_model.ipynb"), **notebook_scripts(args.notebook)}
    for name in ("scripts/gpt.py", "scripts/pipeline.py", "scripts/zero.py", "scripts/hf.py", "scripts/dcp.py",
                 "scripts/train_hf.py"):
        (work / Path(name).name).write_text(scripts[name])
    sys.path.insert(0, str(work))
    import gpt
    weights = gpt.init_weights(CONFIG, 0)
    print(f"{sum(w.size for w in weights.values()):,} parameters, "
          f"{sum(w.nbytes for w in weights.values()) / 2**20:.0f} MiB in float32")
    (work / "config.json").write_text(json.dumps(CONFIG))
    np.savez(work / "weights.npz", **weights)
    del weights
    np.save(work / "tokens.npy", np.random.default_rng(0).integers(0, CONFIG["vocab"], 100_000).astype(np.int32))
    model = ("--config", work / "config.json", "--weights", work / "weights.npz", "--batch", 4)
    tokens = ("--tokens", work / "tokens.npy")
    fresh = launch(work / "train_hf.py", *model, *tokens, "--layout", "2x1x1", "--steps", 2, "--save-at", "1,2",
                   "--save", "checkpoints", name="bench-host-fresh", workers=2, timeout=300, quiet=True).check()
    resumed = launch(work / "train_hf.py", "--resume", fresh.run_dir / "checkpoints" / "step_1", *tokens,
                     "--layout", "1x2x1",
                     "--steps", 2, "--save-at", 2, "--save", "checkpoints", name="bench-host-resumed", workers=2,
                     timeout=300, quiet=True).check()
    for name, run in (("fresh 2x1x1", fresh), ("resharded 1x2x1", resumed)):
        for rank in range(2):
            line = run.records(rank, "run")[0]
            host = {k: f"{v:.0f}" for k, v in line.get("host_mb", {}).items()}
            print(f"{name}, rank {rank}: peak {line['peak_mb']:.0f} MB; host MB {host or 'not recorded'}; "
                  f"{run.wall_time:.0f} s")


if __name__ == "__main__":
    main()
