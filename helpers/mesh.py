"""A device mesh: the job's ranks arranged on named axes (dp, pp, tp, ...), the last axis innermost. The planner's
--search (helpers.memory, notebook 09) walks its factorizations; a 3D-parallel job builds its groups from it.

With tensor parallel last, a tensor-parallel group is tp consecutive ranks: the cards of one node, joined by
its fastest links, as Megatron-LM orders its groups (tensor parallel varies fastest). Each group is a list of
ranks to pass to `mindspore.communication.create_group(name, ranks)` on every rank of that group.

    >>> m = Mesh({"dp": 2, "pp": 2, "tp": 2})
    >>> m.coords(5)
    {'dp': 1, 'pp': 0, 'tp': 1}
    >>> m.group_of(5, "tp"), m.group_of(5, "pp"), m.group_of(5, "dp")
    ((4, 5), (5, 7), (1, 5))
"""

from __future__ import annotations

import math


class MeshError(ValueError):
    """A mesh that does not fit the job; the message says which degrees and how to fix them."""


def factorizations(world: int, axes: tuple[str, ...] = ("dp", "pp", "tp")) -> list[dict[str, int]]:
    """Every way to write `world` as a product of one degree per axis, in order."""
    if len(axes) == 1:
        return [{axes[0]: world}]
    return [{axes[0]: d, **rest} for d in range(1, world + 1) if world % d == 0
            for rest in factorizations(world // d, axes[1:])]


class Mesh:
    def __init__(self, degrees: dict[str, int], world: int | None = None):
        for axis, degree in degrees.items():
            if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
                raise MeshError(f"{axis}: a degree is a positive whole number, got {degree!r}")
        self.degrees = dict(degrees)
        self.axes = tuple(degrees)
        self.size = math.prod(degrees.values())
        if world is not None and world != self.size:
            product = " x ".join(f"{a} {d}" for a, d in degrees.items())
            options = ", ".join(" x ".join(str(v) for v in f.values()) for f in factorizations(world, self.axes))
            raise MeshError(f"{product} = {self.size} ranks, but the job has {world}: the degrees must multiply to "
                            f"{world} ({' x '.join(self.axes)}: {options})")

    def coords(self, rank: int) -> dict[str, int]:
        """Where `rank` sits on each axis (the last axis varies fastest)."""
        if not 0 <= rank < self.size:
            raise MeshError(f"rank {rank} is not in a mesh of {self.size} ranks")
        out = {}
        for axis in reversed(self.axes):
            rank, out[axis] = divmod(rank, self.degrees[axis])
        return {axis: out[axis] for axis in self.axes}

    def rank(self, coords: dict[str, int]) -> int:
        rank = 0
        for axis in self.axes:
            rank = rank * self.degrees[axis] + coords[axis]
        return rank

    def group_of(self, rank: int, axis: str) -> tuple[int, ...]:
        """The ranks that differ from `rank` on `axis` only, in order."""
        if axis not in self.degrees:
            raise MeshError(f"{axis!r} is not an axis of this mesh ({', '.join(self.axes)})")
        here = self.coords(rank)
        return tuple(self.rank({**here, axis: i}) for i in range(self.degrees[axis]))

    def groups(self, axis: str) -> list[tuple[int, ...]]:
        """Every group along `axis`: each rank is in exactly one."""
        return sorted({self.group_of(rank, axis) for rank in range(self.size)})
