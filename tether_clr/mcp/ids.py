"""Ids the server makes per request: call ids, and session ids for requests that have none.

Unique per process without a ``uuid4`` per request: a random prefix drawn once per
process, then a counter. A forked child (a pre-forking server's worker) draws a
prefix of its own, or two workers would number alike.
"""

from __future__ import annotations

import itertools
import os
import uuid

__all__ = ["new_call_id", "new_session_id"]

_PREFIX = ""
_calls = itertools.count(1)
_sessions = itertools.count(1)


def _new_prefix() -> None:
    global _PREFIX, _calls, _sessions
    _PREFIX, _calls, _sessions = uuid.uuid4().hex[:12], itertools.count(1), itertools.count(1)


_new_prefix()
if hasattr(os, "register_at_fork"):  # POSIX only; where there is no fork there is nothing to redraw
    os.register_at_fork(after_in_child=_new_prefix)


def new_call_id() -> str:
    """A call id for one ``tools/call``: ``mcp-<process prefix>-<n>``, unique across processes and forks."""
    return f"mcp-{_PREFIX}-{next(_calls)}"


def new_session_id() -> str:
    """A session id for a request that has none (2026-07-28, stateless HTTP, memory):
    ``mcp-<process prefix>-s<n>``, unique across processes and forks."""
    return f"mcp-{_PREFIX}-s{next(_sessions)}"
