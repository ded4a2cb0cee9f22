"""helpers.sharding (measured shards, coverage, shard maps) and helpers.shard_probe (the worker's CLI)."""

import json
import random

import numpy as np
import pytest

from helpers import shard_probe
from helpers.sharding import (
    FORMS,
    IndexSource,
    coverage_report,
    epoch_of,
    expected_padding,
    format_table,
    overlap_matrix,
    per_shard,
    plot_shard_map,
    plot_shard_maps,
    read_counts,
    read_rank_ids,
    shard_indices,
)


def test_padding_arithmetic():
    assert expected_padding(1000, 4) == 0
    assert expected_padding(1001, 4) == 3
    assert expected_padding(5, 8) == 3
    assert per_shard(1001, 4) == 251
    assert per_shard(1000, 4) == 250


def test_index_source_is_random_access():
    source = IndexSource(5)
    assert len(source) == 5
    (row,) = source[3]
    assert isinstance(row, np.ndarray) and int(row) == 3


@pytest.mark.parametrize("samples, shards", [(12, 4), (11, 4), (7, 3), (3, 5)])
def test_unshuffled_shards_are_round_robin_with_wraparound_padding(samples, shards):
    ids = epoch_of(shard_indices(samples, shards, shuffle=False), 0)
    size = per_shard(samples, shards)
    for rank, got in enumerate(ids):
        assert got == [pos % samples for pos in range(rank, size * shards, shards)]


@pytest.mark.parametrize("samples, shards", [(40, 4), (41, 4), (23, 3)])
def test_shared_seed_gives_complete_shards_padded_only_as_needed(samples, shards):
    shards_ids = shard_indices(samples, shards, shuffle=True, seed=3, epochs=2)
    for epoch in range(2):
        report = coverage_report(epoch_of(shards_ids, epoch), samples)
        assert report["complete"]
        assert report["per_rank"] == [per_shard(samples, shards)] * shards
        assert report["padding"] == report["overlap"] == expected_padding(samples, shards)
        assert report["disjoint"] == (samples % shards == 0)


def test_shuffle_reorders_each_epoch_and_is_reproducible():
    first = shard_indices(40, 2, shuffle=True, seed=5, epochs=2)
    again = shard_indices(40, 2, shuffle=True, seed=5, epochs=2)
    assert first == again
    assert first[0][0] != first[0][1]


def test_all_three_correct_forms_agree():
    results = [shard_indices(23, 4, shuffle=True, seed=1, epochs=2, form=form) for form in FORMS]
    assert results[0] == results[1] == results[2]
    with pytest.raises(ValueError, match="unknown form"):
        shard_indices(10, 2, form="generator")


def test_per_rank_seeds_break_disjointness():
    report = coverage_report(epoch_of(shard_indices(200, 4, shuffle=True, seed=[0, 1, 2, 3]), 0), 200)
    assert report["reads"] == 200
    assert report["missing"] > 0 and report["overlap"] > 0
    assert not report["complete"] and not report["disjoint"]


def test_seed_list_must_match_shards():
    with pytest.raises(ValueError, match="one seed per shard"):
        shard_indices(10, 3, shuffle=True, seed=[0, 1])


def test_measuring_restores_seeds():
    import mindspore.dataset as ds

    previous = ds.config.get_seed()
    random.seed(7)
    np.random.seed(7)
    expected_py, expected_np = random.random(), np.random.rand()
    random.seed(7)
    np.random.seed(7)
    shard_indices(10, 2, shuffle=True, seed=42)
    assert ds.config.get_seed() == previous
    assert (random.random(), np.random.rand()) == (expected_py, expected_np)


def test_coverage_report_counts():
    report = coverage_report([[0, 2, 4], [1, 3, 0]], 5)
    assert report["reads"] == 6 and report["unique"] == 5 and report["missing"] == 0
    assert report["overlap"] == 1 and report["padding"] == 1 and report["padding_ids"] == [0]
    assert report["complete"] and not report["disjoint"] and report["expected_padding"] == 1
    gaps = coverage_report([[0, 1], [1, 2]], 4)
    assert gaps["missing"] == 1 and not gaps["complete"]
    with pytest.raises(ValueError, match="outside"):
        coverage_report([[0, 9]], 5)


