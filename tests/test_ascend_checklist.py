"""The Ascend checklist: four mistakes that reviews found twice, checked in every worker script of every notebook.

The scripts run on CPU in CI, but they are written for an Ascend node. These guards read every script a notebook
writes (helpers.scripts.all_scripts(): the source a reader sees) and fail where a script would break or mislead on
a node. Each failure names the notebook, the script and the line, and says the fix.

1. Memory: a script that reads host memory (VmHWM, VmRSS, /proc/self/status, getrusage's ru_maxrss) must also read
   the card's (ms.runtime.max_memory_allocated), itself or through a function of its notebook's scripts that does
   (gpt.py's peak_memory_mb(device)). On Ascend the tensors live on the card, where host memory does not see them.
2. Precision: no script sets ms.device_context.ascend.op_precision.precision_mode("must_keep_origin_dtype") without
   a test of the chip around it, and none sets a precision mode after init(). The series targets Atlas A2/A3 cards
   (notebook 01, section 2), where float32 products stay float32 without it; on the Atlas training series (910A) it
   is CANN's cube mode KEEP_DTYPE, which fails on float32 matrix products. The notebooks' own cells are held to it too.
3. Point-to-point order: an HCCL send may wait for its receive. Every script that sends or receives has its order
   proven to complete when every send waits: by a replay here (the script's own code that issues the operations,
   run for every rank with a recorder in place of mindspore.mint.distributed, for P = 1..8 ranks), or by its
   notebook asserting helpers.rendezvous.first_deadlock on the order the script recorded (as notebook 10 does).
4. CPU stand-ins: where a script picks its collective by device (DEVICE, or a `native` flag), and its CPU side
   stands in for a collective CPU lacks (all-reduce for reduce-scatter or all-gather, send/recv for all-to-all,
   all-gather for all-to-all or reduce-scatter), its Ascend side calls the real one; and every flag that picks the
   Ascend side is True when DEVICE is "Ascend".

What they cannot prove is said beside each guard. Each guard also runs on a deliberately broken copy of a real
script, to show that it reports what it claims with the file, the line and the fix.
"""

import ast
import re
import sys
import warnings
from collections.abc import Iterator
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest

from helpers.rendezvous import waiting_at
from helpers.scripts import all_scripts, borrowed_scripts, notebook_scripts, other_cells

SCRIPTS = all_scripts()


def script_id(key):
    return f"{key[0][:2]}-{key[1].removeprefix('scripts/')}"


# ---- reading a script

@cache
def parse(source: str) -> ast.Module:
    return ast.parse(source)


def mindspore_names(tree: ast.Module) -> set[str]:
    """The names a script binds by importing from MindSpore (ms, dist, ops, nn, init, ...)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "mindspore"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mindspore":
            names |= {a.asname or a.name for a in node.names}
    return names


def root_name(node: ast.AST) -> str | None:
    """The name an attribute chain starts from: "dist" for dist.send, "ms" for ms.mint.distributed.send."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def called_name(call: ast.Call) -> str | None:
    """f for f(...), the last attribute for a.b.f(...)."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def calls(tree: ast.AST, *names: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and called_name(n) in names]


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def notebook_sources(notebook: str) -> dict[str, str]:
    """Every script a notebook's scripts may import: its own and those it copies from another notebook."""
    return {**borrowed_scripts(notebook), **notebook_scripts(notebook)}


# ==== 1. Memory ===================================================================================================
# Proves: no script records a host-memory figure without also reading the card's memory somewhere (itself, or a
# function of its notebook's scripts that reads it, followed through calls). Cannot prove: that the device reading
# is the one recorded or asserted on Ascend, or that a notebook cell (not a script) asserts on device memory.

HOST_MEMORY = ("VmHWM", "VmRSS", "/proc/self/status")   # text a script reads from /proc; getrusage: ru_maxrss
DEVICE_MEMORY = {"max_memory_allocated", "max_memory_reserved"}
MEMORY_FIX = ("on Ascend read the card's peak, ms.runtime.max_memory_allocated() (after "
              "ms.runtime.reset_max_memory_allocated()), and keep peak RSS for CPU; or call gpt.py's "
              "peak_memory_mb(DEVICE), which picks by device")


def host_memory_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for each place a script reads host memory. getrusage alone is not one: notebook 04 reads CPU
    time with it."""
    found = [(n.lineno, "ru_maxrss") for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "ru_maxrss"]
    found += [(n.lineno, text) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
              for text in HOST_MEMORY if text in n.value]
    return sorted(set(found))


def reads_device_memory(node: ast.AST, readers: set[str]) -> bool:
    """Whether `node` reads the card's memory, or calls one of `readers` (functions that do)."""
    return any(isinstance(n, ast.Attribute) and n.attr in DEVICE_MEMORY for n in ast.walk(node)) or bool(
        calls(node, *readers))


@cache
def device_memory_readers(notebook: str) -> frozenset[str]:
    """The functions of a notebook's scripts that read the card's memory, directly or through each other."""
    functions = [n for source in notebook_sources(notebook).values() for n in ast.walk(parse(source))
                 if isinstance(n, ast.FunctionDef)]
    readers: set[str] = set()
    while True:
        more = {f.name for f in functions if reads_device_memory(f, readers)}
        if more <= readers:
            return frozenset(readers)
        readers |= more


def memory_problems(notebook: str, script: str, source: str) -> list[str]:
    tree = parse(source)
    if reads_device_memory(tree, set(device_memory_readers(notebook))):
        return []
    return [f"{notebook}, {script}, line {line}: records a memory figure from host memory ({what}), which on Ascend "
            f"misses the tensors on the card. Fix: {MEMORY_FIX}." for line, what in host_memory_reads(tree)]


