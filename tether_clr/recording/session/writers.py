"""What a long-lived writer of a session needs of its log, read without reading the log: its last turn, the
turns a crash left open, and the sessions (by name prefix) that have one.

``tether-clr mcp serve --db`` holds each MCP session's log session for as long as it lasts
(:meth:`~tether_clr.recording.session.sql_store.SqlSessionStore.claim_writer`) and repairs, before it
serves, what a crashed replica left open (``open_sessions``): both cost a few index lookups, not a read of
every event, so neither grows with the log. The SQL is both dialects' (``?`` placeholders).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tether_clr.recording.session.events import TURN_END, TURN_START

__all__ = ["WriterClaim", "last_and_open_turns", "open_sessions", "open_turns"]

Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]

# The turns of a session that started and never ended: turn events have no step, so index lookups over the
# session's (turn, step, kind) keys, never its payloads.
_OPEN_TURNS = (
    "SELECT DISTINCT s.turn FROM session_events s WHERE s.session_id = ? AND s.step IS NULL AND s.kind = ? "
    "AND NOT EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = s.session_id AND e.turn = s.turn "
    "AND e.step IS NULL AND e.kind = ?) ORDER BY s.turn"
)
_OPEN_SESSIONS = (
    "SELECT DISTINCT s.session_id FROM session_events s WHERE s.session_id LIKE ? ESCAPE '!' "
    "AND substr(s.session_id, 1, ?) = ? AND s.step IS NULL AND s.kind = ? "
    "AND NOT EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = s.session_id AND e.turn = s.turn "
    "AND e.step IS NULL AND e.kind = ?) ORDER BY s.session_id"
)


@dataclass(frozen=True, slots=True)
class WriterClaim:
    """A session's lease taken by ``holder`` for writing new turns (:meth:`SqlSessionStore.claim_writer`), with
    what the writer needs of its log, read in the same transaction: its ``last_turn`` (0 for a new session)
    and the ``open_turns`` a crashed writer left (to repair under the lease before writing)."""

    session_id: str
    holder: str
    last_turn: int
    open_turns: tuple[int, ...]


def open_turns(execute: Execute, session_id: str) -> list[int]:
    """The session's turns that started and never ended, in order."""
    return [turn for (turn,) in execute(_OPEN_TURNS, (session_id, TURN_START, TURN_END))]


def last_and_open_turns(execute: Execute, session_id: str) -> tuple[int, list[int]]:
    """The session's last turn (0 for a new session) and its open turns."""
    ((last,),) = execute("SELECT MAX(turn) FROM session_events WHERE session_id = ?", (session_id,))
    return int(last or 0), open_turns(execute, session_id)


def open_sessions(execute: Execute, prefix: str) -> list[str]:
    """The sessions whose names start with ``prefix`` exactly (LIKE's wildcards escaped, its case folding
    undone) that have a turn started and never ended, sorted."""
    pattern = prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
    return [session for (session,) in execute(_OPEN_SESSIONS, (pattern, len(prefix), prefix, TURN_START, TURN_END))]
