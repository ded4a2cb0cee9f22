"""The worker entry point every launched process runs: `python -m helpers.train`. Introduced in notebook 01.

The article's steps 1-4 in MindSpore 2.10 form: set the mode and device, `init()` the
communication, choose the parallel mode, shard a learnable dataset, train SimpleNet with
`ms.Model`, log on rank 0, and write this rank's metrics to OUT/rank_<k>/metrics.jsonl.

Under msrun the same command also runs as the scheduler process (MS_ROLE=MS_SCHED): its `init()`
serves the cluster and never returns, so nothing with side effects happens before `init()`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from helpers.device import detect_device
from helpers.dist import barrier, setup_distributed

PARALLEL_MODES = ("data_parallel",)
RUN_DIR_ENV = "TUTORIAL_RUN_DIR"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m helpers.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel-mode", default="data_parallel", choices=PARALLEL_MODES)
    parser.add_argument("--net", default="simple", choices=("simple",), help="network to train")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank; global batch = this x ranks")
    parser.add_argument("--samples", type=int, default=2048, help="training samples in the whole dataset")
    parser.add_argument("--eval-samples", type=int, default=512, help="held-out samples for evaluation")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0, help="same on every rank (weights and shuffling)")
    parser.add_argument("--no-gradients-mean", dest="gradients_mean", action="store_false",
                        help="sum gradients across ranks instead of averaging them")
    parser.add_argument("--sink", action="store_true", help="dataset_sink_mode=True (ignored on CPU)")
    parser.add_argument("--log-every", type=int, default=5, help="rank-0 progress line every N steps")
    parser.add_argument("--out", default=os.environ.get(RUN_DIR_ENV, "runs/manual"),
                        help=f"run folder (default: ${RUN_DIR_ENV}, set by the launcher)")
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "samples", "eval_samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = detect_device()
    rank, world = setup_distributed(device)

    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn

    from helpers.callbacks import MetricsWriter, Rank0Logger, weights_checksum
    from helpers.data import make_arrays, sharded_dataset
    from helpers.nets import SimpleNet

    # Step 2: data parallelism. gradients_mean=True averages the gradients of all ranks.
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=args.gradients_mean)
    ms.set_seed(args.seed)          # identical initial weights on every rank
    ds.config.set_seed(args.seed)   # identical shuffle order, so shards stay disjoint

    # Step 3: every rank shards the same arrays and reads only its own part.
    data, label = make_arrays(args.samples, seed=args.seed)
    train_set = sharded_dataset(data, label, args.batch_size, rank=rank, world=world)
    if train_set.get_dataset_size() == 0:
        raise SystemExit(f"rank {rank}: {args.samples} samples over {world} ranks leave fewer than one batch "
                         f"of {args.batch_size}: raise --samples or lower --batch-size")

    # Step 4: the article's network, loss and optimizer.
    net = SimpleNet()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=args.lr, momentum=args.momentum)
    model = ms.Model(net, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"})

    rank_dir = Path(args.out) / f"rank_{rank}"
    writer = MetricsWriter(rank_dir / "metrics.jsonl", net, rank, args.batch_size)
    if rank == 0:
        print(f"[rank 0] {world} ranks on {device}, {train_set.get_dataset_size()} steps/epoch, "
              f"global batch {args.batch_size * world}", flush=True)
    start = time.perf_counter()
    model.train(args.epochs, train_set, callbacks=[Rank0Logger(rank, args.log_every), writer],
                dataset_sink_mode=args.sink)
    train_seconds = time.perf_counter() - start

    eval_data, eval_label = make_arrays(args.eval_samples, seed=args.seed + 10_000)
    accuracy = model.eval(sharded_dataset(eval_data, eval_label, args.batch_size, shuffle=False,
                                          drop_remainder=False), dataset_sink_mode=False)["accuracy"]
    sha, total = weights_checksum(net)
    final = {"kind": "final", "world": world, "device": device, "train_seconds": train_seconds,
             "eval_accuracy": float(accuracy), "weights_sha": sha, "weights_sum": total}
    writer.write(final)
    barrier()
    print(f"[rank {rank}] done: eval accuracy {accuracy:.3f}, weights sha {sha}", flush=True)
    (rank_dir / "args.json").write_text(json.dumps(vars(args), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
