"""Helpers for the MindSpore distributed / auto-parallel notebook series.

Importing this package has no side effects: it does not import MindSpore, seed anything, or
choose a device. The notebooks import what they need:

    from helpers import launch, detect_device, default_workers

Names are resolved on first use, so `python -m helpers.<module>` runs each module cleanly.
"""

from importlib import import_module

_EXPORTS = {
    "launch": "helpers.launcher",
    "RunResult": "helpers.launcher",
    "show_table": "helpers.launcher",
    "detect_device": "helpers.device",
    "default_workers": "helpers.device",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")