@pytest.mark.parametrize("key", sorted(SCRIPTS), ids=script_id)
def test_memory_figures_read_the_card_on_ascend(key):
    problems = memory_problems(*key, SCRIPTS[key])
    assert not problems, "\n".join(problems)


def test_the_memory_guard_reports_a_script_that_reads_only_host_memory():
    key = ("10_pipeline_parallelism.ipynb", "scripts/pipeline_by_hand.py")
    broken = "\n".join(line for line in SCRIPTS[key].splitlines() if "max_memory_allocated" not in line)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if ".ru_maxrss" in text)
    assert memory_problems(*key, broken) == [
        f"10_pipeline_parallelism.ipynb, scripts/pipeline_by_hand.py, line {line}: records a memory figure from host "
        f"memory (ru_maxrss), which on Ascend misses the tensors on the card. Fix: {MEMORY_FIX}."]
    assert memory_problems(*key, SCRIPTS[key]) == [], "the real script reads the card too"


def test_a_sibling_function_that_reads_the_card_counts():
    notebook = "14_long_sequences.ipynb"   # train_cp.py calls peak_memory_mb of notebook 11's gpt.py, copied here
    assert "peak_memory_mb" in device_memory_readers(notebook)
    assert memory_problems(notebook, "x.py", "from gpt import peak_memory_mb\npeak_memory_mb('CPU')\n"
                                             "open('/proc/self/status')\n") == []
    assert memory_problems(notebook, "x.py", "open('/proc/self/status')\n") != []


# ==== 2. Precision ================================================================================================
# The series targets the Atlas A2 and A3 training products (notebook 01, section 2). On them MindSpore 2.10 keeps
# float32 matrix products in float32 with no setting: with no precision mode set, its operator layer asks CANN for
# cube math KEEP_DTYPE on ascend910b and ascend910_93 (notebook 02, section 5). precision_mode("must_keep_origin_dtype")
# asks for KEEP_DTYPE on every chip, and on the Atlas training series (910A) CANN's aclnnMatmul reference documents
# KEEP_DTYPE with float32 input as an error. The series set it on Ascend for 910A's sake until issue 53; a script
# that sets it must now say for which chips, by a test of the chip around the call.
# Proves: no worker script and no notebook cell calls precision_mode with "must_keep_origin_dtype" outside an `if`
# whose test looks at the chip (a name, attribute or string with "soc", "chip" or "910" in it), and none calls
# precision_mode after init(). Cannot prove: that such a test picks the chips it means.

PRECISION_MODE = "must_keep_origin_dtype"
OLD_PRECISION_LINES = (f'if DEVICE == "Ascend":\n'   # what notebooks 02, 05, 07, 09 and 11-16 wrote before issue 53
                       f'    ms.device_context.ascend.op_precision.precision_mode("{PRECISION_MODE}")\n')
CHIP_WORDS = ("soc", "chip", "910")
PRECISION_FIX = ("delete the call: on the Atlas A2/A3 cards the series targets, float32 matrix products stay float32 "
                 "without it (notebook 02, section 5); or set it only under a test of the chip, e.g. "
                 "`if \"910B\" in soc_name:`")
TRAINING_CALLS = ("value_and_grad", "grad", "TrainOneStepCell", "Model", "Momentum", "SGD", "Adam", "AdamW",
                  "AdamWeightDecay", "Lamb", "LARS", "Adagrad", "RMSProp")


def is_training(tree: ast.Module) -> bool:
    return bool(calls(tree, *TRAINING_CALLS))


def init_line(tree: ast.Module) -> int | None:
    """The first line that starts the communication: init() or init_process_group()."""
    found = [c.lineno for c in calls(tree, "init", "init_process_group")]
    return min(found, default=None)


def names_the_mode(arg: ast.AST, tree: ast.Module) -> bool:
    """Whether `arg` is "must_keep_origin_dtype", or a name assigned an expression that contains it."""
    def holds(node):
        return any(isinstance(n, ast.Constant) and n.value == PRECISION_MODE for n in ast.walk(node))

    if isinstance(arg, ast.Name):
        return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)
                   and holds(n.value) for n in ast.walk(tree))
    return holds(arg)


def is_chip_choice(test: ast.expr) -> bool:
    """Whether an `if` test looks at the chip: a name, attribute or string in it mentions soc, chip or 910."""
    for node in ast.walk(test):
        text = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "")
        if any(word in text.lower() for word in CHIP_WORDS):
            return True
    return False


def under_chip_choice(call: ast.Call, up: dict) -> bool:
    node = call
    while node in up:
        node = up[node]
        if isinstance(node, ast.If) and is_chip_choice(node.test):
            return True
    return False


def precision_problems(where: str, source: str) -> list[str]:
    """What is wrong with the precision-mode calls of `source` (a script, or a notebook's own cell)."""
    tree, problems = parse(source), []
    up, init = parents(tree), init_line(tree)
    for call in calls(tree, "precision_mode"):
        if init is not None and call.lineno > init:
            problems.append(f"{where}, line {call.lineno}: sets the precision mode after init() (line {init}). Fix: "
                            f"move it before line {init}: the mode must be set before the device starts.")
        if call.args and names_the_mode(call.args[0], tree) and not under_chip_choice(call, up):
            problems.append(f"{where}, line {call.lineno}: sets precision_mode(\"{PRECISION_MODE}\") without a chip "
                            "choice. On the Atlas training series (910A) that is CANN's cube mode KEEP_DTYPE, which "
                            f"fails on float32 matrix products. Fix: {PRECISION_FIX}.")
    return problems


