"""Exact layout calculator for MindSpore operator-level (semi-auto) parallelism. Introduced in notebook 02.

MindSpore refuses SEMI_AUTO_PARALLEL on CPU, so this module replays, with numpy only, what its parallel
compiler decides for `ops.MatMul().shard(...)` and for element-wise ops (Add, ReLU, ...): the device
matrix, every rank's slice of every tensor, the collective inserted around the op, and per-device memory.
`partial_products` + `reassemble` then run the plan on real arrays, so you can check it gives A @ B.

Every rule below was read from mindspore-ai/mindspore, mindspore/ccsrc/frontend/parallel/ (and checked
against the error strings inside the installed 2.10.0 `libmindspore_frontend.so`):

* strategy values (ops_info/operator_info.cc, CheckStrategyByVector): one tuple per input, one value per
  dimension, each value >= 1, dividing its dimension, and a power of 2 *unless the device count is not a
  power of 2* (then the power-of-2 check is skipped).
* MatMul (ops_info/matmul_info.cc): A's K split must equal B's K split (b0, or b1 when transpose_b).
  Device matrix [a0, a1, b1] ([a0, a1, b0] with transpose_b); tensor maps A (2, 1), B (1, 0) or (0, 1),
  output (2, 0). When K is split (a1 > 1) an AllReduce(sum) follows, in groups along the a1 axis.
* "PCL MatMul" (matmul_info.cc, CheckPCLMatMul + replace_graph): if A's and B's strategies are equal,
  transpose_b is False and their product equals the device count, MindSpore accepts it even though the K
  splits differ: device matrix [a0, a1]; A is AllGathered along the a1 axis and B along the a0 axis
  *before* the local MatMul, and no AllReduce follows.
* repeated calculation (operator_info.cc InferRepeatedCalcInfo/SetRepeatedCalcDevMatrix, operator_info.h
  `repeated_num_in_dev_matrix_right_ = true`, not overridden by MatMul or element-wise ops): the device
  count must be a multiple r of prod(device matrix); r is APPENDED as the last (fastest-varying) axis, so
  neighbouring ranks hold identical slices, and every tensor-map entry is shifted by +1.
* rank -> device-matrix coordinate (device_matrix.cc ConvertRankToCoordinate): row-major, last axis
  fastest. Groups along an axis: device_matrix.cc GetDevicesAlongDim.
* element-wise ops (activation_info.cc, arithmetic_info.cc): device matrix = the strategy; two inputs of
  the same shape must have equal strategies (MindSpore says only "Invalid strategy.").

Not modelled: `mindspore.parallel.Layout` strategies (only tuple strategies), batch (3-D+) MatMul,
transpose_a, broadcasting, out_strategy (reduce-scatter), pipeline stages, and backward ops
(gradient/mirror AllReduce).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int8": 1}


class StrategyError(ValueError):
    """A strategy MindSpore would reject. `reason` is a short code, `mindspore_message` its own wording."""

    def __init__(self, reason: str, mindspore_message: str, fix: str):
        self.reason = reason
        self.mindspore_message = mindspore_message
        self.fix = fix
        super().__init__(f"[{reason}] {mindspore_message}\n  fix: {fix}")


@dataclass(frozen=True)
class TensorLayout:
    """One tensor's placement: `ranges[rank]` holds a (start, stop) pair per dimension."""

    name: str
    shape: tuple
    tensor_map: tuple
    splits: tuple
    ranges: tuple = field(repr=False)
    dev_matrix: tuple = ()   # the device matrix the tensor map refers to (what a strategy file records)

    @property
    def local_shape(self) -> tuple:
        return tuple(size // split for size, split in zip(self.shape, self.splits))

    def slice_of(self, rank: int) -> tuple:
        """numpy index of this rank's slice: `full[t.slice_of(rank)]`."""
        return tuple(slice(start, stop) for start, stop in self.ranges[rank])

    def block_of(self, rank: int) -> tuple:
        return tuple(start // step for (start, _), step in zip(self.ranges[rank], self.local_shape))

    def holders(self) -> dict:
        """{block index: ranks holding that block}."""
        out: dict = {}
        for rank in range(len(self.ranges)):
            out.setdefault(self.block_of(rank), []).append(rank)
        return {block: tuple(ranks) for block, ranks in sorted(out.items())}


@dataclass(frozen=True)
class Collective:
    """A communication op: AllReduce(sum) after the op, or AllGather of an input before it."""

    kind: str       # "AllReduce" or "AllGather"
    tensor: str     # "out", "A" or "B"
    groups: tuple   # tuples of ranks communicating together
    axis: int = -1  # tensor axis an AllGather concatenates along

    def describe(self) -> str:
        if self.kind == "AllReduce":
            return f"AllReduce(sum) on {self.tensor} after the op, groups {[list(g) for g in self.groups]}"
        return (f"AllGather of {self.tensor} along axis {self.axis} before the op, "
                f"groups {[list(g) for g in self.groups]}")


@dataclass(frozen=True)
class MemoryRow:
    tensor: str
    full_elements: int
    local_elements: int
    full_bytes: int
    local_bytes: int


@dataclass(frozen=True)
class LayoutResult:
    """What MindSpore's parallel compiler decides for one sharded op."""

    op: str
    device_num: int
    strategy: tuple          # split counts per input
    dev_matrix: tuple
    axis_names: tuple
    repeated_calc_num: int
    mode: str                # "strategy" or "pcl"
    transpose_b: bool
    tensors: tuple = field(repr=False)       # TensorLayout for each input, then "out"
    collectives: tuple = field(repr=False)
    dtype: str = "float32"

    def tensor(self, name: str) -> TensorLayout:
        return next(t for t in self.tensors if t.name == name)

    def memory(self) -> list:
        """Per-device vs full elements and bytes for every tensor (PCL gathers inputs transiently)."""
        size = ITEMSIZE.get(self.dtype) or np.dtype(self.dtype).itemsize
        return [MemoryRow(t.name, math.prod(t.shape), math.prod(t.local_shape),
                          math.prod(t.shape) * size, math.prod(t.local_shape) * size) for t in self.tensors]

    def summary(self) -> str:
        """A readable multi-line report."""
        lines = [f"{self.op} on {self.device_num} device(s), strategy {self.strategy}"
                 + (" -> PCL MatMul" if self.mode == "pcl" else "")]
        lines.append(f"device matrix {list(self.dev_matrix)}  axes {list(self.axis_names)}")
        if self.repeated_calc_num > 1:
            lines.append(f"repeated calculation x{self.repeated_calc_num}: appended as the last axis, "
                         f"so runs of {self.repeated_calc_num} consecutive ranks hold identical slices")
        for t in self.tensors:
            lines.append(f"  {t.name:<3} shape {t.shape} tensor_map {t.tensor_map} local {t.local_shape}")
        lines += [f"  {c.describe()}" for c in self.collectives] or ["  no forward collective"]
        for rank in range(self.device_num):
            cells = [f"{t.name}[{', '.join(f'{a}:{b}' for a, b in t.ranges[rank])}]" for t in self.tensors]
            lines.append(f"  rank {rank}: " + "  ".join(cells))
        for row in self.memory():
            lines.append(f"  {row.tensor:<3} {row.local_elements}/{row.full_elements} elements per device, "
                         f"{row.local_bytes}/{row.full_bytes} bytes ({self.dtype})")
        return "\n".join(lines)


# ---------------------------------------------------------------- building blocks

def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _axes(entry) -> tuple:
    """Device-axis indices (counted from the right, MindSpore style) a tensor-map entry uses."""
    values = entry if isinstance(entry, tuple) else (entry,)
    return tuple(v for v in values if v != -1)


def _coords(rank: int, dev_matrix: tuple) -> tuple:
    return tuple(int(c) for c in np.unravel_index(rank, dev_matrix))  # row-major, last axis fastest


def tensor_layout(name: str, shape: tuple, dev_matrix: tuple, tensor_map: tuple) -> TensorLayout:
    """Every rank's slice of a tensor of `shape` placed by a device matrix and a tensor map (-1: not split),
    as MindSpore records them for each parameter in a strategy file."""
    n = len(dev_matrix)
    splits = tuple(math.prod(dev_matrix[n - 1 - m] for m in _axes(e)) for e in tensor_map)
    ranges = []
    for rank in range(math.prod(dev_matrix)):
        coords = _coords(rank, dev_matrix)
        per_dim = []
        for size, entry, split in zip(shape, tensor_map, splits):
            block = 0
            for m in _axes(entry):  # several axes on one dimension: the first listed is the outer one
                block = block * dev_matrix[n - 1 - m] + coords[n - 1 - m]
            step = size // split
            per_dim.append((block * step, (block + 1) * step))
        ranges.append(tuple(per_dim))
    return TensorLayout(name, tuple(shape), tuple(tensor_map), splits, tuple(ranges), tuple(dev_matrix))


def _groups_along(dev_matrix: tuple, positions: tuple) -> tuple:
    """Ranks that differ only on the device-matrix `positions` (counted from the left)."""
    groups: dict = {}
    for rank in range(math.prod(dev_matrix)):
        key = tuple(c for i, c in enumerate(_coords(rank, dev_matrix)) if i not in positions)
        groups.setdefault(key, []).append(rank)
    return tuple(tuple(g) for g in groups.values())


def _check_values(op: str, strategy: tuple, shapes: tuple, device_num: int) -> None:
    """operator_info.cc CheckStrategyByVector, in its order."""
    text = str(strategy)
    if len(strategy) != len(shapes):
        raise StrategyError("wrong_input_count", f"{op}: The strategy is {text}, strategy size: "
                            f"{len(strategy)} is not equal to inputs size: {len(shapes)}",
                            f"give one tuple per input ({op} has {len(shapes)}).")
    for index, (dims, shape) in enumerate(zip(strategy, shapes)):
        if len(dims) != len(shape):
            raise StrategyError("wrong_rank", f"{op}: The strategy is {text}, strategy len: {len(dims)} "
                                f"is not equal to inputs len: {len(shape)}, index: {index}",
                                f"give one split count per dimension of input {index} (shape {shape}).")
        for value, size in zip(dims, shape):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TypeError(f"{op}: strategy values must be int, got {value!r} in {text}")
            if value < 1:
                raise StrategyError("non_positive", f"{op}: The strategy is {text}, the value of strategy "
                                    f"must be larger than 0, but get {value}",
                                    "use 1 for 'do not split', 2, 4, ... otherwise.")
            if size % value:
                raise StrategyError("shape_not_divisible", f"{op}: The strategy is {text}, shape {size} "
                                    f"cannot be divisible by strategy value {value}",
                                    f"pick a split count that divides {size}, or resize that dimension.")
            if not _is_power_of_2(value) and _is_power_of_2(device_num):
                raise StrategyError("not_power_of_2", f"{op}: The strategy is {text}, the value of "
                                    f"strategy must be the power of 2, but get {value}",
                                    "use 1, 2, 4, 8, ... (other values are only allowed when the device "
                                    "count itself is not a power of 2).")


def _repeat(op: str, strategy: tuple, dev_matrix: tuple, names: tuple, device_num: int) -> tuple:
    """operator_info.cc InferRepeatedCalcInfo: how many ranks compute each slice (r). Returns the device
    matrix and names with r appended when r > 1, r, and the shift (0 or 1) this adds to tensor-map entries."""
    used = math.prod(dev_matrix)
    if device_num % used:
        reason = "exceeds_device_num" if used > device_num else "device_num_not_divisible"
        raise StrategyError(reason, f"{op}: The strategy is {strategy}, it requires {used} devices, but "
                            f"the device number of this stage is {device_num}, it can not be divisible "
                            f"by {used}", f"the device matrix {list(dev_matrix)} needs {used} devices; "
                            f"choose splits whose device-matrix product divides {device_num}.")
    repeat = device_num // used
    if repeat == 1:
        return dev_matrix, names, 1, 0
    return dev_matrix + (repeat,), names + ("repeat",), repeat, 1


def _as_tuples(op: str, strategy) -> tuple:
    """A tuple strategy as tuples; a `mindspore.parallel.Layout` (not modelled here) named as such."""
    if not isinstance(strategy, (tuple, list)) or not all(isinstance(s, (tuple, list)) for s in strategy):
        raise TypeError(f"{op}: give a tuple strategy, one tuple of split counts per input, such as "
                        f"((2, 1), (1, 4)); got {type(strategy).__name__}. A mindspore.parallel.Layout is not "
                        "modelled here: write the split counts it stands for.")
    return tuple(tuple(s) for s in strategy)


def _check_device_num(device_num: int) -> None:
    if not isinstance(device_num, int) or device_num < 1:
        raise ValueError(f"device_num must be a positive int, got {device_num!r}")


# ---------------------------------------------------------------- public entry points

def matmul_layout(device_num: int, strategy: tuple, a_shape: tuple = (16, 16), b_shape: tuple = (16, 16),
                  transpose_b: bool = False, dtype: str = "float32") -> LayoutResult:
    """Plan of `ops.MatMul(transpose_b=...).shard(strategy)` on `device_num` devices.

    `strategy` is ((a0, a1), (b0, b1)). A is [M, K]; B is [K, N], or [N, K] with transpose_b (as nn.Dense
    stores its weight). Raises StrategyError where MindSpore would refuse.
    """
    _check_device_num(device_num)
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    k_b = b_shape[1] if transpose_b else b_shape[0]
    if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != k_b:
        raise ValueError(f"need 2-D A [M, K] and B {'[N, K]' if transpose_b else '[K, N]'}, "
                         f"got {a_shape} and {b_shape}")
    n_axis = 0 if transpose_b else 1
    out_shape = (a_shape[0], b_shape[n_axis])
    strategy = _as_tuples("MatMul", strategy)
    _check_values("MatMul", strategy, (a_shape, b_shape), device_num)
    (a0, a1), (b0, b1) = strategy

    if not transpose_b and strategy[0] == strategy[1] and a0 * a1 == device_num:  # CheckPCLMatMul
        dev = (a0, a1)
        tensors = (tensor_layout("A", a_shape, dev, (1, 0)), tensor_layout("B", b_shape, dev, (1, 0)),
                   tensor_layout("out", out_shape, dev, (1, 0)))
        collectives = []
        if a1 > 1:  # A's K is split along the a1 axis: gather it back (replace_graph: group of dim 1)
            collectives.append(Collective("AllGather", "A", _groups_along(dev, (1,)), axis=1))
        if a0 > 1:  # B's K is split along the a0 axis (replace_graph: group of dim 0)
            collectives.append(Collective("AllGather", "B", _groups_along(dev, (0,)), axis=0))
        return LayoutResult("MatMul", device_num, strategy, dev, ("a0", "a1"), 1, "pcl", False,
                            tensors, tuple(collectives), dtype)

    b_k = b1 if transpose_b else b0
    if a1 != b_k:
        which = "column" if transpose_b else "row"
        example = ((a0, a1), (b0, a1)) if transpose_b else ((a0, a1), (a1, b1))
        raise StrategyError("k_split_mismatch", f"MatMul: Invalid strategy for mat_a [{a0}, {a1}] and mat_b "
                            f"[{b0}, {b1}]. The transpose_a is: 0, and transpose_b is {int(transpose_b)}, "
                            f"the shard num of first input's column is {a1}, but the shard num of second "
                            f"input's {which} is {b_k}",
                            f"split K the same way in both inputs, e.g. {example}.")
    b_n = b0 if transpose_b else b1
    dev = (a0, a1, b_n)
    names = ("a0", "a1=b1" if transpose_b else "a1=b0", "b0" if transpose_b else "b1")
    dev, names, repeat, shift = _repeat("MatMul", strategy, dev, names, device_num)
    b_map = (0 + shift, 1 + shift) if transpose_b else (1 + shift, 0 + shift)
    tensors = (tensor_layout("A", a_shape, dev, (2 + shift, 1 + shift)),
               tensor_layout("B", b_shape, dev, b_map),
               tensor_layout("out", out_shape, dev, (2 + shift, 0 + shift)))
    collectives = (Collective("AllReduce", "out", _groups_along(dev, (1,))),) if a1 > 1 else ()
    return LayoutResult("MatMul", device_num, strategy, dev, names, repeat, "strategy", transpose_b,
                        tensors, collectives, dtype)


def elementwise_layout(device_num: int, strategy: tuple, shape: tuple = (16, 16), op: str = "Add",
                       dtype: str = "float32") -> LayoutResult:
    """Plan of an element-wise op: strategy `((2, 4),)` for ReLU, `((2, 4), (2, 4))` for Add.

    Inputs all have `shape` (broadcasting is not modelled). No collective is ever needed.
    """
    _check_device_num(device_num)
    if not strategy:
        raise StrategyError("wrong_input_count", f"{op}: the strategy is empty", "give one tuple per input.")
    shape = tuple(shape)
    strategy = _as_tuples(op, strategy)
    _check_values(op, strategy, (shape,) * len(strategy), device_num)
    if any(s != strategy[0] for s in strategy):  # arithmetic_info.cc BaseCheckStrategy
        raise StrategyError("elementwise_mismatch", f"{op} : Invalid strategy.",
                            f"give every input the same strategy, e.g. {(strategy[0],) * len(strategy)}.")
    names = tuple(f"s{i}" for i in range(len(shape)))
    dev, names, repeat, shift = _repeat(op, strategy, strategy[0], names, device_num)
    tmap = tuple(len(shape) - 1 - i + shift for i in range(len(shape)))
    names_in = ("x",) if len(strategy) == 1 else tuple(f"x{i}" for i in range(len(strategy)))
    tensors = tuple(tensor_layout(n, shape, dev, tmap) for n in names_in)
    tensors += (tensor_layout("out", shape, dev, tmap),)
    return LayoutResult(op, device_num, strategy, dev, names, repeat, "strategy", False, tensors, (), dtype)


def write_strategy_file(path, layouts: dict, strategies: dict | None = None) -> Path:
    """Write {parameter name: TensorLayout} as a strategy file in MindSpore's JSON form; returns its path.

    The fields are those of strategy_checkpoint_info.cc StrategyCheckpointInfo::to_json (notebook 07 shows
    them); `build_searched_strategy` and `transform_checkpoints` read JSON only from a name ending in .json.
    """
    path = Path(path)
    if path.suffix != ".json":
        raise ValueError(f"{path}: MindSpore reads a strategy file as JSON only when its name ends with .json")
    items = {}
    for name, t in layouts.items():
        if not t.dev_matrix or any(isinstance(e, tuple) for e in t.tensor_map):
            raise ValueError(f"{name}: need a device matrix and one device axis (or -1) per dimension")
        items[name] = {"dev_matrix": [int(d) for d in t.dev_matrix], "tensor_map": [int(m) for m in t.tensor_map],
                       "tensor_shape": [int(d) for d in t.shape], "field": 0, "opt_weight_shard_step": 0,
                       "opt_weight_shard_size": 0}
    content = {"current_stage": 0,
               "parallel_strategy_item": {op: {"stage": 0, "parallel_strategy": [list(s) for s in strategy]}
                                          for op, strategy in (strategies or {}).items()},
               "parallel_layout_item": items}
    path.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    return path


def read_strategy_file(path) -> dict:
    """{parameter name: (device matrix, tensor map)} from the strategy file a semi/auto-parallel job saved.

    Read with MindSpore's own reader, `mindspore.parallel.build_searched_strategy` (protobuf, or JSON when
    the name ends with .json); `tensor_layout(name, full_shape, *entry)` gives every rank's slice.
    """
    from mindspore.parallel import build_searched_strategy

    return {name: (tuple(int(d) for d in layout.dev_matrix[0].dim), tuple(int(d) for d in layout.tensor_map[0].dim))
            for name, layout in build_searched_strategy(str(path)).items()}


# ---------------------------------------------------------------- running a plan with numpy

def partial_products(result: LayoutResult, A, B) -> list:
    """Each rank's local MatMul result, before the output collective (input AllGathers are applied)."""
    if result.op != "MatMul":
        raise ValueError("partial_products needs a MatMul plan; use elementwise_local for element-wise ops")
    A, B = np.asarray(A), np.asarray(B)
    local = {}
    for name, full in (("A", A), ("B", B)):
        t = result.tensor(name)
        if full.shape != t.shape:
            raise ValueError(f"{name} has shape {full.shape}, the plan expects {t.shape}")
        local[name] = [full[t.slice_of(r)] for r in range(result.device_num)]
    for c in result.collectives:
        if c.kind == "AllGather":  # concatenate the group's pieces in rank order
            for group in c.groups:
                gathered = np.concatenate([local[c.tensor][r] for r in group], axis=c.axis)
                for r in group:
                    local[c.tensor][r] = gathered
    return [a @ (b.T if result.transpose_b else b) for a, b in zip(local["A"], local["B"])]


def elementwise_local(result: LayoutResult, fn, *inputs) -> list:
    """Each rank's local `fn(*slices)` for an element-wise plan."""
    layouts = result.tensors[:-1]
    return [fn(*(np.asarray(x)[t.slice_of(r)] for x, t in zip(inputs, layouts)))
            for r in range(result.device_num)]


def reassemble(result: LayoutResult, partials: list) -> np.ndarray:
    """Apply the output AllReduce (sum within each group), then place every rank's block in the output.

    Ranks holding the same block must agree; a gap or a disagreement raises ValueError.
    """
    values = list(partials)
    for c in result.collectives:
        if c.kind == "AllReduce":
            for group in c.groups:
                total = sum(values[r] for r in group)
                for r in group:
                    values[r] = total
    out = result.tensor("out")
    full = np.zeros(out.shape, dtype=np.result_type(*values))
    written = np.zeros(out.shape, dtype=bool)
    for rank, value in enumerate(values):
        index = out.slice_of(rank)
        if value.shape != out.local_shape:
            raise ValueError(f"rank {rank} has a block of shape {value.shape}, expected {out.local_shape}")
        if written[index].any() and not np.allclose(full[index], value):
            raise ValueError(f"rank {rank} disagrees with another rank holding the same output block")
        full[index], written[index] = value, True
    if not written.all():
        raise ValueError("some output blocks are held by no rank")
    return full
