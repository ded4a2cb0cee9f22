"""Configuring SEMI_AUTO_PARALLEL / AUTO_PARALLEL, and reading what they decided. Introduced in notebook 02.

MindSpore 2.10 has two ways to ask for operator-level parallelism, and this module speaks both:

* the article's context API, `ms.set_auto_parallel_context(parallel_mode=..., search_mode=...)`, whose
  search modes are "recursive_programming" (the 2.10 default), "sharding_propagation" and
  "dynamic_programming" (documented as "Not recommended"); its docstring says it "will be deprecated";
* the 2.10 wrapper `mindspore.parallel.auto_parallel.AutoParallel(net, parallel_mode=...)` with modes
  "semi_auto", "sharding_propagation" and "recursive_programming" (no dynamic programming). At compile time
  MindSpore's `_init_auto_parallel_context` turns it into the same context: "semi_auto" ->
  semi_auto_parallel, the two others -> auto_parallel with that search mode, and a group of one device
  (no `init()`) -> stand_alone.

Both refuse to run on CPU ("Invalid communication backend: CPU for semi_auto_parallel/auto_parallel mode"),
so `check_supported` refuses first, in our own words, before any process starts. `simple_net_strategies`
holds shard strategies for SimpleNet's operators, `strategy_plans` checks them with the exact layout
calculator (helpers.layout), `compare_modes` turns them into per-device memory and collectives, and
`load_strategy_file` / `draw_strategy` read and draw the strategy file a real Ascend job saves.

Nothing here imports MindSpore or matplotlib at module level: `helpers.train --check` uses it cheaply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from helpers.layout import ITEMSIZE, StrategyError, elementwise_layout, matmul_layout

PARALLEL_MODES = ("data_parallel", "semi_auto_parallel", "auto_parallel")
SEARCH_MODES = ("recursive_programming", "sharding_propagation", "dynamic_programming")
DEFAULT_SEARCH_MODE = "recursive_programming"   # ms.get_auto_parallel_context("search_mode") in 2.10
AUTOPARALLEL_MODES = ("semi_auto", "sharding_propagation", "recursive_programming")
APIS = ("context", "autoparallel")
NEEDS_ASCEND = ("semi_auto_parallel", "auto_parallel")
STRATEGIES = ("megatron", "model_parallel", "data_parallel")
STRATEGY_FILE = "strategy.ckpt"   # saved into RUN/rank_<k>/ by helpers.train on Ascend
MINDSPORE_CPU_ERROR = ("Invalid communication backend: CPU for semi_auto_parallel/auto_parallel mode, "
                       "currently only support Ascend/GPU backend.")

# SimpleNet (helpers.nets): Dense(32, 64) -> ReLU -> Dense(64, 10). nn.Dense keeps its weight as [out, in]
# and runs MatMul(transpose_b=True), so a MatMul strategy is ((batch, in), (out, in)).
FEATURES, HIDDEN, CLASSES = 32, 64, 10
PARAM_SHAPES = {"fc1.weight": (HIDDEN, FEATURES), "fc1.bias": (HIDDEN,),
                "fc2.weight": (CLASSES, HIDDEN), "fc2.bias": (CLASSES,)}


class ParallelModeUnavailable(RuntimeError):
    """A parallel mode this device cannot run (SEMI_AUTO/AUTO_PARALLEL on CPU)."""


def check_supported(parallel_mode: str, device: str) -> None:
    """Raise ParallelModeUnavailable, naming the limit and what to do instead, if `device` cannot run the mode."""
    if parallel_mode not in PARALLEL_MODES:
        raise ValueError(f"unknown parallel mode {parallel_mode!r}: use one of {', '.join(PARALLEL_MODES)}")
    if parallel_mode in NEEDS_ASCEND and device == "CPU":
        raise ParallelModeUnavailable(
            f"--parallel-mode {parallel_mode} needs Ascend (or GPU): MindSpore 2.10 refuses SEMI_AUTO_PARALLEL "
            f"and AUTO_PARALLEL on CPU by every route (set_auto_parallel_context, AutoParallel, "
            f"mindspore.parallel.shard) with \"{MINDSPORE_CPU_ERROR}\" "
            "Nothing was started. On CPU use --parallel-mode data_parallel; notebook 02 computes the layouts "
            "these modes would choose (helpers.layout) and runs the same operator-level parallelism by hand "
            "with real collectives (python -m helpers.tensor_parallel).")


def autoparallel_mode(parallel_mode: str, search_mode: str | None) -> str:
    """The `AutoParallel(net, parallel_mode=...)` value for a context-style (parallel_mode, search_mode)."""
    if parallel_mode == "semi_auto_parallel":
        return "semi_auto"
    if parallel_mode != "auto_parallel":
        raise ValueError(f"AutoParallel has no {parallel_mode!r} mode: use the context API for it")
    search_mode = search_mode or DEFAULT_SEARCH_MODE
    if search_mode not in AUTOPARALLEL_MODES:
        raise ValueError(f"search mode {search_mode!r} exists only in set_auto_parallel_context (where it is "
                         f"'Not recommended'); AutoParallel offers {', '.join(AUTOPARALLEL_MODES)}")
    return search_mode


def context_kwargs(parallel_mode: str, search_mode: str | None = None, gradients_mean: bool = True,
                   strategy_file: str | None = None) -> dict:
    """Keyword arguments for `ms.set_auto_parallel_context` (no device_num: init() already knows it)."""
    kwargs = {"parallel_mode": parallel_mode, "gradients_mean": gradients_mean}
    if parallel_mode == "auto_parallel":
        kwargs["search_mode"] = search_mode or DEFAULT_SEARCH_MODE
    elif search_mode is not None:
        raise ValueError("search_mode only works in auto_parallel mode")
    if strategy_file:
        kwargs["strategy_ckpt_config"] = {"save_file": str(strategy_file), "only_trainable_params": True}
    return kwargs


# ---------------------------------------------------------------- shard strategies for SimpleNet


def split_sizes(device_num: int, name: str) -> tuple[int, int]:
    """(data-parallel ways, model-parallel ways) of strategy `name` on `device_num` devices."""
    if name == "data_parallel":
        return device_num, 1
    if name == "model_parallel":
        return 1, device_num
    if name == "megatron":   # model-parallel over up to 4 devices, data-parallel over the rest
        mp = math.gcd(device_num, 4)
        return device_num // mp, mp
    raise ValueError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}")


def simple_net_strategies(device_num: int, name: str = "megatron") -> dict:
    """{operator path in SimpleNet: in_strategy} for `primitive.shard(...)`.

    fc1 is split by its output features (column parallel), fc2 by its input features (row parallel): the
    hidden activation stays split between them, and only fc2's MatMul needs an AllReduce. "data_parallel"
    splits only the batch; "model_parallel" splits only the features.
    """
    dp, mp = split_sizes(device_num, name)
    return {
        "fc1.matmul": ((dp, 1), (mp, 1)),
        "fc1.bias_add": ((dp, mp), (mp,)),
        "relu.relu": ((dp, mp),),
        "fc2.matmul": ((dp, mp), (1, mp)),
        "fc2.bias_add": ((dp, 1), (1,)),
    }


def anchor_strategies(device_num: int, name: str = "megatron") -> dict:
    """The strategies a sharding_propagation user writes: fc1's MatMul only; the rest is propagated."""
    return {"fc1.matmul": simple_net_strategies(device_num, name)["fc1.matmul"]}


