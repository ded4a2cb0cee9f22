"""Host memory of MindSpore 2.10's AdamW (mindspore.experimental.optim.AdamW) on CPU, in PyNative: resident memory
before and after its first steps on a float32 Parameter of N elements (default 136 million, Qwen2.5-0.5B's embedding
of 151936 x 896), cut into pieces of at most 2**24 elements as notebook 12's zero.py could cut it. Run by hand:

    .venv/bin/python benchmarks/adamw_memory.py [--elements 136000000] [--piece 16777216]

Its two moments are 8 bytes per element; what the steps add beyond them is MindSpore's working memory for the update.
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor
from mindspore.experimental.optim import AdamW


def rss_mb():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=136_000_000)
    parser.add_argument("--piece", type=int, default=2**24)
    args = parser.parse_args()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.runtime.launch_blocking()
    n, size = args.elements, args.piece
    starts = range(0, n, size)
    pieces = [Parameter(Tensor(np.zeros(min(size, n - a), np.float32)), name=f"piece{k}") for k, a in enumerate(starts)]
    grads = tuple(Tensor(np.ones(p.size, np.float32)) for p in pieces)
    before = rss_mb()
    optimizer = AdamW(pieces, lr=1e-3)
    made = rss_mb()
    for step in range(3):
        optimizer(grads)
        print(f"step {step + 1}: {rss_mb() - before} MB above the weights and gradients")
    print(f"{n:,} float32 elements in {len(pieces)} pieces ({4 * n / 2**20:.0f} MB): AdamW made {made - before} MB, "
          f"its moments are {8 * n / 2**20:.0f} MB; after 3 steps {rss_mb() - before} MB above the weights and "
          "gradients")


if __name__ == "__main__":
    main()
