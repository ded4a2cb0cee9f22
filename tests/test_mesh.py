"""helpers.mesh: coordinates, groups (each rank in exactly one per axis, tensor parallel innermost), errors."""

import pytest

from helpers.mesh import Mesh, MeshError, factorizations


@pytest.mark.parametrize("world", [1, 2, 4, 8, 16])
def test_every_factorization_partitions_the_ranks(world):
    layouts = factorizations(world)
    assert all(f["dp"] * f["pp"] * f["tp"] == world for f in layouts)
    assert len({tuple(f.values()) for f in layouts}) == len(layouts)
    for degrees in layouts:
        mesh = Mesh(degrees, world)
        for axis, degree in degrees.items():
            groups = mesh.groups(axis)
            assert sorted(r for g in groups for r in g) == list(range(world)), "each rank in exactly one group"
            assert all(len(g) == degree for g in groups)
        assert [mesh.rank(mesh.coords(r)) for r in range(world)] == list(range(world))


def test_tensor_parallel_is_innermost():
    mesh = Mesh({"dp": 2, "pp": 2, "tp": 2})
    assert mesh.groups("tp") == [(0, 1), (2, 3), (4, 5), (6, 7)]   # consecutive ranks: one node's cards
    assert mesh.groups("pp") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert mesh.groups("dp") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert mesh.coords(6) == {"dp": 1, "pp": 1, "tp": 0}
    eight = Mesh({"dp": 2, "pp": 1, "tp": 8})
    assert all(g == tuple(range(g[0], g[0] + 8)) and g[0] % 8 == 0 for g in eight.groups("tp")), "8 cards, 1 node"


def test_bad_meshes_are_named():
    with pytest.raises(MeshError, match=r"dp 2 x pp 2 x tp 3 = 12 ranks, but the job has 8: .*2 x 2 x 2"):
        Mesh({"dp": 2, "pp": 2, "tp": 3}, world=8)
    with pytest.raises(MeshError, match="tp: a degree is a positive whole number, got 0"):
        Mesh({"dp": 8, "tp": 0})
    with pytest.raises(MeshError, match="'ep' is not an axis"):
        Mesh({"dp": 2, "tp": 2}).group_of(0, "ep")
    with pytest.raises(MeshError, match="rank 4 is not in a mesh of 4 ranks"):
        Mesh({"dp": 2, "tp": 2}).coords(4)
