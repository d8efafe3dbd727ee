"""The tables and indexes of the session log, in either SQL dialect."""

from __future__ import annotations

__all__ = ["schema"]


def schema(sequence: str, real: str) -> tuple[str, ...]:
    """The tables and indexes of both stores: ``sequence`` is the dialect's growing-key column, ``real`` its float type.

    The unique indexes make the store itself refuse a second call or result at
    one position of a step; the lease table has one row per leased session; the
    grant table indexes the ``approval/grant`` events (see
    :mod:`tether_clr.recording.session.grants`).
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
        # Remembered approval answers, indexed from their approval/grant events (seq) in the same
        # transaction; a principal's grants are looked up across sessions, always within its tenant.
        """CREATE TABLE IF NOT EXISTS approval_grants (
    grant_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    tenant_id TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    tool TEXT NOT NULL,
    major INTEGER NOT NULL,
    schema_hash TEXT NOT NULL,
    decision TEXT NOT NULL,
    revoked_seq BIGINT
)""",
        "CREATE INDEX IF NOT EXISTS approval_grants_match ON approval_grants (tenant_id, principal_id, tool, major, schema_hash)",
    )
