"""helpers.placements: MindSpore layouts (device matrix, tensor map) as DTensor placements, and back."""

import itertools

import pytest

from helpers.layout import matmul_layout
from helpers.placements import (
    Partial,
    Replicate,
    Shard,
    describe,
    dtensor_view,
    matmul_placements,
    to_placements,
    to_tensor_map,
)


def test_megatron_split_reads_as_colwise_then_rowwise():
    fc1 = matmul_placements(matmul_layout(8, ((2, 1), (4, 1)), (256, 32), (64, 32), transpose_b=True))
    fc2 = matmul_placements(matmul_layout(8, ((2, 4), (1, 4)), (256, 64), (10, 64), transpose_b=True))
    assert fc1["B"] == ((2, 4), (Replicate(), Shard(0)))      # ColwiseParallel: the weight's output rows split
    assert fc1["out"] == ((2, 4), (Shard(0), Shard(1)))       # the hidden activation, split on both mesh dims
    assert fc2["A"] == fc1["out"], "fc2 reads the hidden activation as fc1 left it: no redistribution"
    assert fc2["B"] == ((2, 4), (Replicate(), Shard(1)))      # RowwiseParallel: the weight's input columns split
    assert fc2["out"] == ((2, 4), (Shard(0), Partial()))      # partial sums until the AllReduce
    assert describe(fc2["out"][1]) == "(Shard(0), Partial())"


def test_data_parallel_and_pure_replication():
    dp = matmul_placements(matmul_layout(8, ((8, 1), (1, 1)), (256, 32), (64, 32), transpose_b=True))
    assert dp["A"] == ((8,), (Shard(0),)) and dp["B"] == ((8,), (Replicate(),))
    alone = matmul_placements(matmul_layout(8, ((1, 1), (1, 1)), (16, 16), (16, 16)))
    assert all(view == ((8,), (Replicate(),)) for view in alone.values()), "the repeat axis replicates"


@pytest.mark.parametrize("a0, a1, n", [(a0, a1, n) for a0, a1, n in itertools.product((1, 2, 4), (1, 2, 4), (1, 2, 4))
                                       if a0 * a1 * n <= 8])
def test_round_trip_for_every_matmul_strategy(a0, a1, n):
    plan = matmul_layout(8, ((a0, a1), (n, a1)), (64, 64), (64, 64), transpose_b=True)
    for t in plan.tensors:
        placements = to_placements(t.dev_matrix, t.tensor_map)
        assert to_tensor_map(t.dev_matrix, placements, len(t.shape)) == t.tensor_map
        for m, placement in enumerate(placements):   # a Shard placement splits exactly its mesh dimension
            if isinstance(placement, Shard):
                assert t.splits[placement.dim] % t.dev_matrix[m] == 0


def test_two_axes_on_one_dimension():
    assert to_placements((2, 4), ((1, 0), -1)) == (Shard(0), Shard(0))
    assert to_tensor_map((2, 4), (Shard(0), Shard(0)), 2) == ((1, 0), -1)
    with pytest.raises(ValueError, match="inner axis first"):
        to_placements((2, 4), ((0, 1), -1))


def test_bad_layouts_are_named():
    with pytest.raises(ValueError, match="outside the device matrix"):
        to_placements((2, 4), (2, -1))
    with pytest.raises(ValueError, match="cannot also hold partial sums"):
        to_placements((2, 4), (1, -1), partial_axes=(0,))
    with pytest.raises(ValueError, match="one per mesh dimension"):
        to_tensor_map((2, 4), (Shard(0),), 2)
    with pytest.raises(ValueError, match="2-dimensional tensor"):
        to_tensor_map((8,), (Shard(2),), 2)
    assert dtensor_view((1, 8), (-1, 0)) == ((8,), (Shard(1),))


def test_placements_of_other_kinds_are_refused_not_read_as_replicate():
    class ForeignShard:   # another library's Shard(0): same name, another class
        dim = 0

    for foreign in (ForeignShard(), "S(0)", None):
        with pytest.raises(TypeError, match="not one of helpers.placements' Shard, Replicate or Partial"):
            to_tensor_map((2, 4), (foreign, Replicate()), 2)
    with pytest.raises(TypeError, match="an integer; got 1.0"):
        Shard(1.0)
    with pytest.raises(TypeError, match="an integer; got True"):
        Shard(True)
    for axis in (2, -1, 0.5):
        with pytest.raises(ValueError, match="is not a mesh dimension of the device matrix"):
            to_placements((2, 4), (-1, -1), partial_axes=(axis,))