def apply_strategies(net, strategies: dict):
    """Call `.shard(strategy)` on each named primitive of `net` (e.g. "fc1.matmul"); returns `net`.

    MindSpore only checks the format here; outside semi/auto parallel mode the strategies are ignored.
    """
    for path, strategy in strategies.items():
        target = net
        for part in path.split("."):
            target = getattr(target, part)
        target.shard(strategy)
    return net


def strategy_plans(device_num: int, name: str = "megatron", batch: int = 256) -> dict:
    """helpers.layout plans of SimpleNet's two MatMuls and its ReLU; raises StrategyError if invalid."""
    strategies = simple_net_strategies(device_num, name)
    return {
        "fc1": matmul_layout(device_num, strategies["fc1.matmul"], (batch, FEATURES), PARAM_SHAPES["fc1.weight"],
                             transpose_b=True),
        "relu": elementwise_layout(device_num, strategies["relu.relu"], (batch, HIDDEN), op="ReLU"),
        "fc2": matmul_layout(device_num, strategies["fc2.matmul"], (batch, HIDDEN), PARAM_SHAPES["fc2.weight"],
                             transpose_b=True),
    }


def _replicas(t) -> int:
    """How many ranks hold each block of a planned tensor."""
    return len(next(iter(t.holders().values())))


