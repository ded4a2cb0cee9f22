"""Tools to look inside mixed precision (混合精度) in this process, for notebook 05 (plumbing, not the lesson).

`convert` runs `amp.auto_mixed_precision` in a scratch folder; `inspect_graph` reads, from the compiled
graph, the dtype the AMP level asked for and the dtype of the kernel the device runs; the others report
what a conversion set, what `ms.Model` built for training, and the step times of a launched run.

Importing this module imports MindSpore but changes nothing (no context, no seed).
"""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import mindspore as ms

LEVELS = ("O0", "O1", "O2", "O3", "auto")
# Operators worth reporting in a small network; Cast is counted separately.
COMPUTE_OPS = ("MatMul", "BatchMatMul", "BiasAdd", "Dense", "ReLU", "BatchNorm", "LayerNorm", "Softmax",
               "Conv2D", "Add", "Mul")


# ---------------------------------------------------------------- converting a network

def keep_cell_files() -> None:
    """Write every notebook cell run so far (and, from now on, every cell after it runs) to the file
    name IPython gave it.

    MindSpore reads the source file of each function it compiles, for its debug information. IPython
    keeps cell sources in memory only (`linecache`), so every graph node of a network defined in a cell
    costs two log lines ("... may not exists", "Get realpath failed"): thousands per compilation,
    enough to fill the kernel's output pipe and stall it. With the files on disk there are none.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def write(*_):
        for name, entry in list(linecache.cache.items()):
            if "ipykernel_" in name and name.endswith(".py") and len(entry) > 2 and not os.path.exists(name):
                Path(name).parent.mkdir(parents=True, exist_ok=True)
                Path(name).write_text("".join(entry[2]), encoding="utf-8")

    write()
    if write.__qualname__ not in [getattr(f, "__qualname__", "") for f in shell.events.callbacks["post_run_cell"]]:
        shell.events.register("post_run_cell", write)


@contextlib.contextmanager
def in_directory(path: str | os.PathLike, network_class: type | None = None):
    """Run the block with `path` (created if needed) as the current directory.

    Level O1 (`mindspore.rewrite`) reads the network class's source with `inspect.getsource`, which on
    Python < 3.13 cannot find a class defined in a notebook cell (`__main__` has no `__file__`). Given
    `network_class`, the block runs with `__main__.__file__` pointing at a copy of the cell that defined it.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    main = sys.modules["__main__"]
    borrowed = (network_class is not None and network_class.__module__ == "__main__"
                and not getattr(main, "__file__", None))
    if borrowed:
        cell = network_class.construct.__code__.co_filename    # IPython keeps each cell's source in linecache
        copy = path / "notebook_cells" / f"{Path(cell).stem}.py"
        copy.parent.mkdir(exist_ok=True)
        copy.write_text("".join(linecache.getlines(cell)), encoding="utf-8")
        main.__file__ = str(copy)
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(previous)
        if borrowed:
            del main.__file__


def convert(network, level: str, dtype=None, workdir: str | os.PathLike | None = None):
    """`amp.auto_mixed_precision(network, level, dtype)` run inside `workdir` (default: a temp folder per process).

    Level O1 rewrites the network's Python source (mindspore.rewrite) and writes the generated class
    to ./rewritten_network/<Class>Opt_<id>.py, then imports it; graph compilation reads that file
    later, so the folder is kept. Running it in a scratch folder keeps the repository clean.
    """
    from mindspore import amp
    from mindspore.train import amp as train_amp

    kwargs = {} if dtype is None else {"dtype": dtype}
    if level != "O1" and not train_amp.MS_AMP_BY_REWRITE:   # only the rewrite writes files
        return amp.auto_mixed_precision(network, level, **kwargs)
    workdir = Path(workdir) if workdir is not None else Path(tempfile.gettempdir()) / f"amp-rewrite-{os.getpid()}"
    with in_directory(workdir, type(network)):
        return amp.auto_mixed_precision(network, level, **kwargs)


def rewritten_source(workdir: str | os.PathLike) -> str:
    """The newest source file O1 generated under workdir/rewritten_network ('' if none)."""
    files = sorted(Path(workdir, "rewritten_network").glob("*.py"), key=lambda p: p.stat().st_mtime)
    return files[-1].read_text(encoding="utf-8") if files else ""


def cell_precisions(network) -> list[dict]:
    """Every sub-cell: its path, class, the precision flag set by to_float (fp16/fp32/bf16 or '-')."""
    rows = []
    for name, cell in network.cells_and_names():
        flags = cell.get_flags()
        precision = next((p for p in ("fp16", "bf16", "fp32") if flags.get(p)), "-")
        rows.append({"cell": name or "(top)", "class": type(cell).__name__, "to_float": precision})
    return rows


