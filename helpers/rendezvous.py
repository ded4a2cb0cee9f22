"""Would a schedule of sends and receives finish if every send waited for its receiver? Introduced in notebook 10.

Each rank's point-to-point operations, in the order it issues them: ("send" | "recv", peer, tag). Under the
strictest rule a send completes only once its peer has posted the matching receive, and a rank issues its next
operation only when the last one completed. `first_deadlock` plays that rule out; notebook 10 runs it on the
orders its pipeline script really issued, and on the order a naive script would issue. `waiting_at` gives the
same answer as positions, so that a check can name the line of a script where each rank would wait.
"""

from __future__ import annotations

Op = tuple[str, int, object]   # ("send" | "recv", peer rank, tag: what travels, e.g. ("act", 3))


def first_deadlock(comms: list[list[Op]]) -> list[Op | None] | None:
    """None when every rank's operations complete under blocking sends; else each rank's operation where it waits
    for ever (None for a rank that has finished). A send meeting a receive for a different tag raises ValueError."""
    heads = waiting_at(comms)
    if heads is None:
        return None
    return [ops[head] if head is not None else None for head, ops in zip(heads, comms)]


def waiting_at(comms: list[list[Op]]) -> list[int | None] | None:
    """As first_deadlock, but each waiting rank's position in its own list (None for a rank that has finished), so
    that a caller can say where in a script that operation was issued."""
    heads = [0] * len(comms)
    moved = True
    while moved:
        moved = False
        for rank, ops in enumerate(comms):
            if heads[rank] == len(ops) or ops[heads[rank]][0] != "send":
                continue
            _, peer, tag = ops[heads[rank]]
            if heads[peer] == len(comms[peer]):
                continue
            kind, source, expected = comms[peer][heads[peer]]
            if kind == "recv" and source == rank:
                if list(expected) != list(tag):   # tags may have been through JSON: lists, not tuples
                    raise ValueError(f"rank {rank} sends {tag} while rank {peer} expects {expected}")
                heads[rank] += 1
                heads[peer] += 1
                moved = True
    if all(head == len(ops) for head, ops in zip(heads, comms)):
        return None
    return [head if head < len(ops) else None for head, ops in zip(heads, comms)]


def send_after_compute(orders: list[list[tuple[str, int]]]) -> list[list[Op]]:
    """The naive order for a pipeline of len(orders) stages: before a forward receive its input, after it send the
    output on; before a backward receive the output's gradient, after it send the input's gradient back."""
    stages, comms = len(orders), []
    for s, order in enumerate(orders):
        ops: list[Op] = []
        for op, m in order:
            if op == "F":
                ops += [("recv", s - 1, ("act", m))] if s > 0 else []
                ops += [("send", s + 1, ("act", m))] if s < stages - 1 else []
            else:
                ops += [("recv", s + 1, ("grad", m))] if s < stages - 1 else []
                ops += [("send", s - 1, ("grad", m))] if s > 0 else []
        comms.append(ops)
    return comms