def parameter_layouts(device_num: int, name: str = "megatron", batch: int = 256) -> dict:
    """{parameter: (local shape, replicas)} for SimpleNet under strategy `name`, from the calculator."""
    plans = strategy_plans(device_num, name, batch)
    strategies = simple_net_strategies(device_num, name)
    out = {}
    for layer in ("fc1", "fc2"):
        weight = plans[layer].tensor("B")
        out[f"{layer}.weight"] = (weight.local_shape, _replicas(weight))
        split = strategies[f"{layer}.bias_add"][1][0]
        size = PARAM_SHAPES[f"{layer}.bias"][0]
        out[f"{layer}.bias"] = ((size // split,), device_num // split)
    return out


@dataclass(frozen=True)
class ModeRow:
    """One row of the modes table (notebook 02, section 6)."""

    mode: str
    user_writes: str
    fc1: str
    fc2: str
    param_bytes: int | str
    forward: str
    gradient_sync: str


def mode_costs(device_num: int, name: str, batch: int = 256, dtype: str = "float32") -> dict:
    """Per-device parameter bytes and collectives per training step of SimpleNet under strategy `name`.

    Forward collectives come from the calculator's plans. Gradient synchronisation is an AllReduce of each
    parameter over the ranks that hold the same slice of it (replicas > 1), which is what DATA_PARALLEL's
    gradient reducer and semi-auto's mirror operators do. The backward pass of forward collectives is
    not counted.
    """
    itemsize = ITEMSIZE[dtype]
    plans = strategy_plans(device_num, name, batch)
    params = parameter_layouts(device_num, name, batch)
    forward = []
    for layer in ("fc1", "fc2"):
        for c in plans[layer].collectives:
            local = math.prod(plans[layer].tensor(c.tensor).local_shape)
            forward.append({"layer": layer, "kind": c.kind, "group": len(c.groups[0]), "elements": local})
    grads = [{"param": p, "group": r, "elements": math.prod(shape)} for p, (shape, r) in params.items() if r > 1]
    return {"strategy": name, "plans": plans, "params": params,
            "param_bytes": sum(math.prod(shape) for shape, _ in params.values()) * itemsize,
            "forward": forward, "gradient_sync": grads}


def _fmt_forward(items: list) -> str:
    if not items:
        return "none"
    return "; ".join(f"{i['kind']} of {i['elements']} el. in groups of {i['group']} ({i['layer']})" for i in items)


def _fmt_grads(items: list) -> str:
    if not items:
        return "none"
    by_group: dict = {}
    for i in items:
        by_group.setdefault(i["group"], []).append(i)
    parts = []
    for size, group in sorted(by_group.items()):
        tensors = f"{len(group)} tensor{'s' if len(group) > 1 else ''}"
        parts.append(f"AllReduce of {sum(i['elements'] for i in group)} el. ({tensors}) in groups of {size}")
    return "; ".join(parts)


def compare_modes(device_num: int = 8, batch: int = 256) -> list[ModeRow]:
    """The modes table: per-device parameter bytes and collectives per step for SimpleNet on `device_num`.

    Rows with a fixed strategy are computed by the calculator; AUTO_PARALLEL rows say what the user writes
    and that the search decides the rest (on Ascend, read it from the saved strategy file).
    """
    rows = []
    named = [
        ("DATA_PARALLEL", "parallel_mode='data_parallel', gradients_mean=True; no shard()", "data_parallel"),
        ("SEMI_AUTO, batch split", "parallel_mode='semi_auto_parallel' + shard() on every op", "data_parallel"),
        ("SEMI_AUTO, Megatron", "parallel_mode='semi_auto_parallel' + shard() on every op", "megatron"),
        ("SEMI_AUTO, features split", "parallel_mode='semi_auto_parallel' + shard() on every op", "model_parallel"),
    ]
    for mode, writes, name in named:
        costs = mode_costs(device_num, name, batch)
        strategies = simple_net_strategies(device_num, name)
        rows.append(ModeRow(mode, writes, str(strategies["fc1.matmul"]), str(strategies["fc2.matmul"]),
                            costs["param_bytes"], _fmt_forward(costs["forward"]), _fmt_grads(costs["gradient_sync"])))
    anchor = anchor_strategies(device_num)["fc1.matmul"]
    space = candidate_strategies(device_num, batch)
    for search, writes in (("sharding_propagation", "search_mode='sharding_propagation' + shard() on fc1 only"),
                           ("recursive_programming", "search_mode='recursive_programming' (default); no shard()"),
                           ("dynamic_programming", "search_mode='dynamic_programming' (context API only)")):
        pool = [c for c in space if search != "sharding_propagation" or c["fc1"] == anchor]
        sizes = [c["param_elements"] * ITEMSIZE["float32"] for c in pool]
        searched = (f"{sizes[0]:,} if it picks the only redistribution-free candidate" if len(pool) == 1 else
                    f"searched: {min(sizes):,} to {max(sizes):,} over {len(pool)} redistribution-free candidates")
        rows.append(ModeRow(f"AUTO, {search}", "parallel_mode='auto_parallel', " + writes,
                            str(anchor) if search == "sharding_propagation" else "searched", "searched", searched,
                            "searched", "searched"))
    return rows


def format_rows(rows: list[ModeRow]) -> str:
    """A Markdown table of `compare_modes()` rows (readable as plain text too)."""
    header = ("mode", "what the user writes", "fc1 MatMul", "fc2 MatMul", "parameter bytes per device",
              "forward collectives per step", "gradient synchronisation per step")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        size = r.param_bytes if isinstance(r.param_bytes, str) else f"{r.param_bytes:,}"
        cells = (r.mode, f"`{r.user_writes}`", r.fc1, r.fc2, size, r.forward, r.gradient_sync)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def candidate_strategies(device_num: int = 8, batch: int = 256) -> list[dict]:
    """Every valid (fc1, fc2) MatMul strategy pair that needs no redistribution between them.

    fc2's input must be split exactly as fc1's output is (a0 on batch, b0 on hidden). For each pair: per-device
    parameter elements, elements moved by forward AllReduces, and by gradient AllReduces (per device).
    This is the space AUTO_PARALLEL searches, scored by a transparent toy cost, not MindSpore's cost model.
    """
    powers = [2 ** i for i in range(int(math.log2(device_num)) + 1)] if device_num & (device_num - 1) == 0 \
        else [d for d in range(1, device_num + 1) if device_num % d == 0]
    out = []
    for a0 in powers:
        for a1 in powers:
            for b0 in powers:
                for n2 in powers:
                    s1 = ((a0, a1), (b0, a1))
                    s2 = ((a0, b0), (n2, b0))
                    try:
                        p1 = matmul_layout(device_num, s1, (batch, FEATURES), PARAM_SHAPES["fc1.weight"], True)
                        p2 = matmul_layout(device_num, s2, (batch, HIDDEN), PARAM_SHAPES["fc2.weight"], True)
                    except StrategyError:
                        continue
                    w1, w2 = p1.tensor("B"), p2.tensor("B")
                    params = {"fc1.weight": (math.prod(w1.local_shape), _replicas(w1)),
                              "fc1.bias": (HIDDEN // b0, device_num // b0),      # BiasAdd follows fc1's N split
                              "fc2.weight": (math.prod(w2.local_shape), _replicas(w2)),
                              "fc2.bias": (CLASSES // n2, device_num // n2)}
                    fwd = sum(math.prod(p.tensor("out").local_shape) for p in (p1, p2) for c in p.collectives
                              if c.kind == "AllReduce")
                    grad = sum(n for n, r in params.values() if r > 1)
                    out.append({"fc1": s1, "fc2": s2, "param_elements": sum(n for n, _ in params.values()),
                                "forward_elements": fwd, "grad_elements": grad})
    return out


# ---------------------------------------------------------------- the Ascend path of helpers.train


def configure_network(net, parallel_mode: str, search_mode: str | None = None, api: str = "context",
                      gradients_mean: bool = True, strategy: str = "megatron", strategy_file: str | None = None,
                      device_num: int | None = None):
    """Set SEMI_AUTO/AUTO_PARALLEL up for SimpleNet `net` after init(); returns the network to give ms.Model.

    semi_auto_parallel shards every operator with `strategy`; auto_parallel with sharding_propagation shards
    fc1's MatMul only (the anchor the search propagates from); the other search modes shard nothing.
    api="context" uses set_auto_parallel_context (returns `net`); api="autoparallel" returns
    AutoParallel(net, ...) configured the same way.
    """
    import mindspore as ms
    from mindspore.communication import get_group_size

    device_num = device_num or get_group_size()
    if parallel_mode == "semi_auto_parallel":
        apply_strategies(net, simple_net_strategies(device_num, strategy))
    elif parallel_mode == "auto_parallel" and (search_mode or DEFAULT_SEARCH_MODE) == "sharding_propagation":
        apply_strategies(net, anchor_strategies(device_num, strategy))
    if api == "context":
        ms.set_auto_parallel_context(**context_kwargs(parallel_mode, search_mode, gradients_mean, strategy_file))
        return net
    if api != "autoparallel":
        raise ValueError(f"unknown api {api!r}: use one of {', '.join(APIS)}")
    from mindspore.parallel.auto_parallel import AutoParallel

    wrapped = AutoParallel(net, parallel_mode=autoparallel_mode(parallel_mode, search_mode))
    if gradients_mean:
        wrapped.enable_gradients_mean()   # AutoParallel's default is False, like the context's
    if strategy_file:
        wrapped.save_param_strategy_file(str(strategy_file))
    return wrapped


# ---------------------------------------------------------------- strategy files


def load_strategy_file(path) -> dict:
    """{parameter: {"dev_matrix", "tensor_map", "local_shape"?}} from a strategy file a parallel job saved.

    Uses MindSpore's own reader, `mindspore.parallel.build_searched_strategy` (protobuf, or JSON when the
    name ends with .json). tensor_map entries count device-matrix axes from the right; -1 = not split.
    """
    from mindspore.parallel import build_searched_strategy

    out = {}
    for name, layout in build_searched_strategy(str(path)).items():
        dev_matrix = tuple(int(d) for d in layout.dev_matrix[0].dim)
        maps = [tuple(int(d) for d in t.dim) for t in layout.tensor_map]
        record = {"dev_matrix": dev_matrix, "tensor_map": maps[0] if len(maps) == 1 else tuple(maps)}
        if layout.param_split_shape and list(layout.param_split_shape[0].dim):
            record["local_shape"] = tuple(int(d) for d in layout.param_split_shape[0].dim)
        out[name] = record
    return out


def param_layout(name: str, shape: tuple, dev_matrix: tuple, tensor_map: tuple):
    """A helpers.layout TensorLayout (every rank's slice) for one parameter of a strategy file."""
    from helpers.layout import _tensor_layout

    return _tensor_layout(name, tuple(shape), tuple(dev_matrix), tuple(tensor_map))


def _known(name: str, shapes: dict) -> str | None:
    """The key of `shapes` that parameter `name` is (allowing a prefix such as "network.")."""
    return next((key for key in shapes if name == key or name.endswith("." + key)), None)


def strategy_local_shapes(layouts: dict, shapes: dict | None = None) -> dict:
    """{parameter: per-device shape} computed from a loaded strategy file's device matrices and tensor maps."""
    shapes = shapes or PARAM_SHAPES
    out = {}
    for name, rec in layouts.items():
        key = _known(name, shapes)
        if key:
            out[key] = param_layout(key, shapes[key], rec["dev_matrix"], rec["tensor_map"]).local_shape
    return out


def draw_strategy(layouts: dict, shapes: dict | None = None, title: str = "strategy file"):
    """Draw each parameter of a loaded strategy file as blocks labelled with the ranks holding them."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from helpers.layout_plot import _rank_text

    shapes = shapes or PARAM_SHAPES
    names = {n: _known(n, shapes) for n in layouts if _known(n, shapes)}
    if not names:
        raise ValueError(f"none of {sorted(layouts)} is a known parameter ({sorted(shapes)})")
    fig = Figure(figsize=(3.4 * len(names), 3.4), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, (name, key) in zip(axes, names.items()):
        rec = layouts[name]
        t = param_layout(name, shapes[key], rec["dev_matrix"], rec["tensor_map"])
        shape2 = t.shape if len(t.shape) == 2 else (1, t.shape[0])
        splits = t.splits if len(t.splits) == 2 else (1, t.splits[0])
        h, w = shape2[0] / splits[0], shape2[1] / splits[1]
        for number, (block, ranks) in enumerate(t.holders().items()):
            i, j = block if len(block) == 2 else (0, block[0])
            ax.add_patch(Rectangle((j * w, i * h), w, h, facecolor=f"C{number % 10}", alpha=0.55,
                                   edgecolor="black"))
            ax.text((j + 0.5) * w, (i + 0.5) * h, _rank_text(ranks), ha="center", va="center", fontsize=7)
        ax.set_xlim(0, shape2[1])
        ax.set_ylim(shape2[0], 0)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{name} {list(t.shape)}\ndev {list(rec['dev_matrix'])} map {rec['tensor_map']}\n"
                     f"per device {list(t.local_shape)}", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig
