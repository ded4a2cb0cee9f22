"""DTensor placements of a MindSpore layout, and back. Introduced in notebook 08.

MindSpore's strategy files describe a sliced tensor by a device matrix and a tensor map (notebook 02):
tensor-map entry m names device-matrix axis m counted from the right, -1 means "not split". DTensor
(PyTorch's `torch.distributed.tensor`, which HyperParallel mirrors) describes it by a DeviceMesh and one
placement per mesh dimension, counted from the left: `Shard(d)` (tensor dimension d is split along this mesh
dimension), `Replicate()` (every rank along it holds the same data) or `Partial()` (every rank holds a
partial sum that an AllReduce along it would complete). The mesh is the device matrix itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.layout import _axes  # the device-matrix axes one tensor-map entry names


@dataclass(frozen=True)
class Shard:
    dim: int

    def __post_init__(self):
        if not isinstance(self.dim, int) or isinstance(self.dim, bool):
            raise TypeError(f"Shard(dim) takes the tensor dimension it splits, an integer; got {self.dim!r}")

    def __str__(self) -> str:
        return f"Shard({self.dim})"


@dataclass(frozen=True)
class Replicate:
    def __str__(self) -> str:
        return "Replicate()"


@dataclass(frozen=True)
class Partial:
    def __str__(self) -> str:
        return "Partial()"


def to_placements(dev_matrix, tensor_map, partial_axes=()) -> tuple:
    """One placement per mesh dimension (left to right) for a tensor placed by `dev_matrix` and `tensor_map`.

    `partial_axes` lists mesh dimensions (from the left) along which the tensor holds partial sums, such as
    a MatMul's output before the AllReduce that a split reduction dimension needs.
    """
    n = len(dev_matrix)
    placements = [Replicate()] * n
    for dim, entry in enumerate(tensor_map):
        mesh_dims = [n - 1 - axis for axis in _axes(entry)]
        if any(not 0 <= m < n for m in mesh_dims):
            raise ValueError(f"tensor-map entry {entry} names an axis outside the device matrix {list(dev_matrix)}")
        if mesh_dims != sorted(mesh_dims):
            raise ValueError(f"tensor-map entry {entry} splits dimension {dim} inner axis first: plain Shard "
                             "placements cannot say that (DTensor shards along mesh dimensions left to right)")
        for m in mesh_dims:
            if placements[m] != Replicate():
                raise ValueError(f"mesh dimension {m} is used twice in tensor map {tuple(tensor_map)}")
            placements[m] = Shard(dim)
    for m in partial_axes:
        if not isinstance(m, int) or not 0 <= m < n:
            raise ValueError(f"partial axis {m!r} is not a mesh dimension of the device matrix {list(dev_matrix)}: "
                             f"give mesh dimensions 0..{n - 1}, counted from the left")
        if placements[m] != Replicate():
            raise ValueError(f"mesh dimension {m} already shards the tensor; it cannot also hold partial sums")
        placements[m] = Partial()
    return tuple(placements)


def to_tensor_map(mesh_shape, placements, ndim: int) -> tuple:
    """The MindSpore tensor map of `placements` on a mesh of `mesh_shape` (Partial placements map to nothing)."""
    n = len(mesh_shape)
    if len(placements) != n:
        raise ValueError(f"{len(placements)} placements for a {n}-dimensional mesh: give one per mesh dimension")
    entries: list[list[int]] = [[] for _ in range(ndim)]
    for m, placement in enumerate(placements):
        if not isinstance(placement, (Shard, Replicate, Partial)):
            raise TypeError(f"placement {placement!r} on mesh dimension {m} is not one of helpers.placements' "
                            "Shard, Replicate or Partial (another library's Shard(0), or a string, would be read "
                            "wrongly): build the placements with these classes")
        if isinstance(placement, Shard):
            if not -ndim <= placement.dim < ndim:
                raise ValueError(f"{placement} on a {ndim}-dimensional tensor")
            entries[placement.dim % ndim].append(n - 1 - m)
    return tuple(-1 if not e else e[0] if len(e) == 1 else tuple(e) for e in entries)


def dtensor_view(dev_matrix, tensor_map, partial_axes=()) -> tuple:
    """(mesh shape, placements) with the mesh dimensions of size 1 left out: a split over one device is no
    split, so the view is the same whichever size-1 axes an operator's device matrix carries."""
    placements = to_placements(dev_matrix, tensor_map, partial_axes)
    kept = [m for m, size in enumerate(dev_matrix) if size > 1]
    return tuple(dev_matrix[m] for m in kept), tuple(placements[m] for m in kept)


def matmul_placements(result) -> dict:
    """{tensor name: (mesh shape, placements)} for a `helpers.layout.matmul_layout` plan. The output is
    given as the local MatMul leaves it: a split reduction dimension shows as Partial() until the AllReduce."""
    reduces = any(c.kind == "AllReduce" for c in result.collectives)
    partial = tuple(m for m, name in enumerate(result.axis_names) if reduces and name.startswith("a1"))
    return {t.name: dtensor_view(t.dev_matrix, t.tensor_map, partial if t.name == "out" else ())
            for t in result.tensors}


def describe(placements) -> str:
    """'(Shard(0), Replicate())', as DTensor prints placements."""
    return "(" + ", ".join(str(p) for p in placements) + ")"
