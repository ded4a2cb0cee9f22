"""The planner's one error (notebook 09 introduces the planner)."""


class PlanError(ValueError):
    """Bad input; the message starts with the flag it names."""
