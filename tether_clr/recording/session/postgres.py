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

**Connections.** The store draws its connections from a pool
(:mod:`tether_clr.recording.pg_pool`: ``psycopg_pool``, health-checked,
``max_connections`` of them, a bounded wait), one per operation, so different
sessions' writes run on different connections at once and a server restart
costs the operations in flight a retry, never the process its store.

**Recognising a write.** Every write that must not run twice (a sink's commit,
``begin_turn``, ``end_turn``, ``revoke_grant``) records its write id in
``session_writes`` in its own transaction. When the connection is lost while
its commit is in flight, the store looks the id up: found, the write was
applied (``begin_turn`` finds its turn through the row's transaction id);
missing, it was not, and it runs again. Ids older than an hour are pruned.
"""

from __future__ import annotations

import json
import threading
import time
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
    raise_turn_restarted,
    raise_suspended,
)
from tether_clr.recording.pg_pool import PooledStore, connect_once, open_pool, pg_sql, transaction
from tether_clr.recording.session.sql_store import Execute, SqlSessionStore
from tether_clr.recording.transient import Applied, OutcomeUnknown, RetryPolicy, is_connection_lost

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
    p_turn INTEGER[], p_step INTEGER[], p_kind TEXT[], p_call_id TEXT[], p_position INTEGER[], p_payload TEXT[], p_at TEXT[],
    p_write_id TEXT
) RETURNS VOID LANGUAGE plpgsql AS $fn$
DECLARE
    v_holder TEXT;
    v_remaining DOUBLE PRECISION;
    v_kinds TEXT[];
    v_batch TEXT[];
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
            -- a turn started in this very commit (its one writer folds turn/start into its first step's commit)
            SELECT coalesce(array_agg(DISTINCT p_kind[j]), '{{}}') INTO v_batch FROM generate_subscripts(p_kind, 1) AS j
            WHERE j < i AND p_turn[j] = p_turn[i] AND p_step[j] IS NULL AND p_kind[j] IN ('{TURN_START}', '{TURN_END}');
            IF v_batch @> ARRAY['{TURN_START}'] AND v_kinds @> ARRAY['{TURN_START}'] THEN
                RAISE EXCEPTION USING ERRCODE = '{_STEP_REFUSED}', MESSAGE = json_build_object(
                    'turn', p_turn[i], 'step', p_step[i], 'kinds', v_kinds, 'restarted', true)::text;
            END IF;
            v_kinds := v_kinds || v_batch;
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
    IF p_write_id IS NOT NULL THEN
        INSERT INTO session_writes (write_id, at) VALUES (p_write_id, extract(epoch from clock_timestamp())::float8);
    END IF;
END
$fn$"""

# The ids of recent writes that must not run twice, each inserted in its write's transaction (see the module docstring).
_WRITES = "CREATE TABLE IF NOT EXISTS session_writes (write_id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)"
# The same call with each column packed in one text (its values joined by _SEP, a NULL written _NULL), split
# back into the arrays server-side: seven arrays of a hundred values cost psycopg twice the client time of
# seven texts (its array dumper is Python), on the path every group's commit waits for.
_APPEND_PACKED_FUNCTION = """CREATE OR REPLACE FUNCTION tether_session_append_packed(
    p_session TEXT, p_holder TEXT, p_acquire BOOLEAN, p_release BOOLEAN, p_seconds DOUBLE PRECISION,
    p_turn TEXT, p_step TEXT, p_kind TEXT, p_call_id TEXT, p_position TEXT, p_payload TEXT, p_at TEXT, p_write_id TEXT
) RETURNS VOID LANGUAGE sql AS $fn$
    SELECT tether_session_append(p_session, p_holder, p_acquire, p_release, p_seconds,
        string_to_array(p_turn, E'\\x1e', E'\\x1f')::int[], string_to_array(p_step, E'\\x1e', E'\\x1f')::int[],
        string_to_array(p_kind, E'\\x1e'), string_to_array(p_call_id, E'\\x1e', E'\\x1f'),
        string_to_array(p_position, E'\\x1e', E'\\x1f')::int[], string_to_array(p_payload, E'\\x1e'),
        string_to_array(p_at, E'\\x1e'), p_write_id)
$fn$"""
_SEP, _NULL = "\x1e", "\x1f"  # ASCII record and unit separators: JSON text escapes both, ids almost never hold them
_SCHEMA = (
    *schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "DOUBLE PRECISION"), _WRITES, _APPEND_FUNCTION,
    _APPEND_PACKED_FUNCTION,
)
_PRUNE_EVERY = 600.0  # seconds between prunings of session_writes
_KEEP_WRITES = 3600.0  # seconds a write id stays recognisable