def parameter_dtypes(network) -> dict[str, str]:
    """{parameter name: dtype} for the trainable parameters."""
    return {p.name: str(p.dtype) for p in network.trainable_params()}


# ---------------------------------------------------------------- reading the compiled graph

@dataclass
class OpRecord:
    """One operator of the compiled graph: the dtypes the graph asks for and those of the kernel that runs."""

    op: str
    cell: str
    graph_in: tuple[str, ...]
    graph_out: str
    kernel_in: tuple[str, ...] | None = None
    kernel_out: str | None = None


@dataclass
class GraphReport:
    """What `inspect_graph` found. `ops` in execution order; casts counted, not listed."""

    ops: list[OpRecord]
    amp_casts: int            # Cast nodes in the front-end graph (inserted by the AMP level)
    backend_casts: int        # Cast nodes the backend added because no kernel took the dtype
    output_dtype: str

    def dtypes(self, op: str) -> set[str]:
        """Output dtypes the graph gives every `op` node (e.g. {'Float16'})."""
        return {r.graph_out for r in self.ops if r.op == op}

    def kernel_dtypes(self, op: str) -> set[str]:
        return {r.kernel_out for r in self.ops if r.op == op and r.kernel_out}

    def table(self) -> str:
        width = max([len(r.cell) for r in self.ops] + [4])
        lines = [f"{'cell':<{width}}  {'operator':<10} {'graph asks: inputs -> output':<40} kernel on this device"]
        for r in self.ops:
            graph = f"{','.join(_short(t) for t in r.graph_in)} -> {_short(r.graph_out)}"
            kernel = (f"{','.join(_short(t) for t in r.kernel_in)} -> {_short(r.kernel_out)}"
                      if r.kernel_out else "(not found)")
            lines.append(f"{r.cell:<{width}}  {r.op:<10} {graph:<40} {kernel}")
        lines.append(f"casts in the graph: {self.amp_casts}; casts the backend added: {self.backend_casts}; "
                     f"network output: {self.output_dtype}")
        return "\n".join(lines)


_NODE = re.compile(r"^\s+%\d+\([^)]*\) = (?:PrimFunc_)?([A-Za-z0-9_]+)\(")
_SCOPE = re.compile(r"# Fullname with scope: \((.*)\)")
_TENSOR = re.compile(r"Tensor\[(\w+)\]")
_KERNEL = re.compile(r"<([A-Z][a-z]+\d*)x")
_OPNUM = re.compile(r"-op\d+$")
_FLOATS = ("Float16", "Float32", "Float64", "BFloat16")


def _short(dtype: str) -> str:
    return {"Float16": "fp16", "Float32": "fp32", "Float64": "fp64", "BFloat16": "bf16"}.get(dtype, dtype)


def _cell_of(scope: str) -> str:
    """'Default/_backbone-NormNet/bn-_OutputTo16/_backbone-BatchNorm1d/BatchNorm-op0' -> 'bn (BatchNorm1d)'."""
    parts = scope.split("/")[1:-1]
    names = [p.split("-")[0] for p in parts if not p.startswith("_backbone")]
    kind = parts[-1].split("-", 1)[-1] if parts else ""
    return f"{'.'.join(names) or '(top)'} ({kind})" if kind else "(top)"


def _parse_ir(path: Path) -> list[dict]:
    """Nodes of a MindSpore .ir file: {op, scope, abstract, kernel, backend_cast}."""
    nodes, node = [], None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _NODE.match(line)
        if match:
            node = {"op": match.group(1), "scope": "", "abstract": None, "kernel": None,
                    "backend_cast": "is_backend_cast: Bool(1)" in line}
            nodes.append(node)
            continue
        if node is None:
            continue
        stripped = line.strip()
        if stripped.startswith(": (") and " -> " in stripped:
            if "Format" in stripped:
                node["kernel"] = node["kernel"] or stripped
            elif node["abstract"] is None:
                node["abstract"] = stripped
        elif (scope := _SCOPE.search(line)):
            node["scope"] = scope.group(1)
    return nodes


def _split_types(line: str, pattern: re.Pattern) -> tuple[tuple[str, ...], str]:
    inputs, _, output = line.partition(" -> ")
    ins = tuple(t for t in pattern.findall(inputs) if t in _FLOATS)
    outs = [t for t in pattern.findall(output) if t in _FLOATS]
    return ins, (outs[0] if outs else "-")


