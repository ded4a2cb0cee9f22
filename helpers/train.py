"""The worker entry point every launched process runs: `python -m helpers.train`. Introduced in notebook 01.

The article's steps 1-4 in MindSpore 2.10 form: set the mode and device, `init()` the
communication, choose the parallel mode, shard a learnable dataset, train with `ms.Model`, log on
rank 0, and write this rank's metrics to OUT/rank_<k>/metrics.jsonl. Later notebooks add options:
mixed precision (05), checkpoints, resume and injected faults (04), other networks for scaling (04),
and SEMI_AUTO_PARALLEL / AUTO_PARALLEL with shard strategies for SimpleNet (02; Ascend only: on CPU
`--check` refuses them at once, naming the limit).

Under msrun the same command also runs as the scheduler process (MS_ROLE=MS_SCHED): its `init()`
serves the cluster and never returns, so nothing with side effects happens before `init()`.
`python -m helpers.train --check ARGS` validates ARGS for this device and exits (the launcher
runs it before starting a job, so a bad option fails in a second, not after the cluster forms).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from helpers.device import detect_device
from helpers.dist import barrier, one_core_per_rank, setup_distributed
from helpers.parallel_modes import (
    APIS,
    PARALLEL_MODES,
    SEARCH_MODES,
    STRATEGIES,
    STRATEGY_FILE,
    ParallelModeUnavailable,
    check_supported,
)

NETWORKS = ("simple", "mlp", "conv")
AMP_LEVELS = ("O0", "O1", "O2", "O3", "auto")
FAULTS = ("raise", "kill", "hang")
RUN_DIR_ENV = "TUTORIAL_RUN_DIR"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m helpers.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="validate the arguments for this device and exit")
    parser.add_argument("--parallel-mode", default="data_parallel", choices=PARALLEL_MODES,
                        help="semi_auto_parallel and auto_parallel need Ascend (notebook 02)")
    parser.add_argument("--search-mode", choices=SEARCH_MODES, default=None,
                        help="auto_parallel only (default recursive_programming, MindSpore's default)")
    parser.add_argument("--api", choices=APIS, default="context",
                        help="semi/auto parallel through set_auto_parallel_context (context) or the 2.10 "
                             "AutoParallel wrapper (autoparallel)")
    parser.add_argument("--strategy", choices=STRATEGIES, default="megatron",
                        help="shard strategies for SimpleNet's operators (semi_auto_parallel; sharding_propagation "
                             "uses fc1's as its anchor)")
    parser.add_argument("--net", default="simple", choices=NETWORKS,
                        help="simple: the article's SimpleNet; mlp: 1024-4096-1024 (33 MB of gradients); "
                             "conv: compute-heavy, parameter-light")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank; global batch = this x ranks")
    parser.add_argument("--samples", type=int, default=2048, help="training samples in the whole dataset")
    parser.add_argument("--eval-samples", type=int, default=512, help="held-out samples for evaluation")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0, help="same on every rank (weights and shuffling)")
    parser.add_argument("--no-gradients-mean", dest="gradients_mean", action="store_false",
                        help="sum gradients across ranks instead of averaging them")
    parser.add_argument("--amp-level", default="O0", choices=AMP_LEVELS, help="mixed precision level (notebook 05)")
    parser.add_argument("--loss-scale", type=float, default=None,
                        help="FixedLossScaleManager(S, drop_overflow_update=False); the optimizer gets the same S")
    parser.add_argument("--sink", action="store_true", help="dataset_sink_mode=True (ignored on CPU)")
    parser.add_argument("--save-ckpt", action="store_true", help="checkpoint every epoch into OUT/rank_<k>/ckpt")
    parser.add_argument("--resume-from", help="a previous run folder: each rank resumes from its last checkpoint")
    parser.add_argument("--fault", choices=FAULTS, help="inject a fault (notebook 04): raise, kill -9, or hang")
    parser.add_argument("--fault-rank", type=int, default=0, help="rank that suffers --fault")
    parser.add_argument("--fault-step", type=int, default=1, help="global step after which --fault happens")
    parser.add_argument("--pin", choices=("auto", "yes", "no"), default="auto",
                        help="pin each rank to one CPU core with one kernel thread, after init() (auto: on CPU)")
    parser.add_argument("--log-every", type=int, default=5, help="rank-0 progress line every N steps")
    parser.add_argument("--out", default=os.environ.get(RUN_DIR_ENV, "runs/manual"),
                        help=f"run folder (default: ${RUN_DIR_ENV}, set by the launcher)")
    return parser


def parse_args(argv: list[str] | None = None, device: str | None = None) -> argparse.Namespace:
    """Parse and validate; errors name the option and the fix (exit code 2).

    `device` lets device-specific checks (notebook 02: semi/auto parallel needs Ascend) refuse early.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "samples", "eval_samples", "log_every", "fault_step"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.loss_scale is not None and args.loss_scale <= 0:
        parser.error("--loss-scale must be positive (e.g. 1024)")
    if args.resume_from and not Path(args.resume_from, "rank_0", "ckpt").is_dir():
        parser.error(f"--resume-from {args.resume_from}: no rank_0/ckpt folder there; "
                     "give the run folder of a job started with --save-ckpt")
    if args.search_mode and args.parallel_mode != "auto_parallel":
        parser.error(f"--search-mode only works with --parallel-mode auto_parallel, not {args.parallel_mode}")
    if args.parallel_mode == "auto_parallel" and args.search_mode is None:
        args.search_mode = "recursive_programming"
    if args.parallel_mode != "data_parallel":
        if args.api == "autoparallel" and args.search_mode == "dynamic_programming":
            parser.error("--search-mode dynamic_programming exists only in set_auto_parallel_context: "
                         "use --api context (MindSpore documents it as 'Not recommended')")
        if args.net != "simple":
            parser.error(f"--parallel-mode {args.parallel_mode}: the shard strategies are written for "
                         "SimpleNet; use --net simple")
        try:
            check_supported(args.parallel_mode, device or detect_device())
        except ParallelModeUnavailable as exc:   # the limit, not a usage mistake: no usage dump
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
    elif args.api != "context":
        parser.error("--api autoparallel has no data_parallel mode: DATA_PARALLEL is set with the context API")
    args.out = os.path.abspath(args.out)  # the worker later works inside its rank folder
    if args.resume_from:
        args.resume_from = os.path.abspath(args.resume_from)
    return args


