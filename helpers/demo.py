"""`make demo`: the series' main job in one command. Introduced in the README.

A real multi-process DATA_PARALLEL training of the article's SimpleNet through the launcher
(8 ranks on an Ascend node, 2 on CPU), rank 0's progress while it runs, then a summary: the loss
going down, every rank's weight checksum, and a loss plot saved in the run folder.
"""

from __future__ import annotations

import sys

from helpers.launcher import launch
from helpers.plots import plot_loss


def main(argv: list[str] | None = None) -> int:
    result = launch(*(argv if argv is not None else sys.argv[1:]), name="demo")
    if not result.ok:
        try:
            result.check()
        except RuntimeError as exc:
            print(f"\ndemo failed: {exc}", file=sys.stderr)
        return result.returncode or 1
    print("\nSummary\n" + result.summary())
    rows = result.summary_rows()
    shas = {row["weights_sha"] for row in rows}
    went_down = all(row["last_loss"] < row["first_loss"] for row in rows)
    print(f"loss went down on every rank: {went_down}")
    print(f"all {len(rows)} ranks hold identical weights: {len(shas) == 1} (sha {', '.join(sorted(shas))})")
    png = result.run_dir / "loss.png"
    plot_loss(result, path=png)
    print(f"loss plot: {png}")
    return 0 if went_down and len(shas) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
