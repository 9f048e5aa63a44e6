"""SIGINT as Python sets it up under an interactive shell, whatever shell started the tests.

A shell that ignores SIGINT (a background job of a non-interactive shell, ``bash -c 'pytest
... &'``, or after ``trap "" INT``) passes SIG_IGN on to its children, and Python keeps it:
it installs its handler (KeyboardInterrupt) only over SIG_DFL. A test that sends SIGINT would
then wait for a KeyboardInterrupt that never comes. The signal mask is inherited as well. So a
test that sends SIGINT to its own process does it inside `default_sigint`, and the script of a
child that gets it starts with `CHILD_SIGINT`.
"""

import signal
from contextlib import contextmanager

#: The first lines of a child's script that gets SIGINT: Python's handler, SIGINT unblocked.
CHILD_SIGINT = (
    "import signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "if hasattr(signal, 'pthread_sigmask'):\n"
    "    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
)


@contextmanager
def default_sigint():
    """Python's SIGINT handler, and SIGINT unblocked in this (the main) thread, for the
    block; then the disposition and the mask as they were."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = None
    if hasattr(signal, "pthread_sigmask"):
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if old is not None:              # None: not set from Python; leave ours
            signal.signal(signal.SIGINT, old)
