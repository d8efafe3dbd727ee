"""The tables and indexes of the session log, in either SQL dialect."""

from __future__ import annotations

__all__ = ["schema"]


def schema(sequence: str, real: str) -> tuple[str, ...]:
    """The tables and indexes of both stores: ``sequence`` is the dialect's growing-key column, ``real`` its float type.

    The unique indexes make the store itself refuse a second call or result at
    one position of a step; the lease table has one row per leased session.
    """
    return (
        f"""CREATE TABLE IF NOT EXISTS session_events (
    seq {sequence},
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    step INTEGER,
    kind TEXT NOT NULL,
    call_id TEXT,
    position INTEGER,
    payload TEXT NOT NULL,
    at TEXT NOT NULL
)""",
        "CREATE INDEX IF NOT EXISTS session_events_key ON session_events (session_id, turn, step, kind)",
        "CREATE UNIQUE INDEX IF NOT EXISTS session_events_one_call ON session_events (session_id, turn, step, position) "
        "WHERE kind = 'tool/call'",
        "CREATE UNIQUE INDEX IF NOT EXISTS session_events_one_result ON session_events (session_id, turn, step, position) "
        "WHERE kind = 'tool/result'",
        "CREATE INDEX IF NOT EXISTS session_events_decisions ON session_events (session_id, turn, step, position) "
        "WHERE kind = 'approval/decided'",
        f"""CREATE TABLE IF NOT EXISTS session_leases (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires {real} NOT NULL
)""",
    )
