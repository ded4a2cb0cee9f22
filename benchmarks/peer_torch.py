"""The peer framework's side of benchmarks/RESULTS.md: PyTorch DDP (gloo) on the same nets and data sizes.

For comparison only: PyTorch is never a dependency of the series. Install it into a separate venv:

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0 'numpy<2'

Scaling (same nets, per-rank batch, warm-up and timed steps as `python -m helpers.scaling`):

    /tmp/torchvenv/bin/torchrun --nproc_per_node 2 benchmarks/peer_torch.py --nets simple,mlp,conv --pin yes

Launch cost (init + 10 steps of the 32->64->10 net, like benchmarks/minimal_job.py):

    /tmp/torchvenv/bin/torchrun --nproc_per_node 2 benchmarks/peer_torch.py --minimal

Rank 0 prints one JSON line per net: {"net", "world", "samples_per_s" (aggregate), "step_ms", ...}.
"""

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


def build(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)), (1024,), 1024
    if name == "conv":  # benchmarks/nets.py SmallConvNet: MindSpore's Conv2d has no bias by default
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.ReLU(),
                             nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)), (3, 32, 32), 10
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (32,), 10


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nets", default="simple,mlp,conv")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--pin", choices=("yes", "no"), default="yes")
    parser.add_argument("--minimal", action="store_true")
    args = parser.parse_args()
    t0 = time.time()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.minimal:
        net, _, _ = build("simple")
        model = nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
        for _ in range(10):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        if rank == 0:
            print(json.dumps({"minimal": True, "init_s": time.time() - t0, "loss": float(loss)}), flush=True)
        dist.destroy_process_group()
        return
    if args.pin == "yes":
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
        torch.set_num_threads(1)
    for name in args.nets.split(","):
        torch.manual_seed(0)
        net, shape, classes = build(name)
        model = nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        rng = np.random.default_rng(rank)
        x = torch.from_numpy(rng.standard_normal((args.batch_size, *shape)).astype(np.float32))
        y = torch.from_numpy(rng.integers(0, classes, args.batch_size))
        times = []
        dist.barrier()
        for _ in range(args.warmup + args.steps):
            start = time.perf_counter()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - start)
        step_s = statistics.median(times[args.warmup:])
        rate = torch.tensor([args.batch_size / step_s])
        dist.all_reduce(rate)
        if rank == 0:
            params = sum(p.numel() for p in net.parameters())
            print(json.dumps({"net": name, "world": world, "batch_size": args.batch_size, "pin": args.pin,
                              "step_ms": 1e3 * step_s, "samples_per_s": float(rate), "params": params}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
