"""Which device the series runs on, and how many workers a launch uses.

Introduced in notebook 01. Nothing here imports MindSpore, so the launcher can ask cheaply.

Policy: Ascend when the node has Ascend cards and CANN, else CPU; 8 workers on an
Ascend node (or as many cards as it has), 2 on CPU. Both are overridable with environment variables.
"""

from __future__ import annotations

import argparse
import glob
import os
import re

DEVICE_ENV = "TUTORIAL_DEVICE"
WORKERS_ENV = "TUTORIAL_WORKERS"
SUPPORTED_DEVICES = ("CPU", "Ascend")
CPU_WORKERS = 2
ASCEND_WORKERS = 8
_CANN_HOMES = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/latest", "/usr/local/Ascend/cann")


def normalize_device(name: str) -> str:
    """Return the canonical spelling ("CPU" or "Ascend") or raise a ValueError naming the fix."""
    for device in SUPPORTED_DEVICES:
        if name.strip().lower() == device.lower():
            return device
    raise ValueError(f"unknown device {name!r}: use one of {', '.join(SUPPORTED_DEVICES)} "
                     f"(set {DEVICE_ENV} or pass --device)")


def ascend_card_ids() -> list[int]:
    """Ids of the Ascend cards the driver exposes (/dev/davinci0, /dev/davinci1, ...)."""
    matches = (re.fullmatch(r"/dev/davinci(\d+)", path) for path in glob.glob("/dev/davinci*"))
    return sorted(int(match.group(1)) for match in matches if match)


def cann_installed() -> bool:
    """True when the CANN toolkit MindSpore needs for Ascend is present."""
    home = os.environ.get("ASCEND_HOME_PATH")
    return bool(home and os.path.isdir(home)) or any(os.path.isdir(p) for p in _CANN_HOMES)


def detect_device() -> str:
    """`TUTORIAL_DEVICE` if set, else "Ascend" when cards and CANN are present, else "CPU"."""
    override = os.environ.get(DEVICE_ENV)
    if override:
        return normalize_device(override)
    return "Ascend" if ascend_card_ids() and cann_installed() else "CPU"


def default_workers(device: str | None = None) -> int:
    """`TUTORIAL_WORKERS` if set, else 8 on Ascend (fewer if the node has fewer cards), else 2."""
    override = os.environ.get(WORKERS_ENV)
    if override:
        if not override.isdigit() or int(override) < 1:
            raise ValueError(f"{WORKERS_ENV}={override!r} is not a positive integer: set it to e.g. 2")
        return int(override)
    device = normalize_device(device or detect_device())
    if device == "Ascend":
        return min(ASCEND_WORKERS, len(ascend_card_ids()) or ASCEND_WORKERS)
    return CPU_WORKERS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.device", description=__doc__)
    parser.add_argument("--device", help="check this device name instead of detecting one")
    parser.add_argument("--shell", action="store_true", help="print DEVICE=... WORKERS=... for a shell")
    args = parser.parse_args(argv)
    try:
        device = normalize_device(args.device) if args.device else detect_device()
        workers = default_workers(device)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    if args.shell:
        print(f"DEVICE={device}\nWORKERS={workers}")
    else:
        print(f"device: {device}, default workers: {workers}, Ascend cards seen: {ascend_card_ids()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
