"""How ``tether-clr mcp serve`` ends its process once it has stopped: at once, without the interpreter's teardown.

A client that launched the server over stdio closes stdin and, after a short wait (the
MCP SDK's client: 2 s), kills the process tree; a supervisor sending SIGTERM waits too.
With a .NET assembly hosted, the interpreter's orderly teardown is the slow part of an
exit (pythonnet's and Mono's shutdown, see
:func:`tether_clr.clr.runtime.skip_runtime_shutdown`), and nothing in it is owed to
anyone: by the time :func:`exit_now` is called the command has closed what is durable
(calls drained and recorded, log sessions' leases freed, the session and control
stores closed).
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

from tether_clr.clr.runtime import skip_runtime_shutdown

__all__ = ["exit_now"]


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` now: the exit handlers run (but not the .NET runtime's shutdown), stdout
    and stderr are flushed, then ``os._exit``.

    The caller must have closed everything durable first. What is skipped: the .NET runtime's
    shutdown (finalizers and freeing memory; CoreCLR runs no finalizers at exit either), the
    interpreter's finalization (freeing objects), and waiting for non-daemon threads (the SDK's
    stdin reader thread may still be blocked on a line the client never sends). What still runs:
    every other :mod:`atexit` handler (logging's flush, coverage's data, a tool module's own),
    so what an exit handler would have written is still written.
    """
    skip_runtime_shutdown()
    try:
        atexit._run_exitfuncs()  # each handler's exception is printed there, as at a normal exit
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a client that closed its end of the pipe: nothing to deliver to
                pass
        os._exit(code)
