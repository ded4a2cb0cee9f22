"""helpers.parallel_modes and the semi/auto options of helpers.train: refusal on CPU, strategies, strategy files."""

import json
import math
import os
import sys

import pytest

from helpers import launch
from helpers.layout import matmul_layout
from helpers.parallel_modes import (
    AUTOPARALLEL_MODES,
    MINDSPORE_CPU_ERROR,
    PARAM_SHAPES,
    SEARCH_MODES,
    STRATEGIES,
    ParallelModeUnavailable,
    anchor_strategies,
    apply_strategies,
    autoparallel_mode,
    candidate_strategies,
    check_supported,
    compare_modes,
    configure_network,
    context_kwargs,
    draw_strategy,
    format_rows,
    load_strategy_file,
    mode_costs,
    parameter_layouts,
    simple_net_strategies,
    split_sizes,
    strategy_local_shapes,
    strategy_plans,
)
from helpers.train import parse_args

FULL_PARAM_BYTES = (64 * 32 + 64 + 10 * 64 + 10) * 4


# ---------------------------------------------------------------- refusing on CPU


@pytest.mark.parametrize("mode", ["semi_auto_parallel", "auto_parallel"])
def test_cpu_refuses_semi_and_auto_naming_the_limit(mode):
    with pytest.raises(ParallelModeUnavailable) as info:
        check_supported(mode, "CPU")
    message = str(info.value)
    assert mode in message and "needs Ascend" in message and MINDSPORE_CPU_ERROR in message
    assert "data_parallel" in message, "the message says what to do instead"


def test_what_each_device_may_run():
    check_supported("data_parallel", "CPU")
    for mode in ("data_parallel", "semi_auto_parallel", "auto_parallel"):
        check_supported(mode, "Ascend")
    with pytest.raises(ValueError, match="unknown parallel mode"):
        check_supported("model_parallel", "Ascend")


def test_train_check_refuses_on_cpu_without_a_usage_dump(capsys):
    with pytest.raises(SystemExit) as info:
        parse_args(["--parallel-mode", "semi_auto_parallel"], device="CPU")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "needs Ascend" in err and "usage:" not in err


def test_train_accepts_semi_and_auto_on_ascend():
    args = parse_args(["--parallel-mode", "auto_parallel"], device="Ascend")
    assert args.search_mode == "recursive_programming", "MindSpore's 2.10 default"
    args = parse_args(["--parallel-mode", "auto_parallel", "--search-mode", "sharding_propagation", "--api",
                       "autoparallel"], device="Ascend")
    assert (args.search_mode, args.api) == ("sharding_propagation", "autoparallel")
    args = parse_args(["--parallel-mode", "semi_auto_parallel", "--strategy", "model_parallel"], device="Ascend")
    assert args.strategy == "model_parallel" and args.search_mode is None


@pytest.mark.parametrize("argv, message", [
    (["--search-mode", "sharding_propagation"], "only works with --parallel-mode auto_parallel"),
    (["--parallel-mode", "semi_auto_parallel", "--search-mode", "recursive_programming"], "only works with"),
    (["--parallel-mode", "auto_parallel", "--search-mode", "dynamic_programming", "--api", "autoparallel"],
     "exists only in set_auto_parallel_context"),
    (["--parallel-mode", "semi_auto_parallel", "--net", "mlp"], "written for SimpleNet"),
    (["--api", "autoparallel"], "no data_parallel mode"),
])
def test_train_rejects_inconsistent_options(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv, device="Ascend")
    assert message in capsys.readouterr().err


def test_train_defaults_are_unchanged():
    args = parse_args([], device="CPU")
    assert (args.parallel_mode, args.search_mode, args.api, args.gradients_mean) == ("data_parallel", None,
                                                                                    "context", True)


def test_launcher_refuses_within_seconds(tmp_path):
    result = launch("--parallel-mode", "auto_parallel", "--search-mode", "sharding_propagation", device="CPU",
                    name="test-refuse", quiet=True, env={"TUTORIAL_RUNS_DIR": str(tmp_path)})
    assert not result.ok and result.wall_time < 20
    assert "needs Ascend" in result.output and "nothing was started" in result.output
    assert not list(tmp_path.glob("*/worker_*.log")), "no worker started"


# ---------------------------------------------------------------- the two APIs


def test_autoparallel_mode_mapping():
    assert autoparallel_mode("semi_auto_parallel", None) == "semi_auto"
    assert autoparallel_mode("auto_parallel", None) == "recursive_programming"
    assert autoparallel_mode("auto_parallel", "sharding_propagation") == "sharding_propagation"
    with pytest.raises(ValueError, match="Not recommended"):
        autoparallel_mode("auto_parallel", "dynamic_programming")
    with pytest.raises(ValueError):
        autoparallel_mode("data_parallel", None)
    assert set(AUTOPARALLEL_MODES) < set(SEARCH_MODES) | {"semi_auto"}


