"""helpers.layout reproduces MindSpore's semi-auto MatMul / element-wise layouts (numpy only, no jobs)."""

import subprocess
import sys

import numpy as np
import pytest

from helpers.layout import (
    StrategyError,
    elementwise_layout,
    elementwise_local,
    matmul_layout,
    partial_products,
    read_strategy_file,
    reassemble,
    tensor_layout,
    write_strategy_file,
)

M, K, N = 16, 32, 8


def shapes(transpose_b):
    return (M, K), ((N, K) if transpose_b else (K, N))


def arrays(transpose_b, seed=0):
    rng = np.random.default_rng(seed)
    a_shape, b_shape = shapes(transpose_b)
    return rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)


# (device_num, strategy, transpose_b): plain, K-split, replicated (product < devices), PCL and transpose_b
VALID = [
    (1, ((1, 1), (1, 1)), False),
    (2, ((2, 1), (1, 1)), False),
    (2, ((1, 2), (2, 1)), False),
    (2, ((1, 1), (1, 2)), False),
    (2, ((1, 1), (1, 1)), False),   # replicated x2
    (2, ((1, 2), (1, 2)), True),
    (4, ((2, 2), (2, 1)), False),
    (4, ((4, 1), (1, 1)), False),
    (4, ((1, 4), (4, 1)), False),
    (4, ((1, 1), (1, 4)), False),
    (4, ((2, 1), (1, 2)), False),
    (4, ((2, 1), (1, 1)), False),   # replicated x2
    (4, ((1, 2), (2, 1)), False),   # replicated x2 with K split
    (4, ((2, 2), (2, 2)), False),   # PCL MatMul
    (4, ((2, 1), (2, 1)), True),
    (8, ((2, 1), (1, 4)), False),
    (8, ((2, 4), (4, 1)), False),
    (8, ((8, 1), (1, 1)), False),
    (8, ((1, 2), (2, 4)), False),
    (8, ((2, 2), (2, 2)), False),
    (8, ((2, 1), (1, 2)), False),   # replicated x2
    (8, ((1, 1), (1, 1)), False),   # replicated x8
    (8, ((4, 2), (2, 1)), False),
    (8, ((1, 8), (8, 1)), False),
    (8, ((2, 4), (2, 4)), False),   # PCL MatMul
    (8, ((2, 2), (2, 2)), True),
    (8, ((1, 2), (2, 2)), True),    # replicated x2
    (8, ((4, 2), (1, 2)), True),
]


@pytest.mark.parametrize("device_num,strategy,transpose_b", VALID)
def test_reassembly_equals_full_matmul(device_num, strategy, transpose_b):
    a_shape, b_shape = shapes(transpose_b)
    plan = matmul_layout(device_num, strategy, a_shape, b_shape, transpose_b=transpose_b)
    A, B = arrays(transpose_b)
    out = reassemble(plan, partial_products(plan, A, B))
    np.testing.assert_allclose(out, A @ (B.T if transpose_b else B), atol=1e-5, rtol=1e-5)
    assert np.prod(plan.dev_matrix) == device_num


def test_brief_example_dev_matrix_and_slices():
    plan = matmul_layout(8, ((2, 1), (1, 4)), (M, K), (K, N))
    assert plan.dev_matrix == (2, 1, 4) and plan.repeated_calc_num == 1
    assert [t.tensor_map for t in plan.tensors] == [(2, 1), (1, 0), (2, 0)]
    assert plan.collectives == ()
    for rank in range(8):  # row-major over [2, 1, 4]: rank = 4 * i + j
        i, j = divmod(rank, 4)
        assert plan.tensor("A").ranges[rank] == ((8 * i, 8 * i + 8), (0, K))
        assert plan.tensor("B").ranges[rank] == ((0, K), (2 * j, 2 * j + 2))
        assert plan.tensor("out").ranges[rank] == ((8 * i, 8 * i + 8), (2 * j, 2 * j + 2))


def test_k_split_gives_allreduce_groups():
    plan = matmul_layout(8, ((2, 4), (4, 1)), (M, K), (K, N))
    assert plan.dev_matrix == (2, 4, 1)
    (allreduce,) = plan.collectives
    assert allreduce.kind == "AllReduce" and allreduce.tensor == "out"
    assert allreduce.groups == ((0, 1, 2, 3), (4, 5, 6, 7))


def test_repeated_dimension_is_appended_last():
    # operator_info.h: repeated_num_in_dev_matrix_right_ = true -> [a0, a1, b1, r], maps shifted by 1
    plan = matmul_layout(8, ((2, 1), (1, 2)), (M, K), (K, N))
    assert plan.dev_matrix == (2, 1, 2, 2) and plan.repeated_calc_num == 2
    assert [t.tensor_map for t in plan.tensors] == [(3, 2), (2, 1), (3, 1)]
    for t in plan.tensors:  # neighbouring ranks are the replicas
        assert all(t.ranges[r] == t.ranges[r + 1] for r in range(0, 8, 2))
    assert plan.tensor("out").holders() == {(0, 0): (0, 1), (0, 1): (2, 3), (1, 0): (4, 5), (1, 1): (6, 7)}
    plan = matmul_layout(8, ((1, 2), (2, 1)), (M, K), (K, N))  # dev [1, 2, 1, 4]
    assert plan.collectives[0].groups == ((0, 4), (1, 5), (2, 6), (3, 7))


def test_transpose_b_maps_and_groups():
    plan = matmul_layout(8, ((2, 2), (2, 2)), (M, K), (N, K), transpose_b=True)
    assert plan.dev_matrix == (2, 2, 2)
    assert plan.tensor("B").tensor_map == (0, 1)
    assert plan.collectives[0].groups == ((0, 2), (1, 3), (4, 6), (5, 7))
    # rank 2 = coords (0, 1, 0): N block 0, K block 1
    assert plan.tensor("B").ranges[2] == ((0, N // 2), (K // 2, K))


def test_pcl_matmul_gathers_inputs_instead_of_allreduce():
    plan = matmul_layout(4, ((2, 2), (2, 2)), (M, K), (K, N))
    assert plan.mode == "pcl" and plan.dev_matrix == (2, 2)
    kinds = {(c.kind, c.tensor): c.groups for c in plan.collectives}
    assert kinds == {("AllGather", "A"): ((0, 1), (2, 3)), ("AllGather", "B"): ((0, 2), (1, 3))}


def test_memory_per_device():
    rows = {r.tensor: r for r in matmul_layout(8, ((2, 1), (1, 4)), (M, K), (K, N)).memory()}
    assert (rows["A"].local_elements, rows["A"].full_elements) == (8 * K, M * K)
    assert rows["A"].local_bytes == 8 * K * 4
    assert rows["B"].local_elements == K * 2 and rows["out"].local_elements == 8 * 2
    half = matmul_layout(8, ((2, 1), (1, 4)), (M, K), (K, N), dtype="float16").memory()[0]
    assert half.local_bytes == 8 * K * 2


@pytest.mark.parametrize("device_num,strategy", [
    (8, ((2, 4),)), (8, ((2, 4), (2, 4))), (8, ((2, 1),)), (4, ((1, 1), (1, 1))), (1, ((1, 1),)),
])
def test_elementwise(device_num, strategy):
    plan = elementwise_layout(device_num, strategy, shape=(M, N), op="Add" if len(strategy) == 2 else "ReLU")
    x, y = arrays(False)[0][:, :N], arrays(False, seed=1)[0][:, :N]
    if len(strategy) == 1:
        out = reassemble(plan, elementwise_local(plan, lambda a: np.maximum(a, 0), x))
        np.testing.assert_array_equal(out, np.maximum(x, 0))
    else:
        np.testing.assert_array_equal(reassemble(plan, elementwise_local(plan, np.add, x, y)), x + y)
    assert plan.collectives == ()


def test_elementwise_replicated_dev_matrix():
    plan = elementwise_layout(8, ((2, 1),), shape=(M, N), op="ReLU")
    assert plan.dev_matrix == (2, 1, 4) and plan.tensor("out").tensor_map == (2, 1)


def test_non_power_of_2_device_count_allows_3():
    plan = matmul_layout(6, ((3, 1), (1, 2)), (12, 16), (16, 8))
    assert plan.dev_matrix == (3, 1, 2)
    A = np.arange(12 * 16, dtype=np.float64).reshape(12, 16)
    B = np.ones((16, 8))
    np.testing.assert_allclose(reassemble(plan, partial_products(plan, A, B)), A @ B)


# (call, reason, a phrase of MindSpore's message)
INVALID = [
    (lambda: matmul_layout(8, ((2, 4), (4, 2)), (M, K), (K, N)), "exceeds_device_num", "it requires 16 devices"),
    (lambda: matmul_layout(2, ((2, 2), (2, 2)), (M, K), (K, N)), "exceeds_device_num", "it requires 8 devices"),
    (lambda: matmul_layout(6, ((2, 2), (2, 1)), (M, K), (K, N)), "device_num_not_divisible",
     "it can not be divisible by 4"),
    (lambda: matmul_layout(8, ((3, 1), (1, 1)), (12, K), (K, N)), "not_power_of_2",
     "must be the power of 2, but get 3"),
    (lambda: matmul_layout(4, ((4, 1), (1, 1)), (10, K), (K, N)), "shape_not_divisible",
     "shape 10 cannot be divisible by strategy value 4"),
    (lambda: matmul_layout(8, ((2, 2), (1, 2)), (M, K), (K, N)), "k_split_mismatch",
     "the shard num of first input's column is 2, but the shard num of second input's row is 1"),
    (lambda: matmul_layout(8, ((1, 2), (2, 1)), (M, K), (N, K), transpose_b=True), "k_split_mismatch",
     "but the shard num of second input's column is 1"),
    (lambda: matmul_layout(8, ((0, 1), (1, 1)), (M, K), (K, N)), "non_positive",
     "must be larger than 0, but get 0"),
    (lambda: matmul_layout(8, ((2,), (1, 1)), (M, K), (K, N)), "wrong_rank",
     "strategy len: 1 is not equal to inputs len: 2, index: 0"),
    (lambda: matmul_layout(8, ((2, 1),), (M, K), (K, N)), "wrong_input_count",
     "strategy size: 1 is not equal to inputs size: 2"),
    (lambda: elementwise_layout(8, ((2, 4), (4, 2))), "elementwise_mismatch", "Invalid strategy."),
]


@pytest.mark.parametrize("call,reason,phrase", INVALID)
def test_invalid_strategies_are_rejected(call, reason, phrase):
    with pytest.raises(StrategyError) as caught:
        call()
    assert caught.value.reason == reason
    assert phrase in str(caught.value) and "fix:" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_imports_have_no_heavy_side_effects():
    code = ("import sys, helpers.layout, helpers.layout_plot; "
            "assert 'mindspore' not in sys.modules and 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_draw_matmul_layout_returns_three_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.layout_plot import draw_matmul_layout

    fig = draw_matmul_layout(matmul_layout(8, ((2, 2), (2, 2)), (M, K), (K, N)))
    assert len(fig.axes) == 3
    plt.close(fig)


def _write_strategy_file(path, layouts):
    """A strategy file in MindSpore's own protobuf schema, as a semi/auto-parallel job saves it."""
    from mindspore.train import node_strategy_pb2

    pb = node_strategy_pb2.ParallelStrategyMap()
    pb.current_stage = 0
    for name, (dev, tmap) in layouts.items():
        item = pb.parallel_layout_item.add()
        item.param_name = name
        item.parallel_layouts.dev_matrix.add().dim.extend(dev)
        item.parallel_layouts.tensor_map.add().dim.extend(tmap)
        item.parallel_layouts.field = 0
        item.parallel_layouts.opt_weight_shard_step = 0
        item.parallel_layouts.opt_weight_shard_size = 0
    path.write_bytes(pb.SerializeToString())


def test_strategy_file_round_trip_matches_the_calculator(tmp_path):
    """Megatron SimpleNet on 8 devices: fc1 ((2, 1), (4, 1)), fc2 ((2, 4), (1, 4)), as notebook 02 predicts."""
    fc1 = matmul_layout(8, ((2, 1), (4, 1)), (256, 32), (64, 32), transpose_b=True)
    fc2 = matmul_layout(8, ((2, 4), (1, 4)), (256, 64), (10, 64), transpose_b=True)
    written = {"fc1.weight": (fc1.dev_matrix, fc1.tensor("B").tensor_map), "fc1.bias": ((2, 4), (0,)),
               "fc2.weight": (fc2.dev_matrix, fc2.tensor("B").tensor_map), "fc2.bias": ((2, 1, 4), (-1,))}
    _write_strategy_file(tmp_path / "strategy.ckpt", written)
    loaded = read_strategy_file(tmp_path / "strategy.ckpt")
    assert loaded == written
    shapes = {"fc1.weight": (64, 32), "fc1.bias": (64,), "fc2.weight": (10, 64), "fc2.bias": (10,)}
    local = {name: tensor_layout(name, shapes[name], *loaded[name]).local_shape for name in shapes}
    assert local == {"fc1.weight": (16, 32), "fc1.bias": (16,), "fc2.weight": (10, 16), "fc2.bias": (10,)}
    assert tensor_layout("fc1.weight", (64, 32), *loaded["fc1.weight"]).slice_of(5) == fc1.tensor("B").slice_of(5)


def test_draw_tensors_draws_vectors_and_matrices():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.layout_plot import draw_tensors

    fig = draw_tensors([tensor_layout("w", (64, 32), (2, 4), (0, -1)), tensor_layout("b", (64,), (2, 4), (0,))], "t")
    assert len(fig.axes) == 2
    plt.close(fig)


def _megatron_layouts(devices, dp, mp, hidden=64):
    """SimpleNet's parameters under notebook 02's Megatron strategies (fc1 by rows, fc2 by columns)."""
    fc1 = matmul_layout(devices, ((dp, 1), (mp, 1)), (32, 32), (hidden, 32), transpose_b=True)
    fc2 = matmul_layout(devices, ((dp, mp), (1, mp)), (32, hidden), (10, hidden), transpose_b=True)
    return {"fc1.weight": fc1.tensor("B"), "fc1.bias": tensor_layout("fc1.bias", (hidden,), fc1.dev_matrix, (0,)),
            "fc2.weight": fc2.tensor("B"), "fc2.bias": tensor_layout("fc2.bias", (10,), fc2.dev_matrix, (-1,)),
            "learning_rate": tensor_layout("learning_rate", (), (devices,), ())}


def test_json_strategy_file_is_mindspores_own_form_and_reads_back(tmp_path):
    layouts = _megatron_layouts(8, 2, 4)
    path = write_strategy_file(tmp_path / "strategy.json", layouts, {"fc1.matmul": ((2, 1), (4, 1))})
    content = __import__("json").loads(path.read_text())
    assert set(content) == {"current_stage", "parallel_strategy_item", "parallel_layout_item"}
    assert content["parallel_strategy_item"]["fc1.matmul"] == {"stage": 0, "parallel_strategy": [[2, 1], [4, 1]]}
    assert set(content["parallel_layout_item"]["fc1.weight"]) == {  # StrategyCheckpointInfo::to_json's fields
        "dev_matrix", "tensor_map", "tensor_shape", "field", "opt_weight_shard_step", "opt_weight_shard_size"}
    loaded = read_strategy_file(path)   # MindSpore's own reader
    assert loaded == {name: (t.dev_matrix, t.tensor_map) for name, t in layouts.items()}
    assert loaded["fc1.weight"] == ((2, 1, 4), (0, 1)) and loaded["fc2.bias"] == ((2, 4, 1), (-1,))


def test_write_strategy_file_refuses_what_mindspore_would_misread(tmp_path):
    layouts = _megatron_layouts(2, 1, 2)
    with pytest.raises(ValueError, match="ends with .json"):
        write_strategy_file(tmp_path / "strategy.ckpt", layouts)   # MindSpore would parse it as protobuf
    two_axes = tensor_layout("w", (8, 8), (2, 2), ((1, 0), -1))
    with pytest.raises(ValueError, match="one device axis"):
        write_strategy_file(tmp_path / "s.json", {"w": two_axes})


@pytest.mark.parametrize("devices, dp, mp", [(2, 1, 2), (4, 2, 2), (8, 2, 4)])
def test_transform_checkpoints_merges_slices_cut_by_the_written_layouts(tmp_path, devices, dp, mp):
    """Slices cut with tensor_layout, merged by MindSpore with our strategy file: the full tensors, bit for bit."""
    import mindspore as ms

    layouts = _megatron_layouts(devices, dp, mp)
    rng = np.random.default_rng(devices)
    full = {n: rng.standard_normal(t.shape).astype(np.float32) for n, t in layouts.items()}
    for rank in range(devices):
        (tmp_path / "src" / f"rank_{rank}").mkdir(parents=True)
        ms.save_checkpoint([{"name": n, "data": ms.Tensor(full[n][t.slice_of(rank)])} for n, t in layouts.items()],
                           str(tmp_path / "src" / f"rank_{rank}" / "net.ckpt"))
    strategy = write_strategy_file(tmp_path / "strategy.json", layouts)
    ms.transform_checkpoints(str(tmp_path / "src"), str(tmp_path / "dst"), "full_", str(strategy), None)
    merged = ms.load_checkpoint(str(tmp_path / "dst" / "rank_0" / "full_0.ckpt"))
    assert all(np.array_equal(merged[n].asnumpy(), full[n]) for n in layouts)


def test_a_layout_object_is_named_not_a_bare_type_error():
    class Layout:  # stands in for mindspore.parallel.Layout: anything that is not tuples of split counts
        pass

    for plan in (lambda: matmul_layout(4, Layout()), lambda: elementwise_layout(4, (Layout(),))):
        with pytest.raises(TypeError, match="give a tuple strategy.*Layout is not modelled"):
            plan()
