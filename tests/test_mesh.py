"""helpers.mesh: coordinates, groups (each rank in exactly one per axis, tensor parallel innermost, pipeline outermost
in Megatron-LM's order), the groups that cross nodes, errors."""

import pytest

from helpers.mesh import MEGATRON_ORDER, Mesh, MeshError, factorizations


@pytest.mark.parametrize("world", [1, 2, 4, 8, 16])
def test_every_factorization_partitions_the_ranks(world):
    layouts = factorizations(world)
    assert all(f["dp"] * f["pp"] * f["tp"] == world for f in layouts)
    assert len({tuple(f.values()) for f in layouts}) == len(layouts)
    for degrees in layouts:
        for order in (None, MEGATRON_ORDER):
            mesh = Mesh(degrees, world, order=order)
            for axis, degree in degrees.items():
                groups = mesh.groups(axis)
                assert sorted(r for g in groups for r in g) == list(range(world)), "each rank in exactly one group"
                assert all(len(g) == degree for g in groups)
            assert [mesh.rank(mesh.coords(r)) for r in range(world)] == list(range(world))


def test_megatron_order_tensor_innermost_pipeline_outermost():
    mesh = Mesh({"dp": 2, "pp": 2, "tp": 2}, order=MEGATRON_ORDER)
    assert mesh.groups("tp") == [(0, 1), (2, 3), (4, 5), (6, 7)]   # consecutive ranks: one node's cards
    assert mesh.groups("dp") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert mesh.groups("pp") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert mesh.coords(6) == {"dp": 1, "pp": 1, "tp": 0}
    for dp, pp, tp in ((2, 2, 4), (4, 2, 1), (1, 8, 2)):   # Megatron-LM: rank = t + d * tp + p * tp * dp
        m = Mesh({"dp": dp, "pp": pp, "tp": tp}, order=MEGATRON_ORDER)
        assert all(m.rank({"dp": d, "pp": p, "tp": t}) == t + d * tp + p * tp * dp
                   for d in range(dp) for p in range(pp) for t in range(tp))
    eight = Mesh({"dp": 2, "pp": 1, "tp": 8}, order=MEGATRON_ORDER)
    assert all(g == tuple(range(g[0], g[0] + 8)) and g[0] % 8 == 0 for g in eight.groups("tp")), "8 cards, 1 node"


def test_the_default_order_is_the_order_of_the_degrees():
    mesh = Mesh({"dp": 2, "pp": 2, "tp": 2})
    assert mesh.order == ("dp", "pp", "tp") and mesh.groups("pp") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert mesh.groups("dp") == [(0, 4), (1, 5), (2, 6), (3, 7)]


def test_which_groups_cross_nodes_on_16_cards():
    """2 x 2 x 4 on two 8-card nodes: in Megatron's order only the pipeline crosses; with dp outermost, dp does."""
    degrees = {"dp": 2, "pp": 2, "tp": 4}
    megatron = Mesh(degrees, 16, order=MEGATRON_ORDER)
    assert [axis for axis in degrees if megatron.crossing(axis, per_node=8)] == ["pp"]
    assert megatron.crossing("pp", per_node=8) == [(t, t + 8) for t in range(8)]
    dp_outside = Mesh(degrees, 16, order=("dp", "pp", "tp"))
    assert [axis for axis in degrees if dp_outside.crossing(axis, per_node=8)] == ["dp"]


def test_bad_meshes_are_named():
    with pytest.raises(MeshError, match=r"dp 2 x pp 2 x tp 3 = 12 ranks, but the job has 8: .*2 x 2 x 2"):
        Mesh({"dp": 2, "pp": 2, "tp": 3}, world=8)
    with pytest.raises(MeshError, match="tp: a degree is a positive whole number, got 0"):
        Mesh({"dp": 8, "tp": 0})
    with pytest.raises(MeshError, match="'ep' is not an axis"):
        Mesh({"dp": 2, "tp": 2}).group_of(0, "ep")
    with pytest.raises(MeshError, match="must name each axis"):
        Mesh({"dp": 2, "tp": 2}, order=("tp", "pp"))
    with pytest.raises(MeshError, match="rank 4 is not in a mesh of 4 ranks"):
        Mesh({"dp": 2, "tp": 2}).coords(4)
