"""Operator-level (tensor) parallelism by hand, with real collectives: `python -m helpers.tensor_parallel`.

Introduced in notebook 02. SEMI_AUTO_PARALLEL splits an operator's weight across devices and inserts the
collectives that make the result whole again. MindSpore refuses that mode on CPU, so this worker does the
same thing by hand on every rank of a real launch (`launch(module="helpers.tensor_parallel")`):

* column-parallel Dense: rank r holds output features r of the weight; `ops.AllGather` rebuilds the output;
* row-parallel Dense: rank r holds input features r; `ops.AllReduce` sums the partial products;
* SimpleNet as fc1 column-parallel -> ReLU -> fc2 row-parallel (one AllReduce, the Megatron pattern);

and compares forward outputs and every gradient with the single-device layer. Two collectives need a
custom `bprop` (backward) for that: AllReduce's own backward is another AllReduce, which multiplies the
gradients by the group size when every rank holds the same output gradient (shown first, for real); and
AllGather's backward is a ReduceScatter, which CPU lacks (the error is recorded). It also measures what
`gradients_mean` does to a real DATA_PARALLEL update (and `device_num`, from the article), and records
MindSpore's own answer when asked for SEMI_AUTO_PARALLEL here.

Every rank writes RUN/rank_<k>/tensor_parallel.json; `read_reports(run_dir)` loads them. The layers run in
PyNative mode by default (`--mode graph` compiles them instead; tests/test_tensor_parallel.py runs that);
the data-parallel step and the SEMI_AUTO_PARALLEL request always run in graph mode. Under msrun the
scheduler process runs this module too: nothing with side effects happens before `init()`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops

from helpers.device import detect_device
from helpers.dist import barrier, setup_distributed

REPORT_FILE = "tensor_parallel.json"
RUN_DIR_ENV = "TUTORIAL_RUN_DIR"
TOLERANCE = 1e-5   # max |error| allowed, relative to max(1, max |reference|)
FEATURES, CLASSES = 32, 10   # SimpleNet's input and output widths


def hidden_size(world: int, hidden: int = 64) -> int:
    """SimpleNet's hidden width rounded up to a multiple of `world` (64 for 1, 2, 4 or 8 ranks)."""
    return -(-hidden // world) * world


def shard_range(size: int, rank: int, world: int) -> slice:
    """The slice of a dimension of `size` that `rank` of `world` holds (equal, contiguous blocks)."""
    if size % world:
        raise ValueError(f"a dimension of {size} cannot be split into {world} equal blocks")
    step = size // world
    return slice(rank * step, (rank + 1) * step)


# ---------------------------------------------------------------- the collectives with a custom backward


class CopyToParallel(nn.Cell):
    """Forward: identity. Backward: AllReduce(sum) of the input gradient.

    Every rank feeds the same input to its slice of a column-parallel layer, so each rank's input gradient
    is only its slice's contribution; the full gradient is their sum.
    """

    def __init__(self):
        super().__init__()
        self.all_reduce = ops.AllReduce()

    def construct(self, x):
        return x

    def bprop(self, x, out, dout):
        return (self.all_reduce(dout),)


class ReduceFromParallel(nn.Cell):
    """Forward: AllReduce(sum) of the partial results. Backward: identity.

    A plain `ops.AllReduce` back-propagates with another AllReduce: every rank already holds the same
    output gradient, so that sums `world` equal copies and every gradient upstream comes out x world.
    """

    def __init__(self):
        super().__init__()
        self.all_reduce = ops.AllReduce()

    def construct(self, x):
        return self.all_reduce(x)

    def bprop(self, x, out, dout):
        return (dout,)


class GatherFromParallel(nn.Cell):
    """Forward: AllGather along axis 0. Backward: this rank's block of the output gradient.

    `ops.AllGather`'s own backward is a ReduceScatter(sum), which the CPU backend does not have (and which,
    with the same output gradient on every rank, would again give `world` times the gradient).
    """

    def __init__(self, rank: int, world: int):
        super().__init__()
        self.all_gather = ops.AllGather()
        self.rank = rank
        self.world = world

    def construct(self, x):
        return self.all_gather(x)

    def bprop(self, x, out, dout):
        return (ops.split(dout, x.shape[0], axis=0)[self.rank],)


# ---------------------------------------------------------------- the parallel layers


class ColumnParallelDense(nn.Cell):
    """nn.Dense split by output features: this rank holds rows `shard` of the [out, in] weight and bias.

    y_r = x W_r^T + b_r is this rank's block of the output columns; `gather` (an AllGather along the
    feature axis) rebuilds the full output. With `gather=None` the output stays split (as fc1 in Megatron).
    """

    def __init__(self, weight: np.ndarray, bias: np.ndarray, gather=None, copy=None):
        super().__init__()
        self.weight = Parameter(Tensor(weight), name="weight")
        self.bias = Parameter(Tensor(bias), name="bias")
        self.matmul = ops.MatMul(transpose_b=True)
        self.gather = gather
        self.copy = copy

    def construct(self, x):
        if self.copy is not None:
            x = self.copy(x)
        y = self.matmul(x, self.weight) + self.bias
        if self.gather is not None:
            y = self.gather(y.T).T   # AllGather concatenates along axis 0: gather [out_r, B] blocks
        return y


class RowParallelDense(nn.Cell):
    """nn.Dense split by input features: this rank holds columns `shard` of the weight; the bias is whole.

    Each rank multiplies its slice of the input by its slice of the weight, a partial sum of the output;
    `reduce` (an AllReduce) adds them up, then the bias is added once.
    """

    def __init__(self, weight: np.ndarray, bias: np.ndarray, reduce):
        super().__init__()
        self.weight = Parameter(Tensor(weight), name="weight")
        self.bias = Parameter(Tensor(bias), name="bias")
        self.matmul = ops.MatMul(transpose_b=True)
        self.reduce = reduce

    def construct(self, x):
        return self.reduce(self.matmul(x, self.weight)) + self.bias


class MegatronSimpleNet(nn.Cell):
    """SimpleNet with fc1 column-parallel and fc2 row-parallel: one AllReduce in the forward pass.

    The hidden activation stays split between the layers (ReLU is element-wise), exactly what the shard
    strategies fc1 ((1, 1), (N, 1)) and fc2 ((1, N), (1, N)) ask SEMI_AUTO_PARALLEL to do.
    """

    def __init__(self, params: dict, rank: int, world: int):
        super().__init__()
        hidden = shard_range(params["fc1.weight"].shape[0], rank, world)
        self.fc1 = ColumnParallelDense(params["fc1.weight"][hidden], params["fc1.bias"][hidden],
                                       copy=CopyToParallel())
        self.relu = nn.ReLU()
        self.fc2 = RowParallelDense(params["fc2.weight"][:, hidden], params["fc2.bias"], ReduceFromParallel())

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class _SumLoss(nn.Cell):
    """loss = sum(net(x) * dy), so that d loss / d net(x) = dy: any output gradient can be fed in."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, dy):
        return (self.net(x) * dy).sum()


class ForwardAndGrads(nn.Cell):
    """(net(x), d loss / d x, d loss / d every parameter) for loss = sum(net(x) * dy), in one graph."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss = _SumLoss(net)
        self.weights = ms.ParameterTuple(net.trainable_params())
        self.grad = ops.GradOperation(get_all=True, get_by_list=True)

    def construct(self, x, dy):
        input_grads, param_grads = self.grad(self.loss, self.weights)(x, dy)
        return self.net(x), input_grads[0], param_grads


class ParamGrads(nn.Cell):
    """d loss / d every parameter of `net_with_loss(x, label)` (no reduction across ranks)."""

    def __init__(self, net_with_loss, params):
        super().__init__()
        self.net_with_loss = net_with_loss
        self.weights = ms.ParameterTuple(params)
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x, label):
        return self.grad(self.net_with_loss, self.weights)(x, label)


