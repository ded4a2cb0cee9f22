"""`make demo`: the article's SimpleNet trained data-parallel, with the script notebook 01 shows.

It takes scripts/train_simplenet.py out of notebook 01's `%%writefile` cell (helpers.scripts), runs it
on `default_workers()` ranks (8 on an Ascend node, 2 on CPU, or TUTORIAL_WORKERS), then prints a summary:
each rank's epoch-mean loss, its held-out accuracy and its weight checksum; the loss plot is saved in
the run folder. Extra arguments go to the script (e.g. `python -m helpers.demo --epochs 1`).
"""

from __future__ import annotations

import statistics
import sys

from helpers.device import default_workers, detect_device
from helpers.launcher import launch, runs_root
from helpers.plots import plot_loss
from helpers.scripts import write_script

NOTEBOOK, SCRIPT = "01_environment_and_communication.ipynb", "scripts/train_simplenet.py"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    device, workers = detect_device(), default_workers()
    script = write_script(NOTEBOOK, SCRIPT, runs_root() / "demo-scripts")
    print(f"demo: {script} (from notebooks/{NOTEBOOK}) {' '.join(args)}\n      on {workers} ranks, device {device}")
    result = launch(script, *args, workers=workers, device=device, name="demo", timeout=120)
    if not result.ok:
        try:
            result.check()
        except RuntimeError as exc:
            print(f"\ndemo failed: {exc}", file=sys.stderr)
        return result.returncode or 1
    print("\nSummary")
    fell = True
    for rank in result.ranks:
        steps, final = result.records(rank, "step"), result.final(rank)
        epochs = sorted({s["epoch"] for s in steps})
        means = [statistics.fmean(s["loss"] for s in steps if s["epoch"] == e) for e in epochs]
        fell &= len(means) < 2 or means[0] > means[-1]
        print(f"rank {rank}: epoch mean loss {' -> '.join(f'{m:.3f}' for m in means)}, "
              f"eval accuracy {final['eval_accuracy']:.3f}, weights sha256 {final['weights_sha']}")
    shas = {result.final(rank)["weights_sha"] for rank in result.ranks}
    print(f"mean loss fell on every rank: {fell}; all {len(result.ranks)} ranks hold identical weights: "
          f"{len(shas) == 1}")
    png = result.run_dir / "loss.png"
    plot_loss(result, path=png)
    print(f"wall time {result.wall_time:.1f} s; loss plot: {png}")
    return 0 if fell and len(shas) == 1 and len(result.ranks) == workers else 1


if __name__ == "__main__":
    raise SystemExit(main())
