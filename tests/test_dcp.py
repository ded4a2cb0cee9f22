"""Notebook 17's dcp.py, the distributed checkpoint, in one process (no msrun).

Two classes of mistake: a write that a power loss can undo after the marker vouched for it (every file, layout.json
and the marker are flushed with os.fsync, and their folder after them, before the next one is written), and a
reader that assumes every rank wrote a file (only the first data-parallel replica writes; on the layout that saved
it, every other rank reads its twin's file). The notebook's section 5 runs the second for real: a resume with
--no-reshard on a layout with dp > 1, equal to the unbroken run.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.scripts import import_cells, notebook_scripts

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "17_training_job.ipynb"


@pytest.fixture(scope="module")
def dcp(tmp_path_factory):
    saved = sys.modules.get("dcp")
    yield import_cells(tmp_path_factory.mktemp("scripts") / "dcp.py", notebook_scripts(NOTEBOOK)["scripts/dcp.py"])
    if saved is None:
        sys.modules.pop("dcp", None)
    else:
        sys.modules["dcp"] = saved


@pytest.fixture
def flushed(monkeypatch):
    """The path of everything os.fsync is called on, in order (a folder's path for a folder)."""
    paths = []
    real = os.fsync

    def record(handle):
        paths.append(Path(os.readlink(f"/proc/self/fd/{handle}")))
        real(handle)

    monkeypatch.setattr(os, "fsync", record)
    return paths


def test_every_write_reaches_the_disk_before_the_marker(dcp, flushed, tmp_path):
    tmp_path = tmp_path.resolve()   # as /proc/self/fd names it
    folder = tmp_path / "checkpoint" / "step_4"
    dcp.make_folder(folder)
    assert flushed == [tmp_path, tmp_path / "checkpoint"], "each new folder's name, in its parent"
    flushed.clear()
    dcp.remove_marker(folder)
    assert flushed == [folder], "the old marker is gone for good before any file is written"
    flushed.clear()
    dcp.save_tensors(folder / "rank_0.safetensors", {"embed": np.ones((4, 2), np.float32)})
    assert flushed == [folder / "rank_0.safetensors", folder], "the file, then its name in the folder"
    assert (folder / "rank_0.safetensors").stat().st_mode & 0o777 == 0o400, "MindSpore leaves it read-only"
    assert sorted(p.name for p in folder.iterdir()) == ["rank_0.safetensors"], "no .tmp left behind"
    flushed.clear()
    dcp.write_json(folder / "layout.json", {"dp": 1})
    dcp.write_marker(folder, "step 4, 1x1x1\n")
    assert flushed == [folder / "layout.partial", folder, folder / "COMPLETE.partial", folder], (
        "layout.json and the marker: each flushed under its temporary name, renamed, then the folder")
    assert json.loads((folder / "layout.json").read_text()) == {"dp": 1} and dcp.read_layout(folder) == {"dp": 1}


def fake_checkpoint(dcp, folder, dp, pp, tp):
    """A checkpoint as train_hf.py saves one: a file per rank of the first replica (d = 0), each holding its stage's
    tensor 'w<stage>' cut along axis 0 for its t, layout.json and the marker (written with what dcp.py always had)."""
    folder.mkdir(parents=True)
    files, shapes = {}, {f"w{q}": [4 * tp, 3] for q in range(pp)}
    for q in range(pp):
        whole = np.arange(12 * tp, dtype=np.float32).reshape(4 * tp, 3) + 1000 * q
        for t, part in enumerate(np.split(whole, tp)):
            name = f"rank_{q * dp * tp + t}.safetensors"
            dcp.save_tensors(folder / name, {f"w{q}": part})
            files[name] = {f"w{q}": {"axis": 0, "index": t, "parts": tp, "stage": q}}
    dcp.write_json(folder / "layout.json", {"dp": dp, "pp": pp, "tp": tp, "step": 4, "shapes": shapes, "files": files})
    (folder / dcp.MARKER).write_text("complete\n")
    return folder


@pytest.mark.parametrize("layout", ["2x1x1", "4x1x2", "2x2x1", "2x2x2"])
def test_every_replica_reads_its_first_replica_twin_on_the_same_layout(dcp, tmp_path, layout):
    dp, pp, tp = (int(n) for n in layout.split("x"))
    folder = fake_checkpoint(dcp, tmp_path / "step_4", dp, pp, tp)
    _, whole = dcp.assemble(folder)
    for rank in range(dp * pp * tp):
        p, t = rank // (dp * tp), rank % tp
        _, held = dcp.load_unresharded(folder, rank, {f"w{p}": (4, 3)}, layout)
        assert np.array_equal(held[f"w{p}"], np.split(whole[f"w{p}"], tp)[t]), f"rank {rank} of {layout}"


def test_another_layout_is_refused_before_any_file_is_read(dcp, tmp_path):
    folder = fake_checkpoint(dcp, tmp_path / "step_4", 2, 1, 1)
    for layout in ("1x2x1", "1x1x2"):
        for rank in range(2):
            with pytest.raises(dcp.CheckpointError, match=f"saved as 2x1x1 .*this run is {layout}.*drop --no-reshard"):
                dcp.load_unresharded(folder, rank, {"w0": (4, 3)}, layout)
    (folder / "rank_0.safetensors").unlink()
    with pytest.raises(dcp.CheckpointError, match="rank_0.safetensors: missing, though layout.json lists it"):
        dcp.load_unresharded(folder, 1, {"w0": (4, 3)}, "2x1x1")


def test_assemble_reads_only_what_it_keeps(dcp, tmp_path, monkeypatch):
    folder = fake_checkpoint(dcp, tmp_path / "step_4", 1, 2, 2)
    read = []
    real = dcp.load_tensors
    monkeypatch.setattr(dcp, "load_tensors", lambda path, keep=None: read.append(Path(path).name) or real(path, keep))
    _, whole = dcp.assemble(folder, keep=lambda name: name == "w1")
    assert sorted(whole) == ["w1"] and sorted(read) == ["rank_2.safetensors", "rank_3.safetensors"]
    assert np.array_equal(whole["w1"], np.arange(24, dtype=np.float32).reshape(8, 3) + 1000)