# ---------------------------------------------------------------- checks


def compare(value, reference) -> dict:
    """{"max_err": max |value - reference|, "scale": max |reference|}."""
    value, reference = np.asarray(value, np.float64), np.asarray(reference, np.float64)
    if value.shape != reference.shape:
        raise ValueError(f"shape {value.shape} vs reference {reference.shape}")
    return {"max_err": float(np.abs(value - reference).max()), "scale": float(np.abs(reference).max())}


def agrees(entry: dict, tol: float = TOLERANCE) -> bool:
    """True when a `compare` result is within `tol` relative to max(1, scale)."""
    return entry["max_err"] <= tol * max(1.0, entry["scale"])


def _run(net, x, dy, short_names: bool = True):
    """(output, input gradient, {parameter name: gradient}) of `net` as numpy arrays."""
    names = [p.name.split(".")[-1] if short_names else p.name for p in net.trainable_params()]  # before wrapping
    out, dx, grads = ForwardAndGrads(net)(Tensor(x), Tensor(dy))
    return out.asnumpy(), dx.asnumpy(), {n: g.asnumpy() for n, g in zip(names, grads)}


def _dense_case(net, x, dy, ref: dict, rows=slice(None), cols=slice(None), x_cols=slice(None)) -> dict:
    """Run a parallel Dense and compare with the reference, sliced to what this rank holds."""
    out, dx, grads = _run(net, x, dy)
    return {"forward": compare(out, ref["out"]),
            "grads": {"weight": compare(grads["weight"], ref["weight"][rows, cols]),
                      "bias": compare(grads["bias"], ref["bias"][rows]),
                      "input": compare(dx, ref["input"][:, x_cols])},
            "grad_ratio": float(np.abs(grads["weight"]).max() / np.abs(ref["weight"][rows, cols]).max())}


