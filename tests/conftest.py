"""Set-up every test file shares."""

import signal

import pytest


@pytest.fixture(autouse=True, scope="session")
def ctrl_c_reaches_the_jobs():
    """The fault tests press Ctrl-C by sending SIGINT, as a terminal does. A shell that starts pytest in the
    background without job control (`make test &` in a script, some CI runners) starts it with SIGINT ignored, and
    an ignored signal stays ignored through exec: launch.sh could not trap it, and a Python front would never raise
    KeyboardInterrupt, so the job ran on. A terminal's foreground process has SIGINT's default action; give the
    tests' children the same by taking Python's own handler back (a handled signal resets to default on exec)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