def python_lines(cell: str) -> str:
    """A notebook cell without IPython's % and ! lines (and the lines a trailing backslash continues them on)."""
    kept, shell = [], False
    for line in cell.splitlines():
        if shell or line.lstrip().startswith(("%", "!")):
            shell = line.rstrip().endswith("\\")
            continue
        kept.append(line)
    return "\n".join(kept)


NOTEBOOK_NAMES = sorted({notebook for notebook, _ in SCRIPTS})


@pytest.mark.parametrize("key", sorted(SCRIPTS), ids=script_id)
def test_no_script_sets_must_keep_origin_dtype_without_a_chip_choice(key):
    problems = precision_problems(", ".join(key), SCRIPTS[key])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOK_NAMES)
def test_no_notebook_cell_sets_must_keep_origin_dtype_without_a_chip_choice(notebook):
    problems = [problem for k, cell in enumerate(other_cells(notebook))
                for problem in precision_problems(f"{notebook}, its code cell {k} that writes no script",
                                                  python_lines(cell))]
    assert not problems, "\n".join(problems)


def with_precision_mode(source: str, lines: str = OLD_PRECISION_LINES) -> str:
    """`source` with `lines` (by default the two the series wrote before issue 53) inserted just before its first
    init()."""
    line = init_line(parse(source))
    old = source.splitlines(keepends=True)
    indent = re.match(r"\s*", old[line - 1]).group()
    added = [indent + text + "\n" for text in lines.splitlines()]
    return "".join(old[:line - 1] + added + old[line - 1:])


TRAINING = sorted(key for key, source in SCRIPTS.items() if is_training(parse(source)) and init_line(parse(source)))


@pytest.mark.parametrize("key", TRAINING, ids=script_id)
def test_the_precision_guard_reports_the_old_lines(key):
    """The old scripts, as far as precision goes: every training script with the two lines it (or its like) had
    before issue 53. The guard names the line and the fix."""
    source = with_precision_mode(SCRIPTS[key])
    line = init_line(parse(SCRIPTS[key])) + 1
    assert precision_problems(", ".join(key), source) == [
        f"{', '.join(key)}, line {line}: sets precision_mode(\"{PRECISION_MODE}\") without a chip choice. On the "
        "Atlas training series (910A) that is CANN's cube mode KEEP_DTYPE, which fails on float32 matrix products. "
        f"Fix: {PRECISION_FIX}."]


def test_the_precision_guard_accepts_a_chip_choice_and_reports_a_late_call():
    key = ("11_gpt_tensor_parallel.ipynb", "scripts/train_gpt.py")
    chosen = ('if DEVICE == "Ascend" and "910B" in ms.hal.get_device_name(0):\n'
              f'    ms.device_context.ascend.op_precision.precision_mode("{PRECISION_MODE}")\n')
    assert precision_problems("x", with_precision_mode(SCRIPTS[key], chosen)) == []
    other_test = chosen.replace('"910B" in ms.hal.get_device_name(0)', "world > 1")
    assert precision_problems("x", with_precision_mode(SCRIPTS[key], other_test)), "another test is no chip choice"
    tree = parse(SCRIPTS[key])
    late = SCRIPTS[key] + '\nms.device_context.ascend.op_precision.precision_mode("force_fp16")\n'
    line, init = len(late.splitlines()), init_line(tree)
    assert precision_problems("x", late) == [
        f"x, line {line}: sets the precision mode after init() (line {init}). Fix: move it before line {init}: the "
        "mode must be set before the device starts."]


# ==== 3. Point-to-point order =====================================================================================
# A replay runs a script's own functions that issue sends and receives, for every rank of P = 1..8, with a Wire in
# place of mindspore.mint.distributed (and NumPy in place of tensors, which the order does not depend on), and
# plays the recorded orders out with helpers.rendezvous: a send completes only when its peer posts the matching
# receive (same shape), messages between two ranks in order. Proves: those functions' orders complete for every
# P <= 8 (pipelines: M <= 16 micro-batches; all-to-all: counts with zeros; ring: both splits). Cannot prove:
# anything about a send elsewhere in the script (each replay names what it covers), what HCCL really does, or P > 8.
# A notebook that asserts first_deadlock on a script's recorded order proves it at the rank count it ran with.

P2P = {"send", "recv", "isend", "irecv", "Send", "Receive"}   # batch_isend_irecv is issued as one batch: no order
ORDER_FIX = ("record each rank's (\"send\" | \"recv\", peer, tag) in its metrics and assert "
             "helpers.rendezvous.first_deadlock(orders) is None in the notebook, as notebook 10 does with \"comms\"; "
             "or add a replay of the function that sends to REPLAYS in tests/test_ascend_checklist.py")


def p2p_lines(tree: ast.Module) -> list[int]:
    """The lines where a script names a MindSpore send or receive (called, or handed to a helper that calls it)."""
    ms_names = mindspore_names(tree)
    return sorted({n.lineno for n in ast.walk(tree)
                   if (isinstance(n, ast.Attribute) and n.attr in P2P and root_name(n) in ms_names)
                   or (isinstance(n, ast.Name) and n.id in P2P and n.id in ms_names)})


def checks_recorded_order(notebook: str) -> bool:
    """Whether a cell of `notebook` calls first_deadlock and reads a key its scripts write into their records."""
    written = {k.value for source in notebook_scripts(notebook).values() for n in ast.walk(parse(source))
               if isinstance(n, ast.Dict) for k in n.keys if isinstance(k, ast.Constant)}
    for cell in other_cells(notebook):
        try:   # IPython's magics and shell lines are not Python
            tree = parse(re.sub(r"(?m)^\s*[%!].*$", "", cell))
        except SyntaxError:
            continue
        read = {n.slice.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                and isinstance(n.slice, ast.Constant)}
        if calls(tree, "first_deadlock") and read & written:
            return True
    return False


