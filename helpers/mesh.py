"""A device mesh: the job's ranks arranged on named axes (dp, pp, tp, ...). The planner's --search
(helpers.memory, notebook 09) walks its factorizations; a 3D-parallel job builds its groups from it (notebook 12).

`order` names the axes from the outermost to the innermost (by default the order of the degrees): the innermost
varies fastest from one rank to the next. Notebook 12 uses MEGATRON_ORDER, pipeline outermost, then data
parallel, tensor parallel innermost: rank = (p * dp + d) * tp + t. That is Megatron-LM's default order
(`tp-cp-ep-dp-pp`, innermost first, in megatron/core/parallel_state.py), MindSpore Transformers r2.0.0's
(["pp", "batch", "cp", "tp"], outermost first) and MindSpore's static pipeline's (stage = rank // ranks per
stage). A tensor-parallel group is then tp consecutive ranks, the cards of one node; a pipeline stage is dp * tp
consecutive ranks, so the stage boundary is the one that crosses nodes first. Each group is a list of ranks to
pass to `mindspore.communication.create_group(name, ranks)` on every rank of that group.

    >>> m = Mesh({"dp": 2, "pp": 2, "tp": 2}, order=MEGATRON_ORDER)
    >>> m.coords(5)
    {'dp': 0, 'pp': 1, 'tp': 1}
    >>> m.group_of(5, "tp"), m.group_of(5, "dp"), m.group_of(5, "pp")
    ((4, 5), (5, 7), (1, 5))
    >>> Mesh({"dp": 2, "pp": 2, "tp": 4}, order=MEGATRON_ORDER).crossing("dp", per_node=8)
    []
"""

from __future__ import annotations

import math

MEGATRON_ORDER = ("pp", "dp", "tp")   # outermost first: Megatron-LM's default tp-cp-ep-dp-pp read backwards


class MeshError(ValueError):
    """A mesh that does not fit the job; the message says which degrees and how to fix them."""


def factorizations(world: int, axes: tuple[str, ...] = ("dp", "pp", "tp")) -> list[dict[str, int]]:
    """Every way to write `world` as a product of one degree per axis, in order."""
    if len(axes) == 1:
        return [{axes[0]: world}]
    return [{axes[0]: d, **rest} for d in range(1, world + 1) if world % d == 0
            for rest in factorizations(world // d, axes[1:])]


class Mesh:
    def __init__(self, degrees: dict[str, int], world: int | None = None, order: tuple[str, ...] | None = None):
        """`degrees` per axis; `world` the job's rank count, checked; `order` the axes from outermost to innermost
        (default: the order of `degrees`)."""
        for axis, degree in degrees.items():
            if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
                raise MeshError(f"{axis}: a degree is a positive whole number, got {degree!r}")
        self.degrees = dict(degrees)
        self.axes = tuple(degrees)
        self.order = tuple(order) if order is not None else self.axes
        if sorted(self.order) != sorted(self.axes):
            raise MeshError(f"order {self.order} must name each axis of {self.axes} once")
        self.size = math.prod(degrees.values())
        if world is not None and world != self.size:
            product = " x ".join(f"{a} {d}" for a, d in degrees.items())
            options = ", ".join(" x ".join(str(v) for v in f.values()) for f in factorizations(world, self.axes))
            raise MeshError(f"{product} = {self.size} ranks, but the job has {world}: the degrees must multiply to "
                            f"{world} ({' x '.join(self.axes)}: {options})")

    def coords(self, rank: int) -> dict[str, int]:
        """Where `rank` sits on each axis, in the order of the degrees (the innermost axis varies fastest)."""
        if not 0 <= rank < self.size:
            raise MeshError(f"rank {rank} is not in a mesh of {self.size} ranks")
        out = {}
        for axis in reversed(self.order):
            rank, out[axis] = divmod(rank, self.degrees[axis])
        return {axis: out[axis] for axis in self.axes}

    def rank(self, coords: dict[str, int]) -> int:
        rank = 0
        for axis in self.order:
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

    def crossing(self, axis: str, per_node: int) -> list[tuple[int, ...]]:
        """The groups along `axis` whose ranks sit on more than one node, with `per_node` consecutive ranks a node."""
        return [g for g in self.groups(axis) if len({rank // per_node for rank in g}) > 1]