# Binary parameters (%b): the payloads' JSON text goes as it is, with no array-literal quoting.
_APPEND = (
    "SELECT tether_session_append(%b, %b, %b, %b, %b::float8, %b::int[], %b::int[], %b::text[], %b::text[], "
    "%b::int[], %b::text[], %b::text[], %b::text)"
)
_APPEND_PACKED = (
    "SELECT tether_session_append_packed(%b, %b, %b, %b, %b::float8, %b::text, %b::text, %b::text, %b::text, "
    "%b::text, %b::text, %b::text, %b::text)"
)


def _numbers(values: list[int | None]) -> str:
    return _SEP.join(_NULL if value is None else str(value) for value in values)


def _packed(rows: Sequence[PendingEvent]) -> tuple[str, ...] | None:
    """The rows' seven columns as :data:`_APPEND_PACKED` takes them, or None when a text holds a separator (or
    is empty where it would read as no value at all): those rows go as arrays. A NULL call id is written _NULL."""
    if not rows:
        return None
    texts = (
        _SEP.join([row.kind for row in rows]), _SEP.join([_NULL if row.call_id is None else row.call_id for row in rows]),
        _SEP.join([row.payload for row in rows]), _SEP.join([row.at for row in rows]),
    )  # fmt: skip
    nulls = sum(1 for row in rows if row.call_id is None)
    for index, text in enumerate(texts):
        if not text or text.count(_SEP) != len(rows) - 1 or text.count(_NULL) != (nulls if index == 1 else 0):
            return None
    kinds, call_ids, payloads, ats = texts
    return (
        _numbers([row.turn for row in rows]), _numbers([row.step for row in rows]), kinds, call_ids,
        _numbers([row.position for row in rows]), payloads, ats,
    )  # fmt: skip