def test_overlap_matrix_and_read_counts():
    shards = [[0, 1, 2], [2, 3, 3]]
    assert overlap_matrix(shards).tolist() == [[3, 1], [1, 2]]
    assert read_counts(shards, 5).tolist() == [[1, 1, 1, 0, 0], [0, 0, 1, 2, 0]]


def test_format_table():
    text = format_table([{"a": 1, "bb": "x"}, {"a": 22, "bb": "yy"}])
    assert text.splitlines() == [" a  bb", " 1   x", "22  yy"]
    assert format_table([]) == "(no rows)"


def test_plots_draw_small_and_large_maps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    small = epoch_of(shard_indices(11, 4), 0)
    fig = plot_shard_map(small, 11, title="11 / 4")
    assert fig.axes and fig.axes[0].get_title() == "11 / 4"
    big = [list(range(0, 300, 2)), list(range(1, 300, 2)) + [0]]
    fig2 = plot_shard_maps([("a", small, 11), ("b", big, 300)], ncols=2)
    assert len(fig2.axes) == 4
    plt.close("all")


def test_read_rank_ids(tmp_path):
    for rank in (1, 0):
        (tmp_path / f"rank_{rank}").mkdir()
        (tmp_path / f"rank_{rank}" / "ids.json").write_text(json.dumps({"rank": rank}), encoding="utf-8")
    assert list(read_rank_ids(tmp_path)) == [0, 1]


def test_probe_arguments():
    args = shard_probe.parse_args(["--samples", "1000", "1001", "--epochs", "3", "--no-shuffle",
                                   "--out", "x"])
    assert args.samples == [1000, 1001] and args.epochs == 3 and not args.shuffle and args.out == "x"
    with pytest.raises(SystemExit):
        shard_probe.parse_args(["--samples", "0"])


def test_probe_reads_its_shard_without_a_cluster():
    """read_shard is the probe's data path; without init() it is rank 0 of 1 and must read everything."""
    import mindspore.dataset as ds

    args = shard_probe.parse_args(["--samples", "37", "--epochs", "2", "--batch-size", "8"])
    previous = ds.config.get_seed()
    try:
        ds.config.set_seed(args.seed)
        case = shard_probe.read_shard(37, rank=0, world=1, args=args)
    finally:
        ds.config.set_seed(previous)
    assert case["rows_match"]
    assert [sorted(ids) for ids in case["epochs"]] == [list(range(37))] * 2
    args2 = shard_probe.parse_args(["--samples", "37", "--batch-size", "8"])
    second = shard_probe.read_shard(37, rank=1, world=2, args=args2)
    assert len(second["epochs"][0]) == per_shard(37, 2)


def test_try_dataset_reports_stage_and_key_line():
    import mindspore.dataset as ds

    from helpers.sharding import try_dataset

    def index_set(**shard):
        return lambda: ds.NumpySlicesDataset({"index": np.arange(10)}, shuffle=False, **shard)

    assert try_dataset(index_set(num_shards=2, shard_id=1))["stage"] == "ok"
    early = try_dataset(index_set(num_shards=2))
    assert early["stage"] == "construction" and "passed in together" in early["message"]
    late = try_dataset(index_set(num_shards=2, shard_id=-1))
    assert late["stage"] == "iteration" and late["message"].startswith("DistributedSampler: shard_id")


def test_key_message_finds_the_article_error():
    import mindspore.dataset as ds

    from helpers.sharding import try_dataset

    data, label = np.zeros((6, 3), np.float32), np.zeros(6, np.int32)
    outcome = try_dataset(lambda: ds.GeneratorDataset(source=(data, label), column_names=["data", "label"]))
    assert outcome["stage"] == "iteration"
    assert "same number of NumPy arrays as specified in column_names" in outcome["message"]
