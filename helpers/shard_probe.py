"""A worker that records which samples its rank reads (`python -m helpers.shard_probe`). Notebook 03.

Run it under the launcher (`launch(..., module="helpers.shard_probe")`). Every rank builds the same
dataset with a sample-id column (`helpers.data.sharded_dataset(..., with_index=True)`), reads its
shard for a few epochs, checks that each row's data really is row `index` of the arrays, and writes
what it read to OUT/rank_<k>/ids.json:

    {"rank": k, "world": N, "shuffle": true, "seed": 0, "batch_size": 32, "cases": [
        {"samples": 1001, "epochs": [[ids read in epoch 0], [ids read in epoch 1]],
         "rows_match": true, "global_counts": [reads of sample 0 by all ranks, ...]}, ...]}

`global_counts` is the sum over ranks of how often each sample was read in the first epoch,
computed inside the job by a real AllReduce: every rank ends up holding the whole picture.

Under msrun the same command also runs as the scheduler process (MS_ROLE=MS_SCHED): its `init()`
serves the cluster and never returns, so nothing with side effects happens before `init()`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from helpers.device import detect_device

RUN_DIR_ENV = "TUTORIAL_RUN_DIR"
IDS_FILE = "ids.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m helpers.shard_probe",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[1001],
                        help="dataset sizes to probe, one case each (e.g. 1000 1001)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--seed", type=int, default=0, help="dataset seed, the same on every rank")
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    parser.add_argument("--out", default=os.environ.get(RUN_DIR_ENV, "runs/manual"),
                        help=f"run folder (default: ${RUN_DIR_ENV}, set by the launcher)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or min(args.samples) < 1:
        parser.error("--epochs, --batch-size and every --samples value must be at least 1")
    return args


def read_shard(samples: int, rank: int, world: int, args: argparse.Namespace) -> dict:
    """Read this rank's shard of a `samples`-row dataset for `args.epochs` epochs; return what was read."""
    import numpy as np

    from helpers.data import make_arrays, sharded_dataset

    data, label = make_arrays(samples, seed=args.seed)
    dataset = sharded_dataset(data, label, args.batch_size, rank=rank, world=world, shuffle=args.shuffle,
                              with_index=True, drop_remainder=False)  # keep the last partial batch: read all
    iterator = dataset.create_dict_iterator(num_epochs=args.epochs, output_numpy=True)
    epochs, rows_match = [], True
    for _ in range(args.epochs):
        ids = []
        for batch in iterator:
            index = batch["index"]
            rows_match &= bool(np.array_equal(batch["data"], data[index]))
            rows_match &= bool(np.array_equal(batch["label"], label[index]))
            ids.extend(int(i) for i in index)
        epochs.append(ids)
    return {"samples": samples, "epochs": epochs, "rows_match": rows_match}


def all_reduce_counts(ids: list[int], samples: int) -> list[int]:
    """How often each sample was read, summed over all ranks by a real AllReduce."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=samples).astype(np.float32)
    total = ops.AllReduce()(ms.Tensor(counts)).asnumpy()
    return [int(round(float(c))) for c in total]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Step 1 of the article in 2.10 form: graph mode, the device, init(). The scheduler stops in init().
    from helpers.train import barrier, setup_distributed

    rank, world = setup_distributed(detect_device())   # init(), then get_rank() / get_group_size()

    import mindspore.dataset as ds

    cases = []
    for samples in args.samples:
        ds.config.set_seed(args.seed)   # the same on every rank, or shuffled shards overlap
        case = read_shard(samples, rank, world, args)
        case["global_counts"] = all_reduce_counts(case["epochs"][0], samples)
        cases.append(case)
        print(f"[rank {rank}] {samples} samples: read {len(case['epochs'][0])} per epoch, "
              f"rows match: {case['rows_match']}", flush=True)

    rank_dir = Path(args.out) / f"rank_{rank}"
    rank_dir.mkdir(parents=True, exist_ok=True)
    record = {"rank": rank, "world": world, "shuffle": args.shuffle, "seed": args.seed,
              "batch_size": args.batch_size, "cases": cases}
    (rank_dir / IDS_FILE).write_text(json.dumps(record), encoding="utf-8")
    barrier()   # no rank leaves while a peer still waits in a collective (DESIGN.md §5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
