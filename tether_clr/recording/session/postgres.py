"""The shared session store: PostgreSQL through psycopg 3, for several processes or hosts.

psycopg's ``AsyncConnection`` runs only on asyncio; this library promises trio
too, so the store drives a psycopg connection from worker threads
(``anyio.to_thread``), exactly as the SQLite store does: its API is async, the
event loop never blocks on the server. Leases are timed by the server's clock,
so hosts with skewed clocks agree on when a lease runs out. psycopg is the
optional extra ``postgres`` (``pip install 'tether_clr[postgres]'``).

A sink's commit (the one that sits between a group's declarations and its
bodies) is a single round trip: one call of the server-side function
``tether_session_append``, created with the tables, which checks or takes the
lease, checks that a new step may start (its turn open, the step new, no step
of the session waiting for an approval decision), inserts the rows in order and
releases the lease, all
in the implicit transaction of that one statement (the connection is in
autocommit mode, so the server commits it, at the connection's
``synchronous_commit``, before it answers). A refused lease or step is raised
by the function with the store's own SQLSTATEs and becomes the same
:class:`~tether_clr.SessionLeasedError` or ValueError the shared code
raises; nothing was written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tether_clr.recording.session.ddl import schema
from tether_clr.recording.session.encoding import PendingEvent
from tether_clr.recording.session.events import (
    APPROVAL_DECIDED,
    APPROVAL_GRANT,
    STEP_START,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Durability,
    SessionLeasedError,
)
from tether_clr.recording.session.refusals import (
    check_new_step,
    raise_lost_lease,
    raise_suspended,
)
from tether_clr.recording.session.sql_store import Execute, SqlSessionStore

__all__ = ["PostgresSessionStore"]

# SQLSTATEs the append function raises (class "TC" is not used by PostgreSQL); the message is JSON.
_LOST_LEASE, _LEASED, _STEP_REFUSED, _SUSPENDED = "TC001", "TC002", "TC003", "TC004"

# The lease logic of SqlSessionStore._lease and the step checks of _check_new_step (and
# _refuse_while_suspended), server-side, in one
# statement's transaction. Taking the lease is one upsert: a free, expired or own lease becomes this
# holder's (ON CONFLICT locks the row either way); a live lease of another holder is refused. A writer's
# later commits lock its row and refuse if another holder took it over (the writer was presumed dead).
_APPEND_FUNCTION = f"""CREATE OR REPLACE FUNCTION tether_session_append(
    p_session TEXT, p_holder TEXT, p_acquire BOOLEAN, p_release BOOLEAN, p_seconds DOUBLE PRECISION,
    p_turn INTEGER[], p_step INTEGER[], p_kind TEXT[], p_call_id TEXT[], p_position INTEGER[], p_payload TEXT[], p_at TEXT[]
) RETURNS VOID LANGUAGE plpgsql AS $fn$
DECLARE
    v_holder TEXT;
    v_remaining DOUBLE PRECISION;
    v_kinds TEXT[];
    v_turn INTEGER;
    v_step INTEGER;
    v_call_id TEXT;
BEGIN
    IF p_acquire THEN
        INSERT INTO session_leases AS lease (session_id, holder, expires)
        VALUES (p_session, p_holder, extract(epoch from clock_timestamp())::float8 + p_seconds)
        ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires
        WHERE lease.holder = EXCLUDED.holder OR lease.expires - extract(epoch from clock_timestamp())::float8 <= 0
        RETURNING lease.holder INTO v_holder;
        IF v_holder IS NULL THEN
            SELECT holder, expires - extract(epoch from clock_timestamp())::float8 INTO v_holder, v_remaining
            FROM session_leases WHERE session_id = p_session;
            RAISE EXCEPTION USING ERRCODE = '{_LEASED}',
                MESSAGE = json_build_object('holder', v_holder, 'remaining', v_remaining)::text;
        END IF;
    ELSE
        SELECT holder INTO v_holder FROM session_leases WHERE session_id = p_session FOR UPDATE;
        IF v_holder IS DISTINCT FROM p_holder THEN
            RAISE EXCEPTION USING ERRCODE = '{_LOST_LEASE}', MESSAGE = json_build_object('holder', v_holder)::text;
        END IF;
    END IF;
    IF p_kind @> ARRAY['{STEP_START}'] THEN
        FOR i IN 1 .. array_length(p_kind, 1) LOOP
            CONTINUE WHEN p_kind[i] <> '{STEP_START}';
            SELECT coalesce(array_agg(DISTINCT found.kind), '{{}}') INTO v_kinds FROM (
                SELECT kind FROM session_events WHERE session_id = p_session AND turn = p_turn[i]
                    AND step IS NULL AND kind IN ('{TURN_START}', '{TURN_END}')
                UNION ALL
                SELECT kind FROM session_events WHERE session_id = p_session AND turn = p_turn[i]
                    AND step = p_step[i] AND kind = '{STEP_START}'
            ) AS found;
            IF NOT v_kinds @> ARRAY['{TURN_START}'] OR v_kinds && ARRAY['{TURN_END}', '{STEP_START}'] THEN
                RAISE EXCEPTION USING ERRCODE = '{_STEP_REFUSED}',
                    MESSAGE = json_build_object('turn', p_turn[i], 'step', p_step[i], 'kinds', v_kinds)::text;
            END IF;
            SELECT d.turn, d.step, d.call_id INTO v_turn, v_step, v_call_id FROM session_events d
            WHERE d.session_id = p_session AND d.kind = '{APPROVAL_DECIDED}' AND d.payload LIKE '%"decision":"deferred"%'
              AND NOT EXISTS (SELECT 1 FROM session_events r WHERE r.session_id = d.session_id AND r.turn = d.turn
                  AND r.step = d.step AND r.position = d.position AND r.seq > d.seq
                  AND r.kind IN ('{TOOL_RESULT}', '{APPROVAL_DECIDED}'))
            LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION USING ERRCODE = '{_SUSPENDED}', MESSAGE = json_build_object(
                    'turn', p_turn[i], 'step', p_step[i], 'parked_turn', v_turn, 'parked_step', v_step, 'call_id', v_call_id
                )::text;
            END IF;
        END LOOP;
    END IF;
    INSERT INTO session_events (session_id, turn, step, kind, call_id, position, payload, at)
    SELECT p_session, u.turn, u.step, u.kind, u.call_id, u.position, u.payload, u.at
    FROM unnest(p_turn, p_step, p_kind, p_call_id, p_position, p_payload, p_at)
        WITH ORDINALITY AS u(turn, step, kind, call_id, position, payload, at, n)
    ORDER BY u.n;
    IF p_release THEN
        DELETE FROM session_leases WHERE session_id = p_session AND holder = p_holder;
    END IF;