class Done:
    def wait(self):
        return None


class Wire:
    """mindspore.mint.distributed for one rank of a replay: each send and receive becomes an Op of helpers.rendezvous
    ("send" | "recv", peer, the tensor's shape), noted with the line of `script` that issued it."""

    def __init__(self, script: str):
        self.script, self.ops, self.lines = script, [], []

    def _record(self, kind, peer, tensor):
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.script:
            frame = frame.f_back
        self.ops.append((kind, int(peer), tuple(np.shape(tensor))))
        self.lines.append(frame.f_lineno if frame else None)

    def send(self, tensor, dst=None, group=None, tag=0):
        self._record("send", dst, tensor)

    def recv(self, tensor, src=None, group=None, tag=0):
        self._record("recv", src, tensor)

    def isend(self, tensor, dst=None, group=None, tag=0):
        self._record("send", dst, tensor)
        return Done()

    def irecv(self, tensor, src=None, group=None, tag=0):
        self._record("recv", src, tensor)
        return Done()


class Array(np.ndarray):
    """A NumPy array with the tensor methods the replayed code calls."""

    def contiguous(self):
        return self

    def asnumpy(self):
        return np.asarray(self)


def tensor(value, dtype=None):
    return np.asarray(value, dtype).view(Array)


OPS = SimpleNamespace(zeros=lambda shape, dtype=np.float32: np.zeros(shape, dtype).view(Array),
                      zeros_like=lambda x: np.zeros_like(x).view(Array),
                      concat=lambda parts, axis=0: np.concatenate(parts, axis).view(Array),
                      gather=lambda x, index, axis: np.take(x, np.asarray(index, int), axis).view(Array),
                      matmul=np.matmul, exp=np.exp, log=np.log, maximum=np.maximum)
NN = SimpleNamespace(Cell=object, CellList=list)


class Placeholder(type):
    """What a replayed script imports from MindSpore or a sibling script and its replay does not use."""

    def __getattr__(cls, name):
        return cls

    def __call__(cls, *args, **kwargs):
        return cls


def definitions(source: str, script: str, **names) -> dict:
    """The top-level functions and classes of `source`, defined but not run (no other statement of the script runs),
    compiled under the name `script` so that their lines are the script's. Its imports of the standard library and
    NumPy are real; whatever else it imports is a Placeholder unless `names` gives it."""
    namespace, body = {"__name__": "replay"}, []
    for node in parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if module.split(".")[0] in sys.stdlib_module_names | {"numpy"}:
                body.append(node)
            else:
                namespace.update({a.asname or a.name: Placeholder(a.asname or a.name, (), {}) for a in node.names})
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            body.append(node)
    namespace.update(names)
    for node in body:   # one at a time: a class the replay does not use may need what the script set up
        try:
            exec(compile(ast.Module([node], []), script, "exec"), namespace)
        except NameError:
            pass
    return namespace


Replay = Iterator[tuple[str, list[Wire] | str]]   # (configuration, one Wire per rank) or (configuration, refusal)


def ring_of_08(source: str, script: str) -> Replay:
    """Notebook 08's ring(send, recv), for P = 2..8 (at one rank the script does not call it). Not replayed: the
    send it makes to show the missing default group (it fails before sending) and batch_isend_irecv (one batch)."""
    code = definitions(source, script, Tensor=tensor)
    for size in range(2, 9):
        wires = [Wire(script) for _ in range(size)]
        for rank, wire in enumerate(wires):
            code.update(rank=rank, world=size)
            code["ring"](wire.send, wire.recv)
        yield f"P = {size}", wires


def pipeline_of_10(source: str, script: str) -> Replay:
    """Notebook 10's run(order, next_order) with its send and recv, every stage of S = 1..8, M = 1..16 micro-batches,
    GPipe and 1F1B, as the script calls it. Not replayed: the bandwidth probe (rank 0 sends, rank 1 receives, in
    turn)."""
    code = definitions(source, script, Tensor=tensor)
    code.update(timed=lambda kind, m, fn, *args: fn(*args), forward=lambda m, x: x, backward=lambda m, dy: dy,
                loss_grad=lambda m: tensor(np.zeros((1, 1))), MICRO=1, args=SimpleNamespace(width=1),
                x_all=np.zeros((16, 1), np.float32), T0=0.0, EVENTS=[], SENT=[], COMMS=[])
    for name in ("gpipe", "one_f_one_b"):
        schedule = code[name]
        for stages in range(1, 9):
            for micro in range(1, 17):
                wires = [Wire(script) for _ in range(stages)]
                for s, wire in enumerate(wires):
                    code.update(rank=s, first_stage=s == 0, last_stage=s == stages - 1, dist=wire)
                    code["run"](schedule(s, stages, micro), schedule(s + 1, stages, micro) if s < stages - 1 else [])
                yield f"{name}, S = {stages}, M = {micro}", wires