def _sequence_number(path: Path) -> int:
    """The trailing number MindSpore gives each IR file it writes (-1 if none)."""
    digits = re.findall(r"(\d+)", path.stem)
    return int(digits[-1]) if digits else -1


@contextlib.contextmanager
def _quiet_mindspore():
    """Silence MindSpore's Python warnings (e.g. 'save_graphs will be deprecated') inside the block."""
    from mindspore import log

    logger = log._get_logger()  # pylint: disable=protected-access
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def inspect_graph(network, *inputs) -> GraphReport:
    """Compile and run `network(*inputs)` in graph mode with the IR dump on, and report operator dtypes.

    The front-end graph (`*_validate_*.ir`) shows what the AMP level asked for; the kernel graph
    (`graph_build_*.ir`) what the device runs. Pass a network that has not been compiled with these
    input shapes yet (a cached graph writes no IR). The IR dump is switched on through
    `set_context(save_graphs=...)`, deprecated in favour of the MS_DEV_SAVE_GRAPHS environment
    variable, which is only read when MindSpore starts.
    """
    ir_dir = Path(tempfile.mkdtemp(prefix="amp-ir-"))
    mode = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    with _quiet_mindspore():
        ms.set_context(save_graphs=1, save_graphs_path=str(ir_dir))
    try:
        output = network(*inputs)
        fronts = list(ir_dir.glob("*_validate_*.ir"))
        if not fronts:
            raise RuntimeError(f"no IR written to {ir_dir}: was this network already compiled for these "
                               "inputs? Pass a freshly built network.")
        front_nodes = _parse_ir(max(fronts, key=_sequence_number))   # the last one MindSpore wrote
        kernel_nodes = [n for f in sorted(ir_dir.glob("graph_build_*.ir")) for n in _parse_ir(f)]
    finally:
        with _quiet_mindspore():
            ms.set_context(save_graphs=0)
        ms.set_context(mode=mode)
        shutil.rmtree(ir_dir, ignore_errors=True)
    # Match front-end and kernel nodes by scope; the trailing "-op<N>" counter differs between the two.
    kernel_by_scope: dict[str, list[dict]] = {}
    for n in kernel_nodes:
        if n["kernel"] and not n["backend_cast"]:
            kernel_by_scope.setdefault(_OPNUM.sub("", n["scope"]), []).append(n)

    records, amp_casts = [], 0
    for node in front_nodes:
        if node["op"] == "Cast":
            amp_casts += 1
            continue
        if node["op"] not in COMPUTE_OPS or not node["abstract"]:
            continue
        graph_in, graph_out = _split_types(node["abstract"], _TENSOR)
        record = OpRecord(node["op"], _cell_of(node["scope"]), graph_in, graph_out)
        candidates = kernel_by_scope.get(_OPNUM.sub("", node["scope"]))
        if candidates:
            kernel = candidates.pop(0)
            record.kernel_in, record.kernel_out = _split_types(kernel["kernel"], _KERNEL)
        records.append(record)
    return GraphReport(ops=records, amp_casts=amp_casts,
                       backend_casts=sum(n["op"] == "Cast" and n["backend_cast"] for n in kernel_nodes),
                       output_dtype=str(output.dtype) if hasattr(output, "dtype") else type(output).__name__)


# ---------------------------------------------------------------- what Model built

def describe_train_network(model) -> dict:
    """What `ms.Model` built for training: the one-step wrapper, the loss scale it feeds the backward
    pass, how it updates that scale, and the optimizer's own `loss_scale` (what it divides by)."""
    train = model.train_network
    info = {"wrapper": type(train).__name__, "loss_cell": type(train.network).__name__}
    if hasattr(train, "scale_sense"):
        sense = train.scale_sense
        info["loss_scale"] = float(sense.asnumpy()) if hasattr(sense, "asnumpy") else sense
        info["scale_update"] = type(getattr(train, "loss_scaling_manager", None)).__name__
    else:
        info["loss_scale"] = float(getattr(train, "sens", 1.0))
        info["scale_update"] = "none (fixed)"
    optimizer = getattr(train, "optimizer", None)
    info["optimizer_divides_by"] = float(getattr(optimizer, "loss_scale", 1.0))
    return info


# ---------------------------------------------------------------- launched runs

def step_seconds(result, rank: int = 0, skip: int = 1) -> list[float]:
    """Per-step wall times of a launched run (from metrics.jsonl), leaving out the first `skip` steps
    (the first step of a graph-mode run includes compilation)."""
    times = [r["time"] for r in result.records(rank, "step")]
    durations = [b - a for a, b in zip(times, times[1:])]
    return durations[max(0, skip - 1):]