def _reference(net, x, dy) -> dict:
    out, dx, grads = _run(net, x, dy)
    return {"out": out, "input": dx, **grads}


def _error_text(exc: Exception) -> str:
    """The message of a MindSpore error without its framework call stack."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.startswith("---")]
    keep = []
    for line in lines:
        if line.startswith(("- The Function Call Stack", "- C++ Call Stack", "In file")):
            break
        keep.append(line.split(" node: ")[0])   # drop the internal graph-node dump
    return f"{type(exc).__name__}: " + " ".join(keep)


def tensor_parallel_checks(rank: int, world: int, seed: int, batch: int) -> dict:
    """Every column/row/Megatron case, forward and backward, against the single-device layers."""
    rng = np.random.default_rng(seed)   # the same numbers on every rank
    hidden = hidden_size(world)
    x = rng.standard_normal((batch, FEATURES)).astype(np.float32)
    params = {"fc1.weight": rng.standard_normal((hidden, FEATURES)).astype(np.float32) / 4,
              "fc1.bias": rng.standard_normal(hidden).astype(np.float32),
              "fc2.weight": rng.standard_normal((CLASSES, hidden)).astype(np.float32) / 4,
              "fc2.bias": rng.standard_normal(CLASSES).astype(np.float32)}
    dy_hidden = rng.standard_normal((batch, hidden)).astype(np.float32)
    dy_out = rng.standard_normal((batch, CLASSES)).astype(np.float32)
    h = rng.standard_normal((batch, hidden)).astype(np.float32)   # the row-parallel layer's input
    mine = shard_range(hidden, rank, world)
    checks = {}

    def dense(weight, bias):
        layer = nn.Dense(weight.shape[1], weight.shape[0])
        layer.weight.set_data(Tensor(weight))
        layer.bias.set_data(Tensor(bias))
        return layer

    # Column parallel: fc1 split by output features, output rebuilt with AllGather.
    ref1 = _reference(dense(params["fc1.weight"], params["fc1.bias"]), x, dy_hidden)
    w1, b1 = params["fc1.weight"][mine], params["fc1.bias"][mine]
    try:   # plain ops.AllGather: its backward is ReduceScatter
        case = _dense_case(ColumnParallelDense(w1, b1, gather=ops.AllGather(), copy=CopyToParallel()), x,
                           dy_hidden, ref1, rows=mine)
        checks["column_plain_allgather"] = {"ran": True, **case}
    except RuntimeError as exc:
        checks["column_plain_allgather"] = {"ran": False, "error": _error_text(exc)}
    checks["column"] = _dense_case(ColumnParallelDense(w1, b1, gather=GatherFromParallel(rank, world),
                                                       copy=CopyToParallel()), x, dy_hidden, ref1, rows=mine)

    # Row parallel: fc2 split by input features, partial products summed with AllReduce.
    ref2 = _reference(dense(params["fc2.weight"], params["fc2.bias"]), h, dy_out)
    w2 = params["fc2.weight"][:, mine]
    for name, reduce in (("row_plain_allreduce", ops.AllReduce()), ("row", ReduceFromParallel())):
        checks[name] = _dense_case(RowParallelDense(w2, params["fc2.bias"], reduce), h[:, mine], dy_out, ref2,
                                   cols=mine, x_cols=mine)

    # SimpleNet, Megatron style, against the single-device SimpleNet with the same weights.
    from helpers.nets import SimpleNet

    full = SimpleNet(FEATURES, hidden, CLASSES)
    for name, p in full.parameters_and_names():
        p.set_data(Tensor(params[name]))
    out, dx, full_grads = _run(full, x, dy_out, short_names=False)
    p_out, p_dx, p_grads = _run(MegatronSimpleNet(params, rank, world), x, dy_out, short_names=False)
    mine_of = {"fc1.weight": (mine,), "fc1.bias": (mine,), "fc2.weight": (slice(None), mine), "fc2.bias": ()}
    checks["simplenet"] = {"forward": compare(p_out, out), "grads": {
        **{n: compare(p_grads[n], full_grads[n][mine_of[n]]) for n in p_grads}, "input": compare(p_dx, dx)}}
    checks["sizes"] = {"batch": batch, "features": FEATURES, "hidden": hidden, "classes": CLASSES,
                       "hidden_per_rank": hidden // world}
    return checks


def data_parallel_checks(rank: int, world: int, seed: int, batch: int, lr: float) -> dict:
    """One real DATA_PARALLEL SGD step of SimpleNet with gradients_mean True / False (and the article's
    device_num), each rank on its own batch; plus the same update by hand with a real AllReduce."""
    from helpers.nets import SimpleNet

    rng = np.random.default_rng(seed + 100 + rank)   # a different batch on every rank
    x = Tensor(rng.standard_normal((batch, FEATURES)).astype(np.float32))
    label = Tensor(rng.integers(0, CLASSES, batch).astype(np.int32))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def one_step(**context) -> np.ndarray:
        ms.reset_auto_parallel_context()
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, **context)
        ms.set_seed(seed)   # identical initial weights on every rank and in every variant
        net = SimpleNet()
        before = np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.SGD(net.trainable_params(), learning_rate=lr))
        step(x, label)
        after = np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])
        ms.reset_auto_parallel_context()
        return after - before

    delta_mean = one_step(gradients_mean=True)
    delta_sum = one_step(gradients_mean=False)
    delta_article = one_step(gradients_mean=True, device_num=world)     # scene A as written
    delta_wrong = one_step(gradients_mean=True, device_num=2 * world)   # a device_num that is not the group size

    # By hand: this rank's own gradient, a real AllReduce(sum), divided by the group size.
    ms.set_seed(seed)
    net = SimpleNet()
    local = ParamGrads(nn.WithLossCell(net, loss_fn), net.trainable_params())(x, label)
    all_reduce = ops.AllReduce()
    summed = np.concatenate([all_reduce(g).asnumpy().ravel() for g in local])
    by_hand = -lr * summed / world
    norm = float(np.linalg.norm(delta_mean))
    return {"lr": lr, "batch_per_rank": batch,
            "update_norm": {"mean": norm, "sum": float(np.linalg.norm(delta_sum)),
                            "article_device_num": float(np.linalg.norm(delta_article)),
                            "device_num_2x": float(np.linalg.norm(delta_wrong))},
            "ratio_sum_over_mean": float(np.linalg.norm(delta_sum)) / norm,
            "ratio_2x_over_mean": float(np.linalg.norm(delta_wrong)) / norm,
            "sum_vs_world_times_mean": compare(delta_sum, world * delta_mean),
            "article_vs_default": compare(delta_article, delta_mean),
            "by_hand_vs_mean": compare(by_hand, delta_mean),
            "local_grad_norm": float(np.linalg.norm(np.concatenate([g.asnumpy().ravel() for g in local]))),
            "delta_mean_sha": __import__("hashlib").sha256(delta_mean.tobytes()).hexdigest()[:16]}


def semi_auto_checks(world: int, device: str) -> dict:
    """Ask MindSpore itself for SEMI_AUTO_PARALLEL on this device, by the context API and by AutoParallel."""
    from mindspore.parallel.auto_parallel import AutoParallel

    x = Tensor(np.ones((8, FEATURES), np.float32))
    out = {}
    for route in ("set_auto_parallel_context", "AutoParallel"):
        ms.reset_auto_parallel_context()
        net = nn.Dense(FEATURES, hidden_size(world))
        net.matmul.shard(((1, 1), (world, 1)))
        start = time.perf_counter()
        try:
            if route == "AutoParallel":
                result = AutoParallel(net, parallel_mode="semi_auto")(x)
            else:
                ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel")
                result = net(x)
            out[route] = {"ran": True, "output_shape": list(result.shape)}
        except RuntimeError as exc:
            out[route] = {"ran": False, "error": _error_text(exc)}
        finally:
            ms.reset_auto_parallel_context()
        out[route]["seconds"] = round(time.perf_counter() - start, 2)
    out["device"] = device
    return out


def read_reports(run_dir) -> dict[int, dict]:
    """{rank: report} from every RUN/rank_<k>/tensor_parallel.json."""
    reports = {}
    for path in sorted(Path(run_dir).glob(f"rank_*/{REPORT_FILE}")):
        reports[int(path.parent.name.split("_")[1])] = json.loads(path.read_text(encoding="utf-8"))
    return dict(sorted(reports.items()))


def failures(report: dict, tol: float = TOLERANCE) -> list[str]:
    """Names of the corrected checks (column, row, simplenet, data parallel) that do not agree within `tol`."""
    bad = []
    for case in ("column", "row", "simplenet"):
        entry = report["checks"][case]
        for name, value in [("forward", entry["forward"]), *entry["grads"].items()]:
            if not agrees(value, tol):
                bad.append(f"{case}.{name}")
    dp = report["data_parallel"]
    for name in ("sum_vs_world_times_mean", "article_vs_default", "by_hand_vs_mean"):
        if not agrees(dp[name], tol):
            bad.append(f"data_parallel.{name}")
    return bad


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m helpers.tensor_parallel", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8, help="rows of the test input (and of each DP batch)")
    parser.add_argument("--seed", type=int, default=0, help="same on every rank")
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate of the data-parallel step")
    parser.add_argument("--mode", choices=("pynative", "graph"), default="pynative",
                        help="execution mode of the tensor-parallel layers (pynative starts faster; the "
                             "data-parallel step and the SEMI_AUTO_PARALLEL request always run in graph mode)")
    parser.add_argument("--out", default=os.environ.get(RUN_DIR_ENV, "runs/manual"),
                        help=f"run folder (default: ${RUN_DIR_ENV}, set by the launcher)")
    args = parser.parse_args(argv)
    if args.batch < 1 or args.lr <= 0:
        parser.error("--batch must be at least 1 and --lr positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = detect_device()
    rank, world = setup_distributed(device)
    start = time.perf_counter()
    report = {"rank": rank, "world": world, "device": device, "tolerance": TOLERANCE}
    report["mode"] = args.mode
    if args.mode == "pynative":   # the same checks, run op by op: no graph to compile for each small case
        ms.set_context(mode=ms.PYNATIVE_MODE)
    report["checks"] = tensor_parallel_checks(rank, world, args.seed, args.batch)
    ms.set_context(mode=ms.GRAPH_MODE)   # DATA_PARALLEL and SEMI_AUTO_PARALLEL are graph-mode features
    report["data_parallel"] = data_parallel_checks(rank, world, args.seed, args.batch, args.lr)
    report["semi_auto"] = semi_auto_checks(world, device)
    report["seconds"] = round(time.perf_counter() - start, 2)
    report["failures"] = failures(report)
    out = Path(args.out) / f"rank_{rank}"
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_FILE).write_text(json.dumps(report, indent=1), encoding="utf-8")
    checks = report["checks"]
    print(f"[rank {rank}] tensor parallel on {world} ranks: forward error column "
          f"{checks['column']['forward']['max_err']:.1e}, row {checks['row']['forward']['max_err']:.1e}, "
          f"SimpleNet {checks['simplenet']['forward']['max_err']:.1e}; plain AllReduce gradient x"
          f"{checks['row_plain_allreduce']['grad_ratio']:.3f}; gradients_mean=False update x"
          f"{report['data_parallel']['ratio_sum_over_mean']:.3f}; "
          f"{'all checks agree' if not report['failures'] else 'FAILED: ' + ', '.join(report['failures'])} "
          f"({report['seconds']:.0f} s)", flush=True)
    barrier()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