def pipeline_of_12(source: str, script: str) -> Replay:
    """Notebook 12's pipeline.py, run_1f1b with its send, recv and waits (1F1B between pipeline stages), on every rank
    of every mesh dp x pp x tp of up to 8 ranks, each rank at the stage p = rank // (dp * tp) and with the peers
    rank -+ dp * tp that train_3d.py (MeshRun) and notebook 17's train_hf.py give it, M = 1..16 micro-batches."""
    code = definitions(source, script, Tensor=tensor)
    meshes = [(dp, pp, tp) for dp in range(1, 9) for pp in range(1, 9) for tp in range(1, 9) if dp * pp * tp <= 8]
    for dp, pp, tp in meshes:
        for micro in range(1, 17):
            wires = [Wire(script) for _ in range(dp * pp * tp)]
            for rank, wire in enumerate(wires):
                p, stride = rank // (dp * tp), dp * tp
                code["dist"] = wire
                code["run_1f1b"](p, pp, micro, lambda x: x, lambda x, dy, first=p == 0: (
                    tensor(0.0), [] if first else (x, [])), np.zeros((micro, 1), np.float32),
                    np.zeros((micro, 1), np.float32), rank - stride, rank + stride, (1,))
            yield f"mesh {dp}x{pp}x{tp}, M = {micro}", wires