class PostgresSessionStore(PooledStore, SqlSessionStore):
    """``PostgresSessionStore(dsn, *, lease_seconds=5, durability="full", group_commit=True, max_connections=10,
    connect_wait=2.0, retry=None)``.

    ``durability="full"`` keeps ``synchronous_commit=on`` (a commit returns once
    the server flushed it to disk); ``"process"`` sets it ``off`` for the
    store's connections (a commit survives the crash of the writing process, which has
    handed it to the server, but the server's last commits may be lost if its
    machine fails). Creating the tables is serialized by an advisory lock, so
    processes may open one database at once.

    ``max_connections`` (default 10): the pool's size, how many operations run
    at once (one connection is kept open when idle). ``connect_wait`` (default
    2 s): how long an operation waits for a connection before that attempt
    fails (retried within ``retry``'s deadline, then
    :class:`~tether_clr.StoreUnavailableError`). ``close()`` closes the pool.
    """

    _NOW = "extract(epoch from clock_timestamp())::float8"
    _FOR_UPDATE = " FOR UPDATE"

    def __init__(
        self,
        dsn: str,
        *,
        lease_seconds: float = 5.0,
        durability: Durability = "full",
        group_commit: bool = True,
        max_connections: int = 10,
        connect_wait: float = 2.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, durability=durability, group_commit=group_commit, retry=retry)
        synchronous = "on" if durability == "full" else "off"
        what = "PostgresSessionStore"
        with connect_once(dsn, connect_wait=connect_wait, what=what) as db, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(hashtext('tether_clr.session_store'))")
            for statement in _SCHEMA:
                db.execute(statement)
        self.max_connections = max_connections
        self._pool = open_pool(
            dsn, name="tether_clr.session_store", max_connections=max_connections, connect_wait=connect_wait,
            synchronous_commit=synchronous, what=what,
        )  # fmt: skip
        self._pruned = time.monotonic()
        self._prune_lock = threading.Lock()

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        """One transaction on a pooled connection; :class:`OutcomeUnknown` if the connection is lost during its commit."""
        write_id = self._write_id()
        with self._pool.connection() as db:
            self._local.connection = db
            try:
                with transaction(db) as execute:
                    if write_id is not None:
                        execute("INSERT INTO session_writes (write_id, at) VALUES (?, " + self._NOW + ")", (write_id,))
                    yield execute
            finally:
                self._local.connection = None
        self._maybe_prune()

    def _commit_rows(self, session_id: str, holder: str, rows: Sequence[PendingEvent], first: bool, release: bool) -> None:
        """The shared transaction of a sink's commit, as one call of ``tether_session_append``: one round trip.

        A commit that holds a grant (rare: an "always" answer) takes the shared path instead, which
        indexes the grant in the same transaction. The call is its own transaction (autocommit): a
        connection lost while it is in flight leaves its outcome unknown (:class:`OutcomeUnknown`).
        """
        if any(row.kind == APPROVAL_GRANT for row in rows):
            super()._commit_rows(session_id, holder, rows, first, release)
            return
        import psycopg

        packed = _packed(rows)
        params: tuple[Any, ...]
        if packed is not None:
            sql, params = _APPEND_PACKED, (session_id, holder, first, release, self.lease_seconds, *packed, self._write_id())
        else:
            sql, params = _APPEND, (
                session_id, holder, first, release, self.lease_seconds,
                [row.turn for row in rows], [row.step for row in rows], [row.kind for row in rows],
                [row.call_id for row in rows], [row.position for row in rows], [row.payload for row in rows],
                [row.at for row in rows], self._write_id(),
            )  # fmt: skip
        if self._closed.is_set():
            raise RuntimeError("the session store is closed")
        with self._pool.connection() as db:
            self._local.connection = db
            try:
                # Through _insert_many, like every insert of the store: one statement, and in autocommit
                # mode its own transaction, committed when it returns.
                self._insert_many(sql, [params])
                self._sent(db)
            except psycopg.Error as exc:
                _refusal(exc, session_id)
                if is_connection_lost(exc):
                    raise OutcomeUnknown("the connection was lost while a commit was in flight") from exc
                raise
            finally:
                self._local.connection = None

    def _sent(self, db: Any) -> None:
        """Called after a sink's commit returned, on its connection (a seam: tests lose the answer here)."""

    def _renew(self, execute: Execute, held: list[tuple[str, str]]) -> None:
        """Every held lease in one statement (one round trip, whatever the number of sessions)."""
        execute(
            f"UPDATE session_leases AS lease SET expires = {self._NOW} + ? "
            "FROM unnest(?::text[], ?::text[]) AS held(session_id, holder) "
            "WHERE lease.session_id = held.session_id AND lease.holder = held.holder",
            (self.lease_seconds, [session for session, _ in held], [holder for _, holder in held]),
        )

    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run ``sql`` for each parameter row, inside the current transaction on this thread's connection."""
        db = self._local.connection
        if len(rows) == 1:
            db.execute(pg_sql(sql), rows[0], prepare=True)
        elif rows:
            with db.cursor() as cursor:
                cursor.executemany(pg_sql(sql), rows)  # pipelined: one round trip

    def _read_back(self, operation: str, write_id: str, args: tuple[Any, ...]) -> Applied[Any] | None:
        """Whether the write ``write_id`` was applied (its id is in ``session_writes``), and what it returned."""
        with self._pool.connection() as db:
            if operation == "_begin_turn":  # the turn it started: its turn/start, inserted in the same transaction
                rows = db.execute(
                    "SELECT e.turn FROM session_writes w JOIN session_events e ON e.xmin = w.xmin "
                    "WHERE w.write_id = %s AND e.session_id = %s AND e.kind = %s",
                    (write_id, args[0], TURN_START),
                ).fetchall()
                return Applied(int(rows[0][0])) if rows else None
            found = db.execute("SELECT 1 FROM session_writes WHERE write_id = %s", (write_id,)).fetchall()
        if not found:
            return None
        return Applied(True if operation == "_revoke_grant" else None)

    def _maybe_prune(self) -> None:
        """Forget write ids older than an hour, at most once per ten minutes (best effort: the next one retries)."""
        if time.monotonic() - self._pruned < _PRUNE_EVERY or not self._prune_lock.acquire(blocking=False):
            return
        try:
            self._pruned = time.monotonic()
            with self._pool.connection() as db:
                db.execute(f"DELETE FROM session_writes WHERE at < {self._NOW} - %s", (_KEEP_WRITES,))
        except Exception:
            pass  # pruning is housekeeping: a failure here must not fail the write that triggered it
        finally:
            self._prune_lock.release()

    def _close_connection(self) -> None:
        self._pool.close(timeout=1.0)


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
    if detail.get("restarted"):
        raise_turn_restarted(session_id, detail["turn"])
    check_new_step(session_id, detail["turn"], detail["step"], set(detail["kinds"]))
