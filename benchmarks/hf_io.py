"""Notebook 16's loader and saver on a 1 GB folder: hf.save, then hf.load, timed once each (issue 45's target: each
under 30 s on the 2-core machine). A Llama-shaped model of random float32 weights, saved in 4 shards with an index.

    .venv/bin/python benchmarks/hf_io.py [--gib 1.0] [--dir /tmp/hf_io]
"""
import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers.scripts import import_cells, notebook_scripts  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="the model's float32 size")
    parser.add_argument("--dir", default="/tmp/hf_io")
    args = parser.parse_args()
    work = Path(args.dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hf = import_cells(work / "hf.py", notebook_scripts(ROOT / "notebooks" / "16_your_model.ipynb")["scripts/hf.py"])

    dim, ffn, vocab = 2048, 5632, 32000
    per_layer = 4 * dim * dim + 3 * dim * ffn + 2 * dim
    layers = max(1, round((args.gib * 2**30 / 4 - 2 * vocab * dim - dim) / per_layer))
    cfg = {"vocab": vocab, "dim": dim, "layers": layers, "heads": 16, "kv_heads": 16, "ffn": ffn, "seq": 2048}
    rng = np.random.default_rng(0)
    weights = {"embed": rng.standard_normal((vocab, dim), np.float32), "norm.weight": np.ones(dim, np.float32),
               "output.weight": rng.standard_normal((vocab, dim), np.float32)}
    for i in range(layers):
        for name, shape in (("attn.wq", (dim, dim)), ("attn.wk", (dim, dim)), ("attn.wv", (dim, dim)),
                            ("attn.wo", (dim, dim)), ("mlp.w1", (ffn, dim)), ("mlp.w3", (ffn, dim)),
                            ("mlp.w2", (dim, ffn))):
            weights[f"layers.{i}.{name}.weight"] = rng.standard_normal(shape, np.float32)
        weights[f"layers.{i}.attn_norm.weight"] = np.ones(dim, np.float32)
        weights[f"layers.{i}.mlp_norm.weight"] = np.ones(dim, np.float32)
    size = sum(w.nbytes for w in weights.values())

    began = time.perf_counter()
    hf.save(work / "model", cfg, weights, max_shard_bytes=size // 4 + 1)
    saved = time.perf_counter() - began
    began = time.perf_counter()
    _, loaded = hf.load(work / "model")
    read = time.perf_counter() - began
    assert all(np.array_equal(loaded[k], w) for k, w in weights.items()), "the reloaded weights differ"
    files = sorted(p.name for p in (work / "model").iterdir())
    print(f"{size / 2**30:.2f} GiB, {layers} layers, files {files}")
    print(f"hf.save {saved:.1f} s, hf.load {read:.1f} s, reloaded equal")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