def all_to_all_of_13(source: str, script: str) -> Replay:
    """Notebook 13's AllToAll on CPU (native=False: send/recv pairs), forward and backward, P = 1..8, with every
    pair sending, random counts with zeros, and nothing sent at all; then as notebook 17's train_hf.py groups it,
    every expert group of a dp x tp job at once. Its Ascend branch is one all_to_all_single on the group."""
    code = definitions(source, script, Tensor=tensor, ops=OPS, nn=NN)
    rng = np.random.default_rng(0)
    for size in range(1, 9):
        for label, counts in (("every pair", np.ones((size, size), int)),
                              ("counts with zeros", rng.integers(0, 3, (size, size))),
                              ("nothing", np.zeros((size, size), int))):
            wires = [Wire(script) for _ in range(size)]
            for rank, wire in enumerate(wires):
                code["dist"] = wire
                cell = code["AllToAll"](code["ExpertGroup"](size, rank, native=False))
                cell.send, cell.recv = counts[rank].tolist(), counts[:, rank].tolist()
                out = cell.construct(tensor(np.zeros((counts[rank].sum(), 2))))
                cell.bprop(None, out, out)
            yield f"P = {size}, {label}", wires
    # Notebook 17's train_hf.py: expert groups of ep consecutive data-parallel ranks inside a job of dp x tp ranks
    # (rank = d * tp + t), each group exchanging among its members by their ranks in the job, all groups at once.
    meshes = [(a, b, c) for a in range(2, 9) for b in range(1, 5) for c in range(2, a + 1) if a * b <= 8 and a % c == 0]
    for dp, tp, ep in meshes:
        wires = [Wire(script) for _ in range(dp * tp)]
        counts = rng.integers(0, 3, (dp * tp, ep))   # rows each rank sends to each member of its group
        for rank, wire in enumerate(wires):
            d, t = rank // tp, rank % tp
            members = [(d // ep * ep + i) * tp + t for i in range(ep)]
            code["dist"] = wire
            cell = code["AllToAll"](code["ExpertGroup"](ep, d % ep, native=False, ranks=members, name="ep"))
            cell.send, cell.recv = counts[rank].tolist(), [int(counts[m, d % ep]) for m in members]
            out = cell.construct(tensor(np.zeros((counts[rank].sum(), 2))))
            cell.bprop(None, out, out)
        yield f"dp {dp} x tp {tp}, expert groups of {ep}", wires


def ring_of_14(source: str, script: str) -> Replay:
    """Notebook 14's RingAttention, forward and backward, P = 1..8, contiguous and zig-zag splits."""
    code = definitions(source, script, Tensor=tensor, ops=OPS, nn=NN)
    for size in range(1, 9):
        for zigzag in (False, True):
            label = f"P = {size}, {'zig-zag' if zigzag else 'contiguous'}"
            positions = code["split_positions"](4 * size, size, zigzag)
            try:
                cells = [code["RingAttention"](code["CPGroup"](size, rank, native=False), positions)
                         for rank in range(size)]
            except ValueError as refusal:
                yield label, str(refusal)
                continue
            wires = [Wire(script) for _ in range(size)]
            for rank, (cell, wire) in enumerate(zip(cells, wires)):
                code["dist"] = wire
                q = tensor(np.zeros((1, 1, len(positions[rank]), 2)))
                out = cell.construct(q, q, q)
                cell.bprop(q, q, q, out, out)
            yield label, wires


def exchanges_of_15(source: str, script: str) -> Replay:
    """Notebook 15's exchange(x, partner) as its collectives sweep calls it, P = 2, 4, 8 (the sweep sends only at a
    power-of-two rank count): the send/recv pair with rank XOR 1, then the all-to-all's exchanges with rank XOR k,
    k = 1..P-1, for two message sizes."""
    code = definitions(source, script, Tensor=tensor, ops=OPS, args=SimpleNamespace(repeats=1))
    for size in (2, 4, 8):
        wires = [Wire(script) for _ in range(size)]
        for rank, wire in enumerate(wires):
            code.update(rank=rank, world=size, dist=wire)
            for elements in (4, 64):
                x = tensor(np.zeros(elements))
                code["exchange"](x, rank ^ 1)
                for k in range(1, size):
                    code["exchange"](x[: elements // size], rank ^ k)
        yield f"P = {size}", wires


def exchanges_and_pipeline_of_15(source: str, script: str) -> Replay:
    """Notebook 15's two point-to-point parts: exchanges_of_15, then its pipeline step, pipeline(ids, targets, M),
    which runs notebook 12's run_1f1b (pipeline.py, replayed with it) with speed.py's p2p counter around each send,
    recv and wait (1F1B over two stages, each pair of ranks r, r XOR 1 a pipeline), on every rank of P = 2, 4, 6, 8
    (the script runs it only at an even rank count), M = 1..16 micro-batches."""
    yield from exchanges_of_15(source, script)
    schedule = definitions(SCRIPTS[PIPELINE], PIPELINE[1], Tensor=tensor)
    code = definitions(source, script, Tensor=tensor, run_1f1b=schedule["run_1f1b"])
    for size in (2, 4, 6, 8):
        for micro in range(1, 17):
            wires = [Wire(script) for _ in range(size)]
            for rank, wire in enumerate(wires):
                schedule["dist"] = wire
                code.update(rank=rank, dist=wire, STAGE=rank % 2, PEER=rank ^ 1, P2P={"seconds": 0.0, "waits": []},
                            cfg={"seq": 1, "dim": 1}, stage_forward=lambda x: x,
                            pp_grad=lambda x, dy, first=rank % 2 == 0: (tensor(0.0), [] if first else (x, [])))
                code["pipeline"](np.zeros((micro, 1, 1), np.float32), np.zeros((micro, 1, 1), np.float32), micro)
            yield f"pipeline, P = {size}, M = {micro}", wires


PIPELINE = ("12_3d_parallelism.ipynb", "scripts/pipeline.py")   # the series' one 1F1B schedule
REPLAYS = {
    ("08_dynamic_graph_path.ipynb", "scripts/pynative_collectives.py"): ring_of_08,
    ("10_pipeline_parallelism.ipynb", "scripts/pipeline_by_hand.py"): pipeline_of_10,
    ("12_3d_parallelism.ipynb", "scripts/pipeline.py"): pipeline_of_12,
    ("13_mixture_of_experts.ipynb", "scripts/moe.py"): all_to_all_of_13,
    ("14_long_sequences.ipynb", "scripts/context.py"): ring_of_14,
    ("15_speed.ipynb", "scripts/speed.py"): exchanges_and_pipeline_of_15,
}


def describe(op) -> str:
    kind, peer, _ = op
    return f"{kind} {'to' if kind == 'send' else 'from'} rank {peer}"


def order_problem(notebook: str, script: str, label: str, wires: list[Wire]) -> str | None:
    """None when the recorded orders complete if every send waits for its receive; else where each rank waits."""
    where = f"{notebook}, {script}, {label}"
    try:
        heads = waiting_at([wire.ops for wire in wires])
    except ValueError as mismatch:
        return f"{where}: a send meets a receive of another shape ({mismatch}). Fix: match the buffers' shapes."
    if heads is None:
        return None
    waits = "; ".join(f"rank {rank} at line {wire.lines[i]} ({describe(wire.ops[i])})"
                      for rank, (wire, i) in enumerate(zip(wires, heads)) if i is not None)
    return (f"{where}: the order does not complete if every send waits for its receive (HCCL may): {waits}. Fix: "
            "send to the rank that receives it, and order each exchange so that one side receives while the other "
            "sends (e.g. even ranks send first, odd ranks receive first; the lower rank of a pair sends first); check "
            "it with helpers.rendezvous.")


def replay_problems(key, source, replay) -> list[str]:
    try:
        return [problem for label, wires in replay(source, key[1]) if not isinstance(wires, str)
                and (problem := order_problem(*key, label, wires))]
    except Exception as exc:  # noqa: BLE001  (a script rewritten since its replay was)
        pytest.fail(f"{key[0]}, {key[1]}: the replay {replay.__name__} no longer fits the script ({exc!r}). Fix: "
                    "update it in tests/test_ascend_checklist.py to call the script's code as it now is.")


def unproven_order(notebook: str, script: str, source: str, replays: dict, checked: bool) -> str | None:
    lines = p2p_lines(parse(source))
    if not lines or (notebook, script) in replays or checked:
        return None
    return (f"{notebook}, {script}, line {lines[0]}: sends or receives point to point, and nothing proves that its "
            f"order completes if every send waits for its receive (HCCL may). Fix: {ORDER_FIX}.")


P2P_SCRIPTS = sorted(key for key, source in SCRIPTS.items() if p2p_lines(parse(source)))


@pytest.mark.parametrize("key", P2P_SCRIPTS, ids=script_id)
def test_every_point_to_point_order_is_proven(key):
    problem = unproven_order(*key, SCRIPTS[key], REPLAYS, checks_recorded_order(key[0]))
    assert problem is None, problem


@pytest.mark.parametrize("key", sorted(REPLAYS), ids=script_id)
def test_replayed_orders_complete_when_sends_wait(key):
    problems = replay_problems(key, SCRIPTS[key], REPLAYS[key])
    assert not problems, "\n".join(problems[:5])
    refused = [label for label, wires in REPLAYS[key](SCRIPTS[key], key[1]) if isinstance(wires, str)]
    if refused:   # shown in pytest's warnings summary: what the script refuses is not proven here
        warnings.warn(f"{key[1]} refuses {', '.join(refused)}: not replayed", stacklevel=1)


def test_the_series_has_the_point_to_point_scripts_the_replays_cover():
    assert set(REPLAYS) <= set(P2P_SCRIPTS), "a replay for a script that no longer sends: remove it"
    assert checks_recorded_order("10_pipeline_parallelism.ipynb"), "notebook 10 checks its recorded order"


def test_the_order_guard_reports_a_ring_where_every_rank_sends_first():
    key = ("14_long_sequences.ipynb", "scripts/context.py")
    even_ranks_first = r'\("send", "recv"\) if (self\.)?rank % 2 == 0 else \("recv", "send"\)'
    broken, count = re.subn(even_ranks_first, '("send", "recv")', SCRIPTS[key])
    assert count == 1, "the ring's order is written another way now: update this demonstration"
    problems = replay_problems(key, broken, ring_of_14)
    send = next(i for i, text in enumerate(broken.splitlines(), 1) if "dist.send(" in text)
    assert problems and problems[0] == (
        f"14_long_sequences.ipynb, scripts/context.py, P = 2, contiguous: the order does not complete if every send "
        f"waits for its receive (HCCL may): rank 0 at line {send} (send to rank 1); rank 1 at line {send} (send to "
        "rank 0). Fix: send to the rank that receives it, and order each exchange so that one side receives while the "
        "other sends (e.g. even ranks send first, odd ranks receive first; the lower rank of a pair sends first); "
        "check it with helpers.rendezvous.")
    assert replay_problems(key, SCRIPTS[key], ring_of_14) == []


def test_the_order_guard_reports_a_pipeline_that_sends_before_it_receives():
    key = PIPELINE   # notebooks 12, 15 and 17 run this one schedule
    receive = "        dy = Tensor(targets[part]) if p == pp - 1 else recv(next_rank)\n"
    send = ("        if waiting is not None:\n"
            "            pending.append(p2p(\"send\", dist.isend, waiting, next_rank))\n"
            "            waiting = None\n")
    assert SCRIPTS[key].count(receive + send) == 1, "the pipeline's order is written another way now: update this"
    broken = SCRIPTS[key].replace(receive + send, send + receive)   # the held-back activation sent too early
    problems = replay_problems(key, broken, pipeline_of_12)
    # Every send goes through p2p (pipeline.py's default, `call`): the replay names its line, where isend is called.
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "return fn(*fn_args)" in text)
    assert problems and problems[0] == (
        f"12_3d_parallelism.ipynb, scripts/pipeline.py, mesh 1x2x1, M = 2: the order does not complete if every send "
        f"waits for its receive (HCCL may): rank 0 at line {line} (send to rank 1); rank 1 at line {line} (send to "
        "rank 0). Fix: send to the rank that receives it, and order each exchange so that one side receives while the "
        "other sends (e.g. even ranks send first, odd ranks receive first; the lower rank of a pair sends first); "
        "check it with helpers.rendezvous.")
    assert replay_problems(key, SCRIPTS[key], pipeline_of_12) == []
    assert replay_problems(("15_speed.ipynb", "scripts/speed.py"), SCRIPTS[("15_speed.ipynb", "scripts/speed.py")],
                           exchanges_and_pipeline_of_15) == []


def test_the_order_guard_reports_a_script_whose_order_nobody_checks():
    key = ("13_mixture_of_experts.ipynb", "scripts/moe.py")
    line = p2p_lines(parse(SCRIPTS[key]))[0]
    assert unproven_order(*key, SCRIPTS[key], {}, checked=False) == (
        f"13_mixture_of_experts.ipynb, scripts/moe.py, line {line}: sends or receives point to point, and nothing "
        f"proves that its order completes if every send waits for its receive (HCCL may). Fix: {ORDER_FIX}.")
    assert unproven_order(*key, SCRIPTS[key], {}, checked=True) is None, "the notebook's check of its record suffices"


# ==== 4. CPU stand-ins ============================================================================================
# Proves: in every device branch (an `if` on DEVICE or on a `native` flag, or on whether a collective exists) whose
# CPU side stands in with another collective, the Ascend side names the real one; and every native/reduce_scatter/
# all_gather flag a script passes to a group is True when DEVICE is "Ascend" (or the group has one rank). Cannot
# prove: that the real collective accepts what it is given on HCCL (e.g. zero-row messages), or find a stand-in
# that is not written as a device branch.

FAMILIES = {"reduce_scatter": "reducescatter", "all_to_all": "alltoall", "all_gather": "allgather",
            "all_reduce": "allreduce"}
STANDS_IN_FOR = {"all_reduce": {"reduce_scatter", "all_gather"}, "send/recv": {"all_to_all"},
                 "all_gather": {"all_to_all", "reduce_scatter"}}
REAL = {"reduce_scatter": "mint.distributed.reduce_scatter_tensor or ops.ReduceScatter",
        "all_to_all": "mint.distributed.all_to_all_single / all_to_all or ops.AlltoAll",
        "all_gather": "mint.distributed.all_gather_into_tensor / all_gather or ops.AllGather"}
FLAGS = ("native", "reduce_scatter", "all_gather")


def families(nodes: list[ast.stmt], ms_names: set[str]) -> set[str]:
    """The collectives `nodes` name: any attribute (dist.all_reduce, self.reduce_scatter_op, ops.AlltoAll) or name
    imported from MindSpore; sends and receives only through MindSpore (moe.py's send and recv are row counts)."""
    found = set()
    for node in (n for statement in nodes for n in ast.walk(statement)):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name is None or (isinstance(node, ast.Name) and name not in ms_names):
            continue
        if name in P2P:
            found |= {"send/recv"} if isinstance(node, ast.Name) or root_name(node) in ms_names else set()
            continue
        key = name.lower().replace("_", "")
        found |= {family for family, prefix in FAMILIES.items() if key.startswith(prefix)}
    return found


def ascend_is_body(test: ast.expr) -> bool | None:
    """Whether an `if` test's body is the Ascend side (True), the CPU side (False), or the test is not about the
    device (None): DEVICE compared with a string, a `native` flag, or `<collective> is (not) None`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = ascend_is_body(test.operand)
        return None if inner is None else not inner
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "DEVICE" \
                and isinstance(node.comparators[0], ast.Constant):
            equal = isinstance(node.ops[0], ast.Eq)
            return equal == (node.comparators[0].value == "Ascend")
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and families([node.left], set()) - {"send/recv"}:
            return isinstance(node.ops[0], ast.IsNot)
        if (isinstance(node, ast.Attribute) and node.attr == "native") or (isinstance(node, ast.Name)
                                                                           and node.id == "native"):
            return True
    return None


def sides(branch: ast.If, block: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The body and the other side of an `if`: its else, or, when the body always leaves (return, raise) and there
    is no else, the statements after it in its block."""
    other = branch.orelse
    if not other and isinstance(branch.body[-1], (ast.Return, ast.Raise)):
        other = block[block.index(branch) + 1:]
    return branch.body, other


def device_branches(tree: ast.Module) -> Iterator[tuple[ast.If, str, list[ast.stmt], list[ast.stmt]]]:
    """(if, enclosing function, Ascend side, CPU side) of every device branch of a script."""
    up = parents(tree)
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            for branch in block if isinstance(block, list) else []:
                if not isinstance(branch, ast.If) or (is_body := ascend_is_body(branch.test)) is None:
                    continue
                body, other = sides(branch, block)
                function = branch
                while function in up and not isinstance(function, ast.FunctionDef):
                    function = up[function]
                name = function.name if isinstance(function, ast.FunctionDef) else "<module>"
                yield (branch, name, body, other) if is_body else (branch, name, other, body)


def stand_ins(tree: ast.Module) -> Iterator[tuple[ast.If, str, set[str], set[str]]]:
    """(if, function, what the CPU side stands in for, what the Ascend side names) for each stand-in branch."""
    ms_names = mindspore_names(tree)
    for branch, function, ascend, cpu in device_branches(tree):
        on_cpu = families(cpu, ms_names)
        wanted = set().union(*(STANDS_IN_FOR.get(f, set()) for f in on_cpu)) - on_cpu
        if wanted:
            yield branch, function, wanted, families(ascend, ms_names)


def flag_on_ascend(expr: ast.expr, tree: ast.Module) -> bool | None:
    """The value of `expr` when DEVICE is "Ascend", following names assigned once in the script; None if unknown."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)

    class Names(dict):
        def __missing__(self, name):
            if name == "DEVICE":
                return "Ascend"
            if len(assigned.get(name, [])) != 1:
                raise NameError(name)
            return eval(compile(ast.Expression(assigned[name][0]), "flag", "eval"), {"__builtins__": {}}, self)

    try:
        return bool(eval(compile(ast.Expression(expr), "flag", "eval"), {"__builtins__": {}}, Names()))
    except Exception:  # noqa: BLE001  (anything but a plain device test is unknown)
        return None


def stand_in_problems(notebook: str, script: str, source: str) -> list[str]:
    tree, where, problems = parse(source), f"{notebook}, {script}", []
    for branch, function, wanted, on_ascend in stand_ins(tree):
        if not wanted & on_ascend:
            real = " or ".join(REAL[f] for f in sorted(wanted))
            problems.append(f"{where}, line {branch.lineno} (in {function}): the CPU side stands in for "
                            f"{' or '.join(sorted(wanted))}, and the Ascend side does not call it. Fix: call the real "
                            f"collective there ({real}).")
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        one_rank = bool(call.args) and isinstance(call.args[0], ast.Constant) and call.args[0].value == 1
        for keyword in call.keywords:
            if keyword.arg in FLAGS and not one_rank and flag_on_ascend(keyword.value, tree) is not True:
                problems.append(f"{where}, line {keyword.value.lineno}: {keyword.arg}={ast.unparse(keyword.value)} is "
                                f"not True when DEVICE is \"Ascend\", so a node would run the CPU stand-in. Fix: pass "
                                f"{keyword.arg}=DEVICE == \"Ascend\".")
    return problems


@pytest.mark.parametrize("key", sorted(SCRIPTS), ids=script_id)
def test_cpu_stand_ins_call_the_real_collective_on_ascend(key):
    problems = stand_in_problems(*key, SCRIPTS[key])
    assert not problems, "\n".join(problems)


def test_the_rule_finds_the_series_stand_ins():
    found = {key for key, source in SCRIPTS.items() if any(stand_ins(parse(source)))}
    assert {("09_memory_per_card.ipynb", "scripts/zero_by_hand.py"),
            ("13_mixture_of_experts.ipynb", "scripts/moe.py")} <= found, found


def test_the_stand_in_guard_reports_an_ascend_branch_without_the_real_collective():
    key = ("09_memory_per_card.ipynb", "scripts/zero_by_hand.py")
    real = "    dist.reduce_scatter_tensor(shard, flat_grad)\n"
    assert real in SCRIPTS[key], "zero_by_hand.py changed: update this demonstration"
    broken = SCRIPTS[key].replace(real, "    dist.all_reduce(flat_grad)\n    shard = flat_grad[LO:HI]\n")
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if 'if DEVICE == "CPU":' in text)
    assert stand_in_problems(*key, broken) == [
        f"09_memory_per_card.ipynb, scripts/zero_by_hand.py, line {line} (in reduce_to_my_shard): the CPU side stands "
        f"in for all_gather or reduce_scatter, and the Ascend side does not call it. Fix: call the real collective "
        f"there ({REAL['all_gather']} or {REAL['reduce_scatter']})."]


def test_the_stand_in_guard_reports_a_flag_that_keeps_ascend_on_the_stand_in():
    key = ("13_mixture_of_experts.ipynb", "scripts/train_moe.py")
    flag = 'native=DEVICE == "Ascend"'
    assert flag in SCRIPTS[key], "train_moe.py changed: update this demonstration"
    broken = SCRIPTS[key].replace(flag, "native=world > 1")
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "native=world > 1" in text)
    assert stand_in_problems(*key, broken) == [
        f"13_mixture_of_experts.ipynb, scripts/train_moe.py, line {line}: native=world > 1 is not True when DEVICE is "
        "\"Ascend\", so a node would run the CPU stand-in. Fix: pass native=DEVICE == \"Ascend\"."]
