"""train_hf.py before and after issue 54, at 2 ranks, on a model with Qwen2.5-0.5B's width and vocabulary and 2
layers: step time and peak host memory per rank. Run by hand; the figures go in benchmarks/RESULTS.md, section 18.

    .venv/bin/python benchmarks/hf_job.py [--rounds 3] [--steps 4] [--dir /tmp/hf_job]

"before" is notebook 16's train_hf.py as main had it before issue 54 (`git show <rev>:notebooks/...`, --before REV,
default the commit before notebook 17's: NumPy Adam on the host, float32, byte ids); "after" is notebook 17's, in
float32 and in float16 (MindSpore's amp; CPU has no bfloat16 MatMul), with notebook 12's ZeRO-1 AdamW and the
model's token ids (random ids over the vocabulary here: the figures are speed and memory, not learning). The model:
vocabulary 151936, hidden 896, 14 heads, 2 key/value heads, MLP 4864, q/k/v biases, tied embeddings (Qwen2.5-0.5B's
config.json), 2 layers, sequences of 16 ids, 2 per step, layout 2x1x1 or --layout 1x1x2 (tied: no pipeline): short
sequences keep a step's compute small, since under a heavy load one rank can fall behind the other by more than
mccl's receive timeout (about 30 s) and fail the 0.6 GB all-reduce; a job that fails so is run again, up to three
times, and says so. The weights, gradients and optimizer state, which the figures are about, do not depend on it.
The rounds interleave the three variants so that the machine's other load falls on each alike; each figure is the
median over the rounds, the load average printed beside it. Both scripts are copied with one line added, a timestamp
on each step's line.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers import launch  # noqa: E402
from helpers.scripts import notebook_scripts  # noqa: E402

CONFIG = {"vocab": 151936, "dim": 896, "layers": 2, "heads": 14, "kv_heads": 2, "ffn": 4864, "seq": 16,
          "head_dim": 64, "rope_theta": 1e6, "norm_eps": 1e-6, "qkv_bias": True, "tie_embeddings": True}
STAMP = ('write({"kind": "step", "step": step,', 'write({"kind": "step", "time": time.time(), "step": step,')


def scripts_at(rev, notebooks):
    """{file name: source} of the notebooks' scripts at git revision `rev` (None: the working tree)."""
    out = {}
    for notebook in notebooks:
        path = ROOT / "notebooks" / notebook
        if rev:
            text = subprocess.run(["git", "show", f"{rev}:notebooks/{notebook}"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout
            path = Path(f"/tmp/hf_job_{notebook}")
            path.write_text(text)
        out.update({Path(name).name: source for name, source in notebook_scripts(path).items()})
    return out


def write_variant(folder, sources):
    folder.mkdir(parents=True)
    for name, source in sources.items():
        if name == "train_hf.py":
            assert STAMP[0] in source, "the step line changed: update STAMP"
            source = "import time\n" + source.replace(STAMP[0], STAMP[1])
        (folder / name).write_text(source)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--before", default="5a73797", help="the git revision before issue 54 (main at its start)")
    parser.add_argument("--dir", default="/tmp/hf_job")
    parser.add_argument("--only", help="run the variants whose name contains this text (e.g. after)")
    parser.add_argument("--layout", default="2x1x1", help="dp x pp x tp of 2 ranks: 2x1x1, or 1x1x2 (each rank holds "
                        "half of every weight, so half the optimizer's memory; tied embeddings forbid pp)")
    args = parser.parse_args()
    work = Path(args.dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    write_variant(work / "before", scripts_at(args.before, ["11_gpt_tensor_parallel.ipynb", "16_your_model.ipynb"]))
    write_variant(work / "after", scripts_at(None, ["11_gpt_tensor_parallel.ipynb", "12_3d_parallelism.ipynb",
                                                    "16_your_model.ipynb", "17_training_job.ipynb"]))
    sys.path.insert(0, str(work / "after"))
    import gpt
    weights = gpt.init_weights(CONFIG, 0)
    size = sum(w.nbytes for w in weights.values())
    print(f"{sum(w.size for w in weights.values()):,} parameters, {size / 2**30:.2f} GiB in float32", flush=True)
    (work / "config.json").write_text(json.dumps(CONFIG))
    np.savez(work / "weights.npz", **weights)
    del weights
    np.save(work / "tokens.npy", np.random.default_rng(0).integers(0, CONFIG["vocab"], 200_000).astype(np.int32))
    common = ("--config", work / "config.json", "--weights", work / "weights.npz", "--layout", args.layout,
              "--batch", 2, "--steps", args.steps)
    variants = {"before (NumPy Adam, float32)": ("before", ()),
                "after, float32 (ZeRO-1 AdamW)": ("after", ("--tokens", work / "tokens.npy")),
                "after, float16 amp (ZeRO-1 AdamW)": ("after", ("--tokens", work / "tokens.npy",
                                                                "--precision", "fp16"))}
    variants = {name: v for name, v in variants.items() if args.only is None or args.only in name}
    results = {name: {"step_s": [], "peak_mb": [], "load": []} for name in variants}
    for round_ in range(args.rounds):
        for name, (folder, extra) in variants.items():
            load = os.getloadavg()[0]
            for attempt in range(3):   # under a heavy load one rank may wait past mccl's receive timeout (~30 s)
                run = launch(work / folder / "train_hf.py", *common, *extra, name="bench-hf-job", workers=2,
                             timeout=900, quiet=True)
                if run.returncode == 0:
                    break
                last = run.output.strip().splitlines()[-1][:100] if run.output.strip() else "no output"
                print(f"round {round_ + 1}, {name}: attempt {attempt + 1} failed ({last})", flush=True)
            run.check()
            times = [line["time"] for line in run.records(0, "step")]
            step = statistics.median(b - a for a, b in zip(times[1:], times[2:]))   # after the first (compiling) step
            peaks = [run.records(r, "run")[0]["peak_mb"] for r in range(2)]
            results[name]["step_s"].append(step)
            results[name]["peak_mb"].append(max(peaks))
            results[name]["load"].append(load)
            print(f"round {round_ + 1}, {name}: step {step:.2f} s, peak host memory per rank {peaks} MB, "
                  f"load average {load:.1f} before the job ({run.wall_time:.0f} s in all)", flush=True)
            shutil.rmtree(run.run_dir, ignore_errors=True)
    print(f"\n| train_hf.py, 2 ranks, {args.layout} | step, s (median) | peak host memory per rank, MB (median of "
          "the larger rank) | load average before each job |\n|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {statistics.median(r['step_s']):.2f} ({', '.join(f'{x:.2f}' for x in r['step_s'])}) | "
              f"{statistics.median(r['peak_mb']):.0f} ({', '.join(f'{x:.0f}' for x in r['peak_mb'])}) | "
              f"{', '.join(f'{x:.1f}' for x in r['load'])} |")


if __name__ == "__main__":
    main()
