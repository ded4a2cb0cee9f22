"""`python -m helpers.planner`: the planner's command line (helpers.planner.cli)."""

import sys

from helpers.planner.cli import main

sys.exit(main())
