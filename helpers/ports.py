"""Free TCP ports for the cluster's scheduler (the msrun master). Introduced in notebook 01.

Every launch takes its own port, so notebooks can run twice or side by side.
"""

from __future__ import annotations

import argparse
import errno
import socket

LOOPBACK = "127.0.0.1"


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when nothing listens on `host:port` (tested by binding it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port(host: str = LOOPBACK) -> int:
    """A port the kernel says is free right now (bind to port 0 and read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.ports")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("free", help="print a free port")
    check = sub.add_parser("check", help="exit 1 if the port is in use")
    check.add_argument("port", type=int)
    args = parser.parse_args(argv)
    if args.command == "free":
        print(free_port())
        return 0
    if not 1024 <= args.port <= 65535:
        print(f"error: port {args.port} is outside 1024-65535 (msrun accepts only that range)")
        return 1
    if not port_is_free(args.port):
        print(f"error: port {args.port} is already in use on {LOOPBACK}: pass another --port, or omit it "
              "to let the launcher pick a free one (a leftover job may hold it: see README, Troubleshooting)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
