"""The planner under its first name: `from helpers.memory import plan` and `python -m helpers.memory` (notebook 09
introduces it). Its parts live in the package helpers.planner (machine, memory, flops, timing, search, recipes,
cli); this module re-exports them, with the few private helpers notebooks use (`_ring`, notebook 15's exercise)."""

import sys

from helpers.planner import *  # noqa: F403
from helpers.planner import __all__ as _planner_names
from helpers.planner.cli import main
from helpers.planner.timing import _dp_halves, _ring

__all__ = [*_planner_names, "main", "_ring", "_dp_halves"]

if __name__ == "__main__":
    sys.exit(main())
