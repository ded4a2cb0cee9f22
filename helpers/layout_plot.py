"""Pictures of a `helpers.layout` plan: every tensor as a grid of blocks. Introduced in notebook 02.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations


def _rank_text(ranks: tuple) -> str:
    """(0, 1, 2, 3, 6) -> 'r0-3,6'."""
    runs = []
    for rank in ranks:
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return "r" + ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _title(result, t) -> str:
    lines = [f"{t.name} {list(t.shape)}  map {t.tensor_map}", f"per device {list(t.local_shape)}"]
    for c in result.collectives if result else ():
        if c.tensor == t.name and c.kind == "AllReduce":
            lines.append(f"then AllReduce(sum) in groups of {len(c.groups[0])}")
        elif c.tensor == t.name:
            lines.append(f"AllGather along axis {c.axis} first")
    return "\n".join(lines)


def _draw_tensor(ax, result, t) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if len(t.shape) not in (1, 2):
        raise ValueError(f"only 1-D and 2-D tensors are drawn, {t.name} has shape {t.shape}")
    flat = len(t.shape) == 1   # a bias: drawn as one row
    rows, cols = (1, *t.shape) if flat else t.shape
    row_split, col_split = (1, *t.splits) if flat else t.splits
    height, width = rows / row_split, cols / col_split
    holders = {((0, *block) if flat else block): ranks for block, ranks in t.holders().items()}
    colours = plt.get_cmap("tab20")
    size = max(6, 12 - len(holders) // 4)
    for number, (block, ranks) in enumerate(holders.items()):
        i, j = block
        ax.add_patch(Rectangle((j * width, i * height), width, height, facecolor=colours(number % 20),
                               edgecolor="black", linewidth=1.2))
        ax.text((j + 0.5) * width, (i + 0.5) * height, _rank_text(ranks), ha="center", va="center",
                fontsize=size)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    if flat:
        ax.set_box_aspect(0.15)
    else:
        ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(_title(result, t), fontsize=9)


def draw_matmul_layout(result):
    """Draw A, B and the output (or an element-wise op's tensors) side by side; returns the Figure.

    Each block is labelled with the ranks holding it.
    """
    title = f"{result.op} {result.strategy} on {result.device_num} devices, device matrix {list(result.dev_matrix)}"
    return _draw_row(result, result.tensors, title, (3.6, 3.8))


def draw_tensors(tensors, title: str = ""):
    """Draw TensorLayouts side by side (e.g. every parameter of a strategy file); returns the Figure."""
    return _draw_row(None, tensors, title, (3.4, 3.4))


def _draw_row(result, tensors, title: str, size: tuple):
    import matplotlib.pyplot as plt

    width, height = size
    fig, axes = plt.subplots(1, len(tensors), figsize=(width * len(tensors), height), squeeze=False)
    for ax, t in zip(axes[0], tensors):
        _draw_tensor(ax, result, t)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
