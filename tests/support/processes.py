"""Starting a console script as a shell at a terminal starts it: with SIGINT at its default.

A process inherits an ignored SIGINT across exec (POSIX), and a Python started with SIGINT
ignored installs no KeyboardInterrupt handler. `make test &` (a background job of a
non-interactive shell), `nohup` or a CI runner may start the suite with SIGINT ignored: the
children it starts would then ignore Ctrl-C, and the tests of Ctrl-C would fail only when the
suite was started that way. Each child the tests start resets it (`preexec_fn`).
"""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """preexec_fn: SIGINT at its default in the child, whatever the suite inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
