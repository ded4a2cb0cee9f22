"""helpers.amp_inspect: AMP graph inspection and what Model built (notebook 05's plumbing).

Everything runs in this process on CPU (a few graph compilations, ~10 s in all). The networks are
defined here, as notebook 05 defines its own.
"""

import os

import numpy as np
import pytest
from mindspore import nn

from helpers import amp_inspect as ai
from helpers.launcher import RunResult


@pytest.fixture(scope="module")
def ms():
    import mindspore

    mindspore.set_context(mode=mindspore.GRAPH_MODE)
    try:
        mindspore.set_device("CPU")
    except RuntimeError:  # the device can only be chosen once per process
        pass
    return mindspore


class SimpleNet(nn.Cell):
    """The article's network: Dense(32, 64) -> ReLU -> Dense(64, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(64, 10)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class NormNet(SimpleNet):
    """SimpleNet with a BatchNorm1d after the first layer."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(64)

    def construct(self, x):
        return self.fc2(self.relu(self.bn(self.fc1(x))))


@pytest.fixture(scope="module")
def batch(ms):
    rng = np.random.default_rng(3)
    data, label = rng.standard_normal((32, 32)).astype(np.float32), rng.integers(0, 10, 32).astype(np.int32)
    return ms.Tensor(data), ms.Tensor(label)


@pytest.fixture(scope="module")
def loss_fn(ms):
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def fresh_simple_net(ms):
    ms.set_seed(0)
    return SimpleNet()


def test_inspect_graph_reads_front_end_and_kernel_dtypes(ms, batch):
    x, _ = batch
    fp32 = ai.inspect_graph(ai.convert(fresh_simple_net(ms), "O0"), x)
    assert fp32.dtypes("MatMul") == {"Float32"} and fp32.amp_casts == 0 and fp32.backend_casts == 0
    o2_net = ai.convert(fresh_simple_net(ms), "O2")
    o2 = ai.inspect_graph(o2_net, x)
    assert [r.op for r in o2.ops] == ["MatMul", "BiasAdd", "ReLU", "MatMul", "BiasAdd"]
    assert o2.dtypes("MatMul") == o2.dtypes("ReLU") == {"Float16"}
    assert o2.output_dtype == "Float32" and set(ai.parameter_dtypes(o2_net).values()) == {"Float32"}
    assert o2.ops[0].cell == "fc1 (Dense)"
    # MindSpore's CPU backend has no float16 MatMul: it runs float32 kernels behind added casts.
    assert o2.kernel_dtypes("MatMul") == {"Float32"} and o2.backend_casts > 0
    assert "graph asks" in o2.table() and "fc2 (Dense)" in o2.table()
    auto = ai.inspect_graph(ai.convert(fresh_simple_net(ms), "auto"), x)
    assert auto.dtypes("MatMul") == {"Float16"} and auto.dtypes("BiasAdd") == {"Float32"}


def test_inspect_graph_refuses_a_cached_graph(ms, batch):
    x, _ = batch
    net = fresh_simple_net(ms)
    net(x)  # compiled once already: a second compile of the same inputs writes no IR
    with pytest.raises(RuntimeError, match="freshly built network"):
        ai.inspect_graph(net, x)


def test_o2_black_list_keeps_batchnorm_in_float32(ms, batch):
    x, _ = batch
    inputs = {}
    for level in ("O2", "O3"):
        ms.set_seed(0)
        report = ai.inspect_graph(ai.convert(NormNet(), level).set_train(True), x)
        inputs[level] = next(r.graph_in[0] for r in report.ops if r.op == "BatchNorm")
    assert inputs == {"O2": "Float32", "O3": "Float16"}


def test_o1_rewrite_goes_to_the_workdir_not_the_cwd(ms, batch, tmp_path, monkeypatch):
    x, _ = batch
    cwd, workdir = tmp_path / "cwd", tmp_path / "scratch"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    net = ai.convert(fresh_simple_net(ms), "O1", workdir=workdir)
    assert os.getcwd() == str(cwd), "the working directory is restored"
    assert not (cwd / "rewritten_network").exists() and list((workdir / "rewritten_network").glob("*.py"))
    assert "amp_cast(" in ai.rewritten_source(workdir)
    assert ai.inspect_graph(net, x).dtypes("BiasAdd") == {"Float16"}
    assert ai.rewritten_source(tmp_path / "nothing") == ""


def test_model_wrappers(ms, loss_fn):
    net = fresh_simple_net(ms)
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9, loss_scale=1024.0)
    model = ms.Model(net, loss_fn, optimizer, amp_level="O2",
                     loss_scale_manager=ms.FixedLossScaleManager(1024.0, drop_overflow_update=False))
    assert ai.describe_train_network(model) == {"wrapper": "TrainOneStepCell", "loss_cell": "WithLossCell",
                                                "loss_scale": 1024.0, "scale_update": "none (fixed)",
                                                "optimizer_divides_by": 1024.0}
    assert [r["to_float"] for r in ai.cell_precisions(net)] == ["fp16"] * 4, "Model converted net in place"
    with pytest.raises(ValueError, match="are supported on device `CPU`"):
        ms.Model(fresh_simple_net(ms), loss_fn, nn.Momentum(net.trainable_params(), 0.01, 0.9), amp_level="O2")


def test_in_directory_restores_cwd_on_error(tmp_path):
    start = os.getcwd()
    with pytest.raises(ZeroDivisionError), ai.in_directory(tmp_path / "new"):
        assert os.getcwd() == str(tmp_path / "new")
        _ = 1 / 0
    assert os.getcwd() == start


def test_step_seconds_leaves_out_compilation(tmp_path):
    steps = [{"kind": "step", "step": i + 1, "time": t} for i, t in enumerate([5.0, 6.0, 7.5, 8.5])]
    result = RunResult(returncode=0, wall_time=1.0, run_dir=tmp_path, command=[], metrics={0: steps})
    assert ai.step_seconds(result, 0) == [1.0, 1.5, 1.0]
    assert ai.step_seconds(result, 0, skip=2) == [1.5, 1.0]


def test_in_directory_lends_inspect_a_notebook_cell(tmp_path, monkeypatch):
    """A class defined in a notebook cell: __main__ has no __file__, the cell's source is only in linecache."""
    import inspect
    import linecache
    import sys
    import types

    cell_file = str(tmp_path / "ipykernel_1" / "123.py")   # never written, like IPython's cells
    source = "class CellNet:\n    def construct(self, x):\n        return x\n"
    linecache.cache[cell_file] = (len(source), None, source.splitlines(True), cell_file)
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    namespace = {"__name__": "__main__"}
    exec(compile(source, cell_file, "exec"), namespace)
    cell_net = namespace["CellNet"]
    with pytest.raises(OSError):
        inspect.getsource(cell_net)
    with ai.in_directory(tmp_path / "scratch", cell_net):
        assert inspect.getsource(cell_net) == source
    assert not hasattr(main, "__file__"), "__main__ is left as it was"
    linecache.cache.pop(cell_file, None)
