"""The SQL both session stores share; a subclass supplies the connections, the transaction and the dialect.

Operations run on worker threads (``anyio.to_thread``), so the event loop
keeps serving bodies while a commit syncs, on asyncio and trio alike. SQLite
has one connection behind a lock (one file, one writer); PostgreSQL takes a
connection from its pool per operation, so different sessions' writes run on
different connections at once. Every write is one transaction that first
checks the session's lease, so a writer that lost its lease (it was presumed
dead and the session repaired) can never append a second result.

Every operation runs through :func:`~tether_clr.recording.transient.run_with_retries`:
transient faults are retried within ``retry``'s deadline where a retry is safe;
a write whose commit's outcome is unknown (see :data:`_RECOGNISED`) is read
back by its write id, never written twice; past the deadline the caller gets
:class:`~tether_clr.foundations.errors.StoreUnavailableError`.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tether_clr.foundations.incidents import IncidentLog
from tether_clr.recording.session.encoding import (
    PendingEvent,
    check_session_id,
    dumps,
    pending_from,
)
from tether_clr.recording.session.events import (
    APPROVAL_DECIDED,
    APPROVAL_GRANT,
    STEP_END,
    STEP_START,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Durability,
    SessionEvent,
    SessionLeasedError,
)
from tether_clr.recording.session.grants import GrantRecord, find_grant, index_grants, list_grants, revoke_grant
from tether_clr.recording.session.protocol import SessionClaim
from tether_clr.recording.session.refusals import (
    check_new_step,
    raise_lost_lease,
    raise_suspended,
    raise_turn_restarted,
)
from tether_clr.recording.session.repair import plan_repair
from tether_clr.recording.session.sink import SessionSink
from tether_clr.recording.session.writers import WriterClaim, last_and_open_turns, open_sessions, open_turns
from tether_clr.records.grants import GrantKey
from tether_clr.recording.transient import Applied, RetryPolicy, run_with_retries

__all__ = ["Execute", "SqlSessionStore", "free_lease"]

logger = logging.getLogger("tether_clr")

_T = TypeVar("_T")

# Executes one statement inside the current transaction; returns the fetched rows.
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]

# The operations that are not idempotent: each attempt carries a write id (the same across retries) that a
# dialect whose commits can have an unknown outcome records in the transaction and reads back
# (:meth:`SqlSessionStore._read_back`). Every other operation is a read or may simply run again (taking or
# renewing one's own lease, releasing it, repairing).
_RECOGNISED = frozenset({"_begin_turn", "_end_turn", "_commit_rows", "_revoke_grant"})


class SqlSessionStore(ABC):
    """The SQL both stores share; a subclass supplies the connection, the transaction and the dialect.

    ``lease_seconds`` (default 5): how long a session stays leased after its
    writer's last renewal; a writer renews while its batch runs, so the lease
    only runs out after a writer that died. ``durability``: ``"full"`` (default)
    or ``"process"`` (see :data:`~tether_clr.recording.session.events.Durability`).
    ``group_commit`` (default True): buffer a step's events up to each point
    where durability is owed; False commits every event on its own.
    ``retry``: how long transient faults are retried
    (:class:`~tether_clr.recording.transient.RetryPolicy`, default a 3 s deadline).
    """

    _NOW: str  # SQL for the database's clock, in seconds since the epoch
    _FOR_UPDATE: str  # row lock suffix for a SELECT inside a write transaction

    def __init__(
        self, *, lease_seconds: float = 5.0, durability: Durability = "full", group_commit: bool = True,
        retry: RetryPolicy | None = None,
    ) -> None:
        if durability not in ("full", "process"):
            raise ValueError(f"durability must be 'full' or 'process', got {durability!r}")
        if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int | float) or not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be a positive number, got {lease_seconds!r}")
        self.lease_seconds = float(lease_seconds)
        self.durability: Durability = durability
        self.group_commit = bool(group_commit)
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], None] = {}  # (session, holder) leases to renew
        self._renewer: threading.Thread | None = None
        self._closed = threading.Event()
        self.retry = retry if retry is not None else RetryPolicy()
        self._incidents = IncidentLog(logger, "session store")
        self._lease_incidents = IncidentLog(logger, "session store: renewing leases")
        self._local = threading.local()  # the write id of the operation this thread runs

    # ------------------------------------------------------------- dialect
    @abstractmethod
    def _transaction(self) -> Any:
        """A context manager: one write transaction yielding an :data:`Execute`; commits on exit, rolls back on error."""

    @abstractmethod
    def _close_connection(self) -> None: ...

    def _serialized(self) -> AbstractContextManager[Any]:
        """What a transaction holds besides its connection: the store's lock (SQLite's one connection);
        a pooled dialect returns a null context, so its transactions run concurrently."""
        return self._lock

    @contextmanager
    def _write(self) -> Iterator[Execute]:
        with self._serialized():
            if self._closed.is_set():
                raise RuntimeError("the session store is closed")
            with self._transaction() as execute:
                yield execute

    def _write_id(self) -> str | None:
        """The write id of the non-idempotent operation this thread runs (None for any other)."""
        found: str | None = getattr(self._local, "write_id", None)
        return found

    def _read_back(self, operation: str, write_id: str, args: tuple[Any, ...]) -> Applied[Any] | None:
        """Whether the write ``write_id`` of ``operation`` was applied, after its commit's outcome was unknown.

        A dialect whose commits are local (SQLite: a commit either returns or was not applied) never has
        an unknown outcome and keeps this default, which cannot tell (the operation then fails, never
        writing twice).
        """
        return None

    def _retrying(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run one operation (one transaction) with the store's retries: see the module docstring."""
        operation = function.__name__
        if operation not in _RECOGNISED:
            return run_with_retries(
                lambda: function(*args), incidents=self._incidents, policy=self.retry, idempotent=True,
                closed=self._closed.is_set,
            )  # fmt: skip
        write_id = uuid.uuid4().hex

        def attempt() -> _T:
            self._local.write_id = write_id
            try:
                return function(*args)
            finally:
                self._local.write_id = None

        def read_back() -> Applied[_T] | None:
            found: Applied[_T] | None = self._read_back(operation, write_id, args)
            return found

        return run_with_retries(
            attempt, incidents=self._incidents, policy=self.retry, closed=self._closed.is_set, read_back=read_back
        )

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(self._retrying, function, *args)

    # --------------------------------------------------------------- leases
    def _lease(self, execute: Execute, session_id: str, holder: str, *, acquire: bool) -> None:
        """Hold the session's lease for ``holder`` in this transaction, or raise.

        ``acquire``: take the lease if it is free or expired (a writer's first
        commit, or a one-off write such as a turn). Otherwise the lease must still
        be ``holder``'s: one that was taken over (its writer presumed dead and the
        session repaired) fails the write, so no late write follows a repair.
        """
        until = self.lease_seconds
        if acquire:
            execute(
                f"INSERT INTO session_leases (session_id, holder, expires) VALUES (?, ?, {self._NOW} + ?) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id, holder, until),
            )
        rows = execute(
            f"SELECT holder, expires - {self._NOW} FROM session_leases WHERE session_id = ?{self._FOR_UPDATE}", (session_id,)
        )
        if rows and rows[0][0] == holder:
            if acquire:  # a writer's later commits only check it: the renewer keeps it alive
                execute(f"UPDATE session_leases SET expires = {self._NOW} + ? WHERE session_id = ?", (until, session_id))
            return
        if not acquire:
            raise_lost_lease(session_id, None if not rows else rows[0][0])
        current, remaining = rows[0]
        if remaining > 0:
            raise SessionLeasedError(session_id, current, remaining)
        execute(
            f"UPDATE session_leases SET holder = ?, expires = {self._NOW} + ? WHERE session_id = ?", (holder, until, session_id)
        )

    def _renew_forever(self) -> None:
        """Renew every lease the store's writers hold, every third of ``lease_seconds``, until the store closes:
        all of them in one transaction (a replica holding a thousand MCP sessions' leases commits once a tick)."""
        while not self._closed.wait(self.lease_seconds / 3):
            held = list(self._held)
            if not held:
                continue
            try:
                with self._write() as execute:
                    self._renew(execute, held)
            except Exception as exc:
                if self._closed.is_set():
                    return
                self._lease_incidents.failed(exc)  # once per incident, then summed up: never a traceback a tick
            else:
                self._lease_incidents.recovered()

    def _renew(self, execute: Execute, held: list[tuple[str, str]]) -> None:
        """Push back the expiry of each (session, holder) lease in ``held`` that its holder still has."""
        for session_id, holder in held:
            execute(
                f"UPDATE session_leases SET expires = {self._NOW} + ? WHERE session_id = ? AND holder = ?",
                (self.lease_seconds, session_id, holder),
            )

    def _hold(self, session_id: str, holder: str) -> None:
        self._held[(session_id, holder)] = None
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew_forever, name="tether-session-lease", daemon=True)
            self._renewer.start()

    # ------------------------------------------------------- suspended steps
    def _claim(self, session_id: str, holder: str) -> list[SessionEvent]:
        """Take the session's lease for ``holder`` and read its log, in one transaction; the lease is then renewed.

        What resuming or cancelling a suspended step starts with: the log it
        decides from cannot change under it, and no second resumer can run the
        same step (SessionLeasedError while the lease is held).
        """
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=True)
            events = self._read(execute, session_id)
        self._hold(session_id, holder)
        return events

    def _claim_writer(self, session_id: str, holder: str) -> tuple[int, list[int]]:
        """:meth:`_claim`, reading only the session's last turn and its open turns (not its whole log)."""
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=True)
            found = last_and_open_turns(execute, session_id)
        self._hold(session_id, holder)
        return found

    def _open_turns(self, session_id: str) -> list[int]:
        with self._write() as execute:
            return open_turns(execute, session_id)

    def _open_sessions(self, prefix: str) -> list[str]:
        with self._write() as execute:
            return open_sessions(execute, prefix)

    def _release(self, session_id: str, holder: str) -> None:
        self._held.pop((session_id, holder), None)  # first: even if the delete fails, the lease runs out
        with self._write() as execute:
            free_lease(execute, session_id, holder)

    def _release_quietly(self, session_id: str, holder: str) -> None:
        """Release after a failed final write; if the store cannot even do that, the lease
        (no longer renewed) runs out ``lease_seconds`` later, like a dead writer's."""
        try:
            self._retrying(self._release, session_id, holder)
        except Exception as exc:
            self._lease_incidents.failed(exc)  # the lease, no longer renewed, expires lease_seconds later

    # --------------------------------------------------------------- writes
    def _insert(self, execute: Execute, session_id: str, rows: Sequence[PendingEvent]) -> None:
        kinds = [row.kind for row in rows]
        if STEP_START in kinds:
            for index, row in enumerate(rows):
                if row.kind == STEP_START:
                    started = {
                        earlier.kind for earlier in rows[:index]
                        if earlier.turn == row.turn and earlier.step is None and earlier.kind in (TURN_START, TURN_END)
                    }  # fmt: skip
                    self._check_new_step(execute, session_id, row.turn, row.step, started)
        self._insert_many(
            "INSERT INTO session_events (session_id, turn, step, kind, call_id, position, payload, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(session_id, row.turn, row.step, row.kind, row.call_id, row.position, row.payload, row.at) for row in rows],
        )
        if APPROVAL_GRANT in kinds:  # indexed in the same transaction as their events
            index_grants(execute, session_id, rows)

    @abstractmethod
    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """One statement for many rows, in order, inside the current transaction (the writer holds the lock)."""

    def _check_new_step(
        self, execute: Execute, session_id: str, turn: int, step: int | None, in_commit: set[str] | None = None
    ) -> None:
        """Refuse a ``step/start`` unless its turn is open and the step new; ``in_commit``: the turn's events
        written before it in the same commit (a ``turn/start`` its one writer folded into the step's first commit)."""
        kinds = {
            kind
            for (kind,) in execute(
                # Turn events have no step: two index lookups, not a scan of every event of the turn.
                "SELECT kind FROM session_events WHERE session_id = ? AND turn = ? AND step IS NULL AND kind IN (?, ?) "
                "UNION ALL SELECT kind FROM session_events WHERE session_id = ? AND turn = ? AND step = ? AND kind = ?",
                (session_id, turn, TURN_START, TURN_END, session_id, turn, step, STEP_START),
            )
        }
        if in_commit:
            if TURN_START in in_commit and TURN_START in kinds:
                raise_turn_restarted(session_id, turn)
            kinds |= in_commit
        check_new_step(session_id, turn, step, kinds)
        self._refuse_while_suspended(execute, session_id, f"step {step} of turn {turn}")

    def _refuse_while_suspended(self, execute: Execute, session_id: str, what: str) -> None:
        """No new step or turn while a step of the session waits for an approval decision.

        The model has not seen that step's results yet; a later step answered now
        would come before them in the log. A parked call is one whose latest
        ``approval/decided`` says ``deferred`` with no result after it (the
        partial index on decisions keeps this to a handful of rows).
        """
        rows = execute(
            "SELECT d.turn, d.step, d.call_id FROM session_events d WHERE d.session_id = ? AND d.kind = ? "
            "AND d.payload LIKE ? AND NOT EXISTS (SELECT 1 FROM session_events r WHERE r.session_id = d.session_id "
            "AND r.turn = d.turn AND r.step = d.step AND r.position = d.position AND r.seq > d.seq AND r.kind IN (?, ?)) "
            "LIMIT 1",
            (session_id, APPROVAL_DECIDED, '%"decision":"deferred"%', TOOL_RESULT, APPROVAL_DECIDED),
        )
        if rows:
            turn, step, call_id = rows[0]
            raise_suspended(session_id, what, turn, step, call_id)

    def _append(self, session_id: str, holder: str, rows: Sequence[PendingEvent], first: bool, release: bool) -> None:
        """Commit a sink's rows in one transaction that checks (``first``: takes) the lease and, on ``release``, frees it."""
        try:
            self._retrying(self._commit_rows, session_id, holder, rows, first, release)
        except BaseException:
            if release:  # the writer is done either way: never renew its lease again, and free it if we still can
                self._release_quietly(session_id, holder)
            raise
        if release:
            self._held.pop((session_id, holder), None)
        elif first:
            self._hold(session_id, holder)

    def _commit_rows(self, session_id: str, holder: str, rows: Sequence[PendingEvent], first: bool, release: bool) -> None:
        """The transaction of :meth:`_append`: the lease check, the rows in order, the release; all or nothing.

        A dialect may replace it with fewer round trips, keeping exactly these
        semantics (:class:`~tether_clr.PostgresSessionStore` runs it as one
        server-side function call).
        """
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=first)
            self._insert(execute, session_id, rows)
            if release:
                free_lease(execute, session_id, holder)

    def _begin_turn(self, session_id: str, payload: str, held: str | None = None) -> int:
        holder = held or uuid.uuid4().hex
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=held is None)
            ((last,),) = execute("SELECT MAX(turn) FROM session_events WHERE session_id = ?", (session_id,))
            turn = (last or 0) + 1
            self._refuse_while_suspended(execute, session_id, f"turn {turn}")
            self._insert(execute, session_id, [PendingEvent(turn, None, TURN_START, None, None, payload)])
            if held is None:
                free_lease(execute, session_id, holder)
        return turn

    def _end_turn(self, session_id: str, turn: int, held: str | None = None) -> None:
        holder = held or uuid.uuid4().hex
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=held is None)
            rows = execute(
                "SELECT kind, step FROM session_events WHERE session_id = ? AND turn = ? AND kind IN (?, ?, ?)",
                (session_id, turn, TURN_START, TURN_END, STEP_START),
            )
            kinds = [kind for kind, _ in rows]
            if TURN_START not in kinds:
                raise ValueError(f"session {session_id!r} has no turn {turn}")
            if TURN_END in kinds:
                raise ValueError(f"turn {turn} of session {session_id!r} has already ended")
            started = {step for kind, step in rows if kind == STEP_START}
            ended = {
                step
                for (step,) in execute(
                    "SELECT step FROM session_events WHERE session_id = ? AND turn = ? AND kind = ?", (session_id, turn, STEP_END)
                )
            }
            if started - ended:
                raise ValueError(
                    f"turn {turn} of session {session_id!r} has open steps {sorted(started - ended)}: repair the session first"
                )
            self._insert(execute, session_id, [PendingEvent(turn, None, TURN_END, None, None, "{}")])
            if held is None:
                free_lease(execute, session_id, holder)

    def _repair(self, session_id: str, held: str | None = None) -> int:
        holder = held or uuid.uuid4().hex
        with self._write() as execute:
            # raises, changing nothing, while another writer is live (or, ``held``, when that lease was lost)
            self._lease(execute, session_id, holder, acquire=held is None)
            plan = plan_repair(self._read(execute, session_id))
            self._insert(execute, session_id, [pending_from(event) for event in plan])
            if held is None:
                free_lease(execute, session_id, holder)
        return len(plan)

    # ---------------------------------------------------------------- reads
    def _read(self, execute: Execute, session_id: str) -> list[SessionEvent]:
        rows = execute(
            "SELECT seq, session_id, turn, step, kind, call_id, payload, at FROM session_events "
            "WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [
            SessionEvent(seq, session, turn, step, kind, call_id, json.loads(payload), datetime.fromisoformat(at))
            for seq, session, turn, step, kind, call_id, payload, at in rows
        ]

    def _events(self, session_id: str) -> list[SessionEvent]:
        with self._write() as execute:
            return self._read(execute, session_id)

    def _sessions(self) -> list[str]:
        with self._write() as execute:
            return [session for (session,) in execute("SELECT DISTINCT session_id FROM session_events ORDER BY session_id", ())]

    # ----------------------------------------------------------- public API
    async def begin_turn(self, session_id: str, note: Mapping[str, Any] | None = None, *, holder: str | None = None) -> int:
        """Write ``turn/start`` and return the new turn's number (1, 2, ...); SessionLeasedError while a batch holds the session.

        ``note``: a JSON object recorded as the event's payload, for the host's own
        bookkeeping (``tether-clr run`` records where in its script the turn is,
        so ``tether-clr approve`` can continue it after a restart). ``holder``: the
        holder of a lease taken with :meth:`claim` (a writer that keeps its session
        for longer than a turn, e.g. ``tether-clr mcp serve``): the turn is written
        under that lease, which stays held (the write fails if the lease was lost);
        without it the turn takes the lease for its one transaction.
        """
        if note is not None and not isinstance(note, Mapping):
            raise TypeError(f"note must be a mapping (a JSON object), got {type(note).__name__}")
        payload = "{}" if note is None else dumps(dict(note))
        return await self._run(self._begin_turn, check_session_id(session_id), payload, holder)

    async def end_turn(self, session_id: str, turn: int, *, holder: str | None = None) -> None:
        """Write ``turn/end``; ValueError if the turn is unknown, ended, or has a step still open.
        ``holder``: as for :meth:`begin_turn`."""
        await self._run(self._end_turn, check_session_id(session_id), turn, holder)

    def sink(
        self, session_id: str, turn: int, step: int, *, claim: SessionClaim | None = None, holder: str | None = None
    ) -> SessionSink:
        """The sink for one step's batch (``execute_batch(..., sink=store.sink(session, turn, step))``);
        with ``claim``, the sink that continues that suspended step under the claim's lease; with
        ``holder`` (a lease taken with :meth:`claim`), a new step written under that lease, left held."""
        return SessionSink(self, session_id, turn, step, claim=claim, holder=holder)

    async def claim(self, session_id: str) -> SessionClaim:
        """Take the session's lease for a new holder and read its log, in one transaction; the lease is
        renewed until released. What resuming or cancelling a suspended step starts with: the log it
        decides from cannot change under it, and no second resumer can run the same step
        (SessionLeasedError while the lease is held)."""
        session_id = check_session_id(session_id)
        holder = uuid.uuid4().hex
        events = await self._run(self._claim, session_id, holder)
        return SessionClaim(session_id, holder, tuple(events))

    async def claim_writer(self, session_id: str) -> WriterClaim:
        """Take the session's lease for a new holder that will write turns under it (renewed until released),
        reading in the same transaction only its last turn and the turns a crashed writer left open: what
        ``tether-clr mcp serve --db`` opens each MCP session's log with, at a cost that does not grow with
        the session's log (SessionLeasedError while another writer holds it)."""
        session_id = check_session_id(session_id)
        holder = uuid.uuid4().hex
        last, crashed = await self._run(self._claim_writer, session_id, holder)
        return WriterClaim(session_id, holder, last, tuple(crashed))

    async def open_turns(self, session_id: str) -> list[int]:
        """The session's turns that started and never ended (what a crash leaves), in order."""
        return await self._run(self._open_turns, check_session_id(session_id))

    async def open_sessions(self, prefix: str = "") -> list[str]:
        """The sessions whose names start with ``prefix`` that have a turn started and never ended, sorted: what
        a replica repairs before serving, found in one query rather than by reading every session's log."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        return await self._run(self._open_sessions, prefix)

    async def append(
        self, session_id: str, holder: str, events: Sequence[PendingEvent], *, first: bool, release: bool
    ) -> None:
        """Commit ``events`` in one transaction that checks (``first``: takes) ``holder``'s lease and,
        on ``release``, frees it; all or nothing. A release that fails still stops renewing the lease."""
        await anyio.to_thread.run_sync(self._append, session_id, holder, events, first, release)  # retries inside

    async def release(self, session_id: str, holder: str) -> None:
        """Free ``holder``'s lease on the session (nothing if it no longer holds it)."""
        await self._run(self._release, session_id, holder)

    async def events(self, session_id: str) -> list[SessionEvent]:
        """The session's log in sequence order."""
        return await self._run(self._events, check_session_id(session_id))

    async def sessions(self) -> list[str]:
        """Every session with at least one event, sorted (what ``tether-clr log verify`` checks)."""
        return await self._run(self._sessions)

    async def repair(self, session_id: str, *, holder: str | None = None) -> int:
        """Close what a crash left open (see :mod:`tether_clr.session.repair`); returns how many events it appended.

        Idempotent. Raises :class:`SessionLeasedError`, changing nothing, while a
        live writer holds the session's lease. ``holder``: repair under a lease this
        writer took with :meth:`claim` (a replica resuming its session after a crash),
        which stays held.
        """
        return await self._run(self._repair, check_session_id(session_id), holder)

    # ---------------------------------------------------------------- grants
    def _find_grant(self, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> GrantRecord | None:
        with self._write() as execute:
            return find_grant(execute, tenant_id, principal_id, session_id, key)

    def _grants(self, tenant_id: str | None, principal_id: str | None, session_id: str | None, include_revoked: bool) -> list[GrantRecord]:
        with self._write() as execute:
            return list_grants(execute, tenant_id, principal_id, session_id, include_revoked)

    def _revoke_grant(self, grant_id: str, reason: str | None) -> bool:
        with self._write() as execute:
            return revoke_grant(execute, self._insert, grant_id, reason)

    async def find_grant(self, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> GrantRecord | None:
        """The latest live grant that decides a call of ``key`` by that tenant and principal in that session
        (its own session's grants, and the principal's in any session of the tenant), or None."""
        return await self._run(self._find_grant, tenant_id, principal_id, check_session_id(session_id), key)

    async def grants(
        self, *, tenant_id: str | None = None, principal_id: str | None = None, session_id: str | None = None,
        include_revoked: bool = False,
    ) -> list[GrantRecord]:
        """The remembered approval answers that fit every filter given, oldest first (live ones only by default)."""
        return await self._run(self._grants, tenant_id, principal_id, session_id, include_revoked)

    async def revoke_grant(self, grant_id: str, reason: str | None = None) -> bool:
        """End a grant: the next matching call asks the provider again. Recorded as ``approval/revoke`` in the
        grant's session log (no lease needed: it belongs to no step). False, writing nothing, when no live
        grant has that id."""
        if not isinstance(grant_id, str) or not grant_id:
            raise ValueError(f"grant_id must be a non-empty str, got {grant_id!r}")
        return await self._run(self._revoke_grant, grant_id, reason)

    def close(self) -> None:
        """Stop renewing leases and close the connection(s); a batch still writing then fails (SinkError)."""
        with self._serialized():
            self._closed.set()
            self._close_connection()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_S = TypeVar("_S", bound=SqlSessionStore)


def free_lease(execute: Execute, session_id: str, holder: str) -> None:
    """Release ``holder``'s lease on the session inside the current transaction (nothing if it is not the holder)."""
    execute("DELETE FROM session_leases WHERE session_id = ? AND holder = ?", (session_id, holder))