def test_autoparallel_modes_match_the_installed_mindspore():
    from mindspore.parallel.auto_parallel import AutoParallel

    from helpers.nets import SimpleNet

    for mode in AUTOPARALLEL_MODES:
        AutoParallel(SimpleNet(), parallel_mode=mode)
    with pytest.raises(ValueError):
        AutoParallel(SimpleNet(), parallel_mode="dynamic_programming")


def test_context_kwargs():
    assert context_kwargs("auto_parallel") == {"parallel_mode": "auto_parallel", "gradients_mean": True,
                                               "search_mode": "recursive_programming"}
    kwargs = context_kwargs("semi_auto_parallel", gradients_mean=False, strategy_file="/x/strategy.ckpt")
    assert kwargs["strategy_ckpt_config"] == {"save_file": "/x/strategy.ckpt", "only_trainable_params": True}
    assert "device_num" not in kwargs and "search_mode" not in kwargs
    with pytest.raises(ValueError):
        context_kwargs("semi_auto_parallel", "sharding_propagation")


def test_configure_network_context_api_sets_mindspores_context(tmp_path):
    import mindspore as ms

    from helpers.nets import SimpleNet

    net = SimpleNet()
    try:
        out = configure_network(net, "semi_auto_parallel", api="context", strategy="megatron",
                                strategy_file=str(tmp_path / "s.ckpt"), device_num=8)
        assert out is net
        assert ms.get_auto_parallel_context("parallel_mode") == "semi_auto_parallel"
        assert ms.get_auto_parallel_context("gradients_mean") is True
        assert ms.get_auto_parallel_context("strategy_ckpt_config")["save_file"] == str(tmp_path / "s.ckpt")
        assert net.fc1.matmul.attrs["in_strategy"] == ((2, 1), (4, 1))
        assert net.fc2.matmul.attrs["in_strategy"] == ((2, 4), (1, 4))
    finally:
        ms.reset_auto_parallel_context()


def test_configure_network_autoparallel_api():
    from mindspore.parallel.auto_parallel import AutoParallel

    from helpers.nets import SimpleNet

    net = SimpleNet()
    wrapped = configure_network(net, "auto_parallel", "sharding_propagation", api="autoparallel",
                                strategy_file="/tmp/x.ckpt", device_num=8)
    assert isinstance(wrapped, AutoParallel) and wrapped.network is net
    assert wrapped._parallel_mode == "sharding_propagation" and wrapped._gradients_mean
    assert wrapped._save_strategy_file_path == "/tmp/x.ckpt"
    assert net.fc1.matmul.attrs["in_strategy"] == ((2, 1), (4, 1)), "fc1 is the propagation anchor"
    assert "in_strategy" not in net.fc2.matmul.attrs
    plain = configure_network(SimpleNet(), "auto_parallel", "recursive_programming", api="autoparallel", device_num=8)
    assert plain._parallel_mode == "recursive_programming"


# ---------------------------------------------------------------- strategies and the table


@pytest.mark.parametrize("devices", [1, 2, 4, 8])
@pytest.mark.parametrize("name", STRATEGIES)
def test_every_preset_is_a_valid_strategy(devices, name):
    dp, mp = split_sizes(devices, name)
    assert dp * mp == devices
    plans = strategy_plans(devices, name, batch=32 * devices)
    assert plans["fc1"].repeated_calc_num == 1 and plans["fc2"].repeated_calc_num == 1, "every device is used"


def test_megatron_split_sizes():
    assert split_sizes(8, "megatron") == (2, 4)
    assert split_sizes(2, "megatron") == (1, 2)
    assert split_sizes(4, "megatron") == (1, 4)
    assert anchor_strategies(8) == {"fc1.matmul": ((2, 1), (4, 1))}
    with pytest.raises(ValueError):
        split_sizes(8, "pipeline")


def test_parameter_layouts_and_costs_at_8_devices():
    layouts = parameter_layouts(8, "megatron")
    assert layouts == {"fc1.weight": ((16, 32), 2), "fc1.bias": ((16,), 2), "fc2.weight": ((10, 16), 2),
                       "fc2.bias": ((10,), 8)}
    assert mode_costs(8, "data_parallel")["param_bytes"] == FULL_PARAM_BYTES
    assert mode_costs(8, "megatron")["param_bytes"] == (512 + 16 + 160 + 10) * 4
    costs = mode_costs(8, "model_parallel", batch=256)
    assert costs["forward"] == [{"layer": "fc2", "kind": "AllReduce", "group": 8, "elements": 2560}]
    assert costs["gradient_sync"] == [{"param": "fc2.bias", "group": 8, "elements": 10}]


