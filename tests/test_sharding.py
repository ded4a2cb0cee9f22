"""helpers.sharding: notebook 03's plumbing (reading the probe's files, shard maps)."""

import json

from helpers.sharding import plot_shard_maps, read_counts, read_probe


def test_read_probe_returns_ranks_in_order(tmp_path):
    for rank in (1, 0, 10, 2):
        (tmp_path / f"rank_{rank}").mkdir()
        (tmp_path / f"rank_{rank}" / "ids.json").write_text(json.dumps({"rank": rank}), encoding="utf-8")
    (tmp_path / "rank_3").mkdir()   # a rank that wrote nothing is simply absent
    records = read_probe(tmp_path)
    assert list(records) == [0, 1, 2, 10]
    assert all(record["rank"] == rank for rank, record in records.items())


def test_read_counts():
    shards = [[0, 1, 2], [2, 3, 3]]
    assert read_counts(shards, 5).tolist() == [[1, 1, 1, 0, 0], [0, 0, 1, 2, 0]]
    assert read_counts([[]], 2).tolist() == [[0, 0]]


def test_plots_draw_small_and_large_maps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    small = [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 0]]
    fig = plot_shard_maps([("11 / 4", small, 11)], ncols=1)
    assert len(fig.axes) == 2 and fig.axes[0].get_title() == "11 / 4"
    big = [list(range(0, 300, 2)), list(range(1, 300, 2)) + [0]]
    fig2 = plot_shard_maps([("a", small, 11), ("b", big, 300), ("c", [list(range(5))], 5)], ncols=2)
    assert len(fig2.axes) == 6
    plt.close("all")