def fault_injector(kind: str, rank: int, step: int, my_rank: int):
    """A callback that makes rank `rank` fail after global step `step`, to show detection and recovery (notebook 04)."""
    import mindspore as ms

    class FaultInjector(ms.Callback):
        def on_train_step_end(self, run_context):
            if my_rank != rank or run_context.original_args().cur_step_num != step:
                return
            print(f"[rank {my_rank}] injecting fault '{kind}' after step {step}", flush=True)
            if kind == "raise":
                raise RuntimeError(f"injected fault on rank {my_rank} after step {step}")
            if kind == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            while True:  # hang: stop making progress, as a deadlocked worker would
                time.sleep(3600)

    return FaultInjector()


def build_network(name: str):
    """(network, input shape of one sample, classes) for --net."""
    from helpers.nets import MLP, SimpleNet, SmallConvNet

    if name == "mlp":
        return MLP(), (1024,), 1024
    if name == "conv":
        return SmallConvNet(), (3, 32, 32), 10
    return SimpleNet(), (32,), 10


def latest_checkpoint(rank_dir: Path) -> tuple[Path, int]:
    """The newest net-<epoch>_<step>.ckpt in rank_dir/ckpt and its epoch."""
    ckpts = sorted((rank_dir / "ckpt").glob("net-*.ckpt"), key=lambda p: p.stat().st_mtime)
    if not ckpts:
        raise SystemExit(f"no checkpoint in {rank_dir / 'ckpt'}: nothing to resume from")
    epoch = int(ckpts[-1].stem.split("-")[1].split("_")[0])
    return ckpts[-1], epoch


