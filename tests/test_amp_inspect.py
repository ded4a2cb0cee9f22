"""helpers.amp_inspect: float16 numerics, AMP graph inspection, gradients under loss scaling (notebook 05).

Everything runs in this process on CPU (a few graph compilations, ~10 s in all).
"""

import os

import numpy as np
import pytest

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


@pytest.fixture(scope="module")
def batch(ms):
    from helpers.data import make_arrays

    data, label = make_arrays(32, seed=3)
    return ms.Tensor(data), ms.Tensor(label)


@pytest.fixture(scope="module")
def loss_fn(ms):
    from mindspore import nn

    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def fresh_simple_net(ms):
    from helpers.nets import SimpleNet

    ms.set_seed(0)
    return SimpleNet()


def test_float16_limits_and_fates():
    limits = ai.limits("float16")
    assert limits["max"] == 65504.0 and limits["smallest_normal"] == 2.0 ** -14
    assert limits["smallest_subnormal"] == 2.0 ** -24 and limits["eps"] == 2.0 ** -10
    fates = [row["fate"] for row in ai.precision_fate([1.0, 0.1, 1e-5, 1e-8, 7e4])]
    assert fates == ["exact", "rounded", "subnormal (precision lost)", "underflow -> 0", "overflow -> inf"]
    scaled = ai.round_trip(np.float32(1e-8) * 1024, "float16") / 1024
    assert abs(scaled - 1e-8) / 1e-8 < 0.05


def test_bfloat16_keeps_the_range(ms):
    rows = ai.precision_fate([1e-8, 7e4, 1e30], "bfloat16")
    assert [row["fate"] for row in rows] == ["rounded"] * 3
    assert all(row["relative_error"] < ai.limits("bfloat16")["eps"] for row in rows)


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
        report = ai.inspect_graph(ai.convert(ai.NormNet(), level).set_train(True), x)
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


def test_gradient_probe_underflow_and_overflow(ms, batch, loss_fn):
    x, y = batch
    reference = ai.GradientProbe(fresh_simple_net(ms), loss_fn)
    same = ai.GradientProbe(fresh_simple_net(ms), loss_fn)
    half = ai.GradientProbe(ai.convert(fresh_simple_net(ms), "O2"), loss_fn)
    ref = reference(x, y)
    assert ai.gradient_fate(ref, same(x, y, 1024.0)) == {"finite": True, "zero_fraction": 0.0, "relative_error": 0.0}
    small_ref = reference(x, y, 1.0, 1e-5)
    unscaled = ai.gradient_fate(small_ref, half(x, y, 1.0, 1e-5))
    scaled = ai.gradient_fate(small_ref, half(x, y, 1024.0, 1e-5))
    assert set(half.dtypes) == {"Float32"}, "gradients of float32 parameters are float32"
    assert unscaled["zero_fraction"] > 0.05 and unscaled["relative_error"] > 0.1
    assert scaled["finite"] and scaled["relative_error"] < 0.01
    assert not ai.gradient_fate(ref, half(x, y, 2.0 ** 24))["finite"]


def test_model_wrappers_and_level_defaults(ms, loss_fn):
    from mindspore import nn

    defaults = ai.level_defaults()
    assert set(defaults) == set(ai.LEVELS)
    assert defaults["O2"] == {"cast_model_type": "Float16", "keep_batchnorm_fp32": True,
                              "loss_scale_manager": "DynamicLossScaleManager"}
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


def test_snapshot_and_max_change(ms):
    net = fresh_simple_net(ms)
    before = ai.snapshot(net)
    assert ai.max_change(before, net) == 0.0
    weight = net.trainable_params()[0]
    weight.set_data(ms.Tensor(weight.asnumpy() + 0.5))
    assert ai.max_change(before, net) == pytest.approx(0.5)


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