END
$fn$"""

_SCHEMA = (*schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "DOUBLE PRECISION"), _APPEND_FUNCTION)

# Binary parameters (%b): the payloads' JSON text goes as it is, with no array-literal quoting.
_APPEND = (
    "SELECT tether_session_append(%b, %b, %b, %b, %b::float8, %b::int[], %b::int[], %b::text[], %b::text[], "
    "%b::int[], %b::text[], %b::text[])"
)

_PLACEHOLDER = re.compile(r"\?")


class PostgresSessionStore(SqlSessionStore):
    """``PostgresSessionStore(dsn, *, lease_seconds=5, durability="full", group_commit=True)``.

    ``durability="full"`` keeps ``synchronous_commit=on`` (a commit returns once
    the server flushed it to disk); ``"process"`` sets it ``off`` for this
    connection (a commit survives the crash of the writing process, which has
    handed it to the server, but the server's last commits may be lost if its
    machine fails). Creating the tables is serialized by an advisory lock, so
    processes may open one database at once.
    """

    _NOW = "extract(epoch from clock_timestamp())::float8"
    _FOR_UPDATE = " FOR UPDATE"

    def __init__(
        self, dsn: str, *, lease_seconds: float = 5.0, durability: Durability = "full", group_commit: bool = True
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, durability=durability, group_commit=group_commit)
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("PostgresSessionStore needs psycopg 3: pip install 'tether_clr[postgres]'") from exc
        self._db = psycopg.connect(dsn, autocommit=True)
        try:
            self._db.execute(f"SET synchronous_commit TO {'on' if durability == 'full' else 'off'}")
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('tether_clr.session_store'))")
                for statement in _SCHEMA:
                    self._db.execute(statement)
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        db = self._db

        def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = db.execute(_PLACEHOLDER.sub("%s", sql), params)
            return cursor.fetchall() if cursor.description is not None else []

        with db.transaction():
            yield execute

    def _commit_rows(self, session_id: str, holder: str, rows: Sequence[PendingEvent], first: bool, release: bool) -> None:
        """The shared transaction of a sink's commit, as one call of ``tether_session_append``: one round trip.

        A commit that holds a grant (rare: an "always" answer) takes the shared path instead, which
        indexes the grant in the same transaction.
        """
        if any(row.kind == APPROVAL_GRANT for row in rows):
            super()._commit_rows(session_id, holder, rows, first, release)
            return
        import psycopg

        params = (
            session_id, holder, first, release, self.lease_seconds,
            [row.turn for row in rows], [row.step for row in rows], [row.kind for row in rows],
            [row.call_id for row in rows], [row.position for row in rows], [row.payload for row in rows],
            [row.at for row in rows],
        )  # fmt: skip
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the session store is closed")
            try:
                # Through _insert_many, like every insert of the store: one statement, and in autocommit
                # mode its own transaction, committed when it returns.
                self._insert_many(_APPEND, [params])
            except psycopg.Error as exc:
                _refusal(exc, session_id)
                raise

    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run ``sql`` for each parameter row: one prepared statement for one row, pipelined for more.

        A sink's commit passes the one call of ``tether_session_append`` (every event in its array parameters).
        """
        if len(rows) == 1:
            self._db.execute(_PLACEHOLDER.sub("%s", sql), rows[0], prepare=True)
        elif rows:
            with self._db.cursor() as cursor:
                cursor.executemany(_PLACEHOLDER.sub("%s", sql), rows)  # pipelined: one round trip

    def _close_connection(self) -> None:
        self._db.close()


def _refusal(exc: Any, session_id: str) -> None:
    """Raise the store's own exception for a refusal the append function signalled; return for any other error."""
    if exc.sqlstate not in (_LOST_LEASE, _LEASED, _STEP_REFUSED, _SUSPENDED):
        return
    detail = json.loads(exc.diag.message_primary)
    if exc.sqlstate == _LOST_LEASE:
        raise_lost_lease(session_id, detail["holder"])
    if exc.sqlstate == _LEASED:
        raise SessionLeasedError(session_id, detail["holder"], detail["remaining"]) from None
    if exc.sqlstate == _SUSPENDED:
        what = f"step {detail['step']} of turn {detail['turn']}"
        raise_suspended(session_id, what, detail["parked_turn"], detail["parked_step"], detail["call_id"])
    check_new_step(session_id, detail["turn"], detail["step"], set(detail["kinds"]))