def main(argv: list[str] | None = None) -> int:
    device = detect_device()
    args = parse_args(argv, device)
    if args.check:
        return 0
    rank, world = setup_distributed(device)
    core, _ = one_core_per_rank(rank, device, args.pin)   # on CPU: one core per rank scales best (notebook 04)
    if rank == 0 and core is not None:
        print("[rank 0] each rank pinned to one CPU core, 1 MindSpore kernel thread (--pin no: off)", flush=True)

    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn

    from helpers.callbacks import MetricsWriter, Rank0Logger, weights_checksum
    from helpers.data import make_arrays, sharded_dataset

    rank_dir = Path(args.out) / f"rank_{rank}"
    rank_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(rank_dir)  # what MindSpore writes to the working directory (amp O1's rewritten_network/) stays here
    # Step 2: data parallelism. gradients_mean=True averages the gradients of all ranks.
    if args.parallel_mode == "data_parallel":
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                     gradients_mean=args.gradients_mean)
    ms.set_seed(args.seed)          # identical initial weights on every rank
    ds.config.set_seed(args.seed)   # identical shuffle order, so shards stay disjoint

    net, sample_shape, classes = build_network(args.net)
    model_net = net
    if args.parallel_mode != "data_parallel":
        # Notebook 02 (Ascend only): shard strategies + SEMI_AUTO/AUTO_PARALLEL, saving the strategy file.
        from helpers.parallel_modes import configure_network

        model_net = configure_network(net, args.parallel_mode, args.search_mode, args.api, args.gradients_mean,
                                      args.strategy, str(rank_dir / STRATEGY_FILE), world)
    # Step 3: every rank shards the same arrays and reads only its own part.
    data, label = make_arrays(args.samples, seed=args.seed, shape=sample_shape, classes=classes)
    train_set = sharded_dataset(data, label, args.batch_size, rank=rank, world=world)
    steps_per_epoch = train_set.get_dataset_size()
    if steps_per_epoch == 0:
        raise SystemExit(f"rank {rank}: {args.samples} samples over {world} ranks leave fewer than one batch "
                         f"of {args.batch_size}: raise --samples or lower --batch-size")

    # Step 4: the article's loss and optimizer; mixed precision and loss scaling as in its section 03.
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    scale = args.loss_scale or 1.0
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=args.lr, momentum=args.momentum, loss_scale=scale)
    manager = ms.FixedLossScaleManager(scale, drop_overflow_update=False) if args.loss_scale else None
    model = ms.Model(model_net, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy"},
                     amp_level=args.amp_level, loss_scale_manager=manager)

    initial_epoch = 0
    if args.resume_from:
        # Restore the weights AND the optimizer state (momentum buffers, step), then continue
        # counting epochs from there: only all three together reproduce an uninterrupted run.
        ckpt, initial_epoch = latest_checkpoint(Path(args.resume_from) / f"rank_{rank}")
        params = ms.load_checkpoint(str(ckpt))
        ms.load_param_into_net(net, params)
        ms.load_param_into_net(optimizer, params)
        # ...and the data: fast-forward the pipeline so the next batch is the one the failed run
        # would have read next (same shuffle of the same epoch), not epoch 1's first batch again.
        train_set.set_init_step(initial_epoch * steps_per_epoch)
        if rank == 0:
            print(f"[rank 0] resumed from {ckpt.name}: continuing after epoch {initial_epoch}", flush=True)

    writer = MetricsWriter(rank_dir / "metrics.jsonl", net, rank, args.batch_size)
    callbacks = [Rank0Logger(rank, args.log_every), writer]
    if args.save_ckpt:
        config = ms.CheckpointConfig(save_checkpoint_steps=steps_per_epoch, keep_checkpoint_max=args.epochs)
        callbacks.append(ms.ModelCheckpoint(prefix="net", directory=str(rank_dir / "ckpt"), config=config))
    if args.fault:
        callbacks.append(fault_injector(args.fault, args.fault_rank, args.fault_step, rank))
    if rank == 0:
        mode = args.parallel_mode + (f" ({args.search_mode})" if args.search_mode else "")
        print(f"[rank 0] {world} ranks on {device}, {mode}, net {args.net}, {steps_per_epoch} steps/epoch, "
              f"global batch {args.batch_size * world}, amp {args.amp_level}", flush=True)
    start = time.perf_counter()
    model.train(args.epochs, train_set, callbacks=callbacks, dataset_sink_mode=args.sink,
                initial_epoch=initial_epoch)
    train_seconds = time.perf_counter() - start

    eval_data, eval_label = make_arrays(args.eval_samples, seed=args.seed + 10_000, shape=sample_shape,
                                        classes=classes)
    eval_set = sharded_dataset(eval_data, eval_label, args.batch_size, shuffle=False, drop_remainder=False)
    accuracy = model.eval(eval_set, dataset_sink_mode=False)["accuracy"]
    sha, total = weights_checksum(net)
    writer.write({"kind": "final", "world": world, "device": device, "net": args.net, "amp_level": args.amp_level,
                  "train_seconds": train_seconds, "eval_accuracy": float(accuracy), "weights_sha": sha,
                  "weights_sum": total, "cpu_affinity": sorted(os.sched_getaffinity(0)) if core is not None else None})
    (rank_dir / "args.json").write_text(json.dumps(vars(args), indent=1), encoding="utf-8")
    barrier()
    print(f"[rank {rank}] done: eval accuracy {accuracy:.3f}, weights sha {sha}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