def test_compare_modes_table():
    rows = compare_modes(8, 256)
    assert [r.param_bytes for r in rows[:4]] == [FULL_PARAM_BYTES, FULL_PARAM_BYTES, 2792, 1416]
    assert rows[0].forward == "none" and "groups of 8" in rows[0].gradient_sync
    assert all(r.mode.startswith("AUTO") and "candidate" in r.param_bytes for r in rows[4:])
    assert "only redistribution-free candidate" in rows[4].param_bytes, "the fc1 anchor leaves one choice for fc2"
    text = format_rows(rows)
    assert text.count("\n") == len(rows) + 1 and "dynamic_programming" in text


def test_candidate_space_holds_the_presets_and_only_valid_pairs():
    space = candidate_strategies(8, 256)
    for name in STRATEGIES:
        s = simple_net_strategies(8, name)
        assert any(c["fc1"] == s["fc1.matmul"] and c["fc2"] == s["fc2.matmul"] for c in space), name
    for c in space:
        matmul_layout(8, c["fc1"], (256, 32), (64, 32), transpose_b=True)
        matmul_layout(8, c["fc2"], (256, 64), (10, 64), transpose_b=True)
        assert c["fc2"][0] == (c["fc1"][0][0], c["fc1"][1][0]), "fc2's input is split as fc1's output"


def test_apply_strategies_on_real_primitives():
    from helpers.nets import SimpleNet

    strategies = simple_net_strategies(8)
    net = apply_strategies(SimpleNet(), strategies)
    for path, strategy in strategies.items():
        layer, op = path.split(".")
        assert getattr(getattr(net, layer), op).attrs["in_strategy"] == strategy


# ---------------------------------------------------------------- strategy files


def _write_protobuf_strategy(path, devices=8, name="megatron", prefix=""):
    """A strategy file in MindSpore's own protobuf schema, holding the calculator's layouts."""
    from mindspore.train import node_strategy_pb2

    plans = strategy_plans(devices, name)
    strategies = simple_net_strategies(devices, name)
    layouts = {"fc1.weight": (plans["fc1"].dev_matrix, plans["fc1"].tensor("B").tensor_map),
               "fc2.weight": (plans["fc2"].dev_matrix, plans["fc2"].tensor("B").tensor_map)}
    for layer in ("fc1", "fc2"):
        dev = strategies[f"{layer}.bias_add"][0]
        layouts[f"{layer}.bias"] = (dev, (0,) if strategies[f"{layer}.bias_add"][1][0] > 1 else (-1,))
    pb = node_strategy_pb2.ParallelStrategyMap()
    pb.current_stage = 0
    for param, (dev, tmap) in layouts.items():
        item = pb.parallel_layout_item.add()
        item.param_name = prefix + param
        item.parallel_layouts.dev_matrix.add().dim.extend(dev)
        item.parallel_layouts.tensor_map.add().dim.extend(tmap)
        item.parallel_layouts.field = 0
        item.parallel_layouts.opt_weight_shard_step = 0
        item.parallel_layouts.opt_weight_shard_size = 0
    path.write_bytes(pb.SerializeToString())
    return layouts


@pytest.mark.parametrize("prefix", ["", "network."])
def test_strategy_file_round_trip_and_drawing(tmp_path, prefix):
    path = tmp_path / "strategy.ckpt"
    written = _write_protobuf_strategy(path, prefix=prefix)
    loaded = load_strategy_file(path)
    assert {k.removeprefix(prefix): (v["dev_matrix"], v["tensor_map"]) for k, v in loaded.items()} == written
    predicted = {k: shape for k, (shape, _) in parameter_layouts(8, "megatron").items()}
    assert strategy_local_shapes(loaded) == predicted
    fig = draw_strategy(loaded, title="test")
    assert len(fig.axes) == len(PARAM_SHAPES)


def test_strategy_file_json_form(tmp_path):
    path = tmp_path / "strategy.json"
    path.write_text(json.dumps({"parallel_layout_item": {
        "fc1.weight": {"dev_matrix": [2, 1, 4], "tensor_map": [0, 1], "field": 0, "opt_weight_shard_size": 0,
                       "opt_weight_shard_step": 0}}}))
    loaded = load_strategy_file(path)
    assert loaded == {"fc1.weight": {"dev_matrix": (2, 1, 4), "tensor_map": (0, 1)}}
    assert strategy_local_shapes(loaded) == {"fc1.weight": (16, 32)}
    with pytest.raises(ValueError, match="none of"):
        draw_strategy({"other": loaded["fc1.weight"]})


def test_module_is_cheap_to_import():
    code = "import sys, helpers.parallel_modes; assert 'mindspore' not in sys.modules; print('ok')"
    out = os.popen(f"{sys.executable} -c \"{code}\"").read()
    assert out.strip() == "ok"
    assert math.prod(PARAM_SHAPES["fc1.weight"]) == 2048
