"""The session store: the protocol, the SQL machinery both stores share, and the batch sink.

One writer per store: a single connection behind a lock, used from worker
threads (``anyio.to_thread``), so the event loop keeps serving bodies while a
commit syncs, on asyncio and trio alike. Every write is one transaction that
first checks the session's lease, so a writer that lost its lease (it was
presumed dead and the session repaired) can never append a second result.

Group commit: a :class:`SessionSink` buffers the events of a step and commits
them at the points where durability is owed: :meth:`SessionSink.flush`, which
``execute_batch`` awaits before the first body of each group starts (so the
declarations of a parallel group, and the result of the previous exclusive call,
are one transaction), before waiting for a body still running (so results that
are ready together are one transaction), and :meth:`SessionSink.batch_finished`.
With ``group_commit=False`` every event is its own transaction (the baseline the
benchmark compares against).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol, TypeVar

import anyio
import anyio.to_thread

from ..batch import current_declaration
from ..decisions import ApprovalResult
from ..outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from ..text import safe_text_or_value
from .events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_MESSAGE,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Durability,
    SessionEvent,
    SessionLeasedError,
    call_fingerprint,
)
from .repair import NewEvent, plan_repair

__all__ = ["SessionSink", "SessionStore", "SqlSessionStore", "call_payload", "result_payload", "schema"]

logger = logging.getLogger("tether_clr")

_T = TypeVar("_T")

# Executes one statement inside the current transaction; returns the fetched rows.
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


class SessionStore(Protocol):
    """Where sessions are logged. :class:`SqliteSessionStore` and :class:`PostgresSessionStore` implement it."""

    lease_seconds: float
    durability: Durability

    async def begin_turn(self, session_id: str, note: Mapping[str, Any] | None = None) -> int: ...

    async def end_turn(self, session_id: str, turn: int) -> None: ...

    def sink(self, session_id: str, turn: int, step: int) -> SessionSink: ...

    async def events(self, session_id: str) -> list[SessionEvent]: ...

    async def sessions(self) -> list[str]: ...

    async def repair(self, session_id: str) -> int: ...

    def close(self) -> None: ...


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


_SECOND: tuple[int, str] = (-1, "")  # the last whole second formatted by _now, and its text


def _now() -> str:
    """``datetime.now(UTC).isoformat(timespec="microseconds")``, formatting the date and time once per second."""
    global _SECOND
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _SECOND
    if cached[0] != second:
        cached = _SECOND = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{cached[1]}.{micro:06d}+00:00"


def _column(text: str | None) -> str | None:
    """Text for an indexed column: valid Unicode, no NUL (PostgreSQL refuses both)."""
    if text is None:
        return None
    text = safe_text_or_value(text)
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


class _Row:
    """An event waiting in a sink's buffer: its payload is already JSON text."""

    __slots__ = ("turn", "step", "kind", "call_id", "position", "payload", "at")

    def __init__(self, turn: int, step: int | None, kind: str, call_id: str | None, position: int | None, payload: str) -> None:
        self.turn, self.step, self.kind = turn, step, kind
        self.call_id, self.position, self.payload, self.at = _column(call_id), position, payload, _now()


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _dumps(payload: dict[str, Any]) -> str:
    """Compact ASCII JSON (one shared encoder: ``json.dumps`` with options builds a new one per call)."""
    return _ENCODER.encode(payload)


def _new_row(event: NewEvent) -> _Row:
    return _Row(event.turn, event.step, event.kind, event.call_id, event.position, _dumps(event.payload))


class SqlSessionStore(ABC):
    """The SQL both stores share; a subclass supplies the connection, the transaction and the dialect.

    ``lease_seconds`` (default 5): how long a session stays leased after its
    writer's last renewal; a writer renews while its batch runs, so the lease
    only runs out after a writer that died. ``durability``: ``"full"`` (default)
    or ``"process"`` (see :data:`~tether_clr.session.Durability`).
    ``group_commit`` (default True): buffer a step's events up to each point
    where durability is owed; False commits every event on its own.
    """

    _NOW: str  # SQL for the database's clock, in seconds since the epoch
    _FOR_UPDATE: str  # row lock suffix for a SELECT inside a write transaction

    def __init__(self, *, lease_seconds: float = 5.0, durability: Durability = "full", group_commit: bool = True) -> None:
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

    # ------------------------------------------------------------- dialect
    @abstractmethod
    def _transaction(self) -> Any:
        """A context manager: one write transaction yielding an :data:`Execute`; commits on exit, rolls back on error."""

    @abstractmethod
    def _close_connection(self) -> None: ...

    @contextmanager
    def _write(self) -> Iterator[Execute]:
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the session store is closed")
            with self._transaction() as execute:
                yield execute

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(function, *args)

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
        """Renew every lease a running batch holds, every third of ``lease_seconds``, until the store closes."""
        while not self._closed.wait(self.lease_seconds / 3):
            for session_id, holder in list(self._held):
                try:
                    with self._write() as execute:
                        execute(
                            f"UPDATE session_leases SET expires = {self._NOW} + ? WHERE session_id = ? AND holder = ?",
                            (self.lease_seconds, session_id, holder),
                        )
                except Exception:
                    if self._closed.is_set():
                        return
                    logger.warning("renewing the lease on session %r failed", session_id, exc_info=True)

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

    def _release(self, session_id: str, holder: str) -> None:
        self._held.pop((session_id, holder), None)  # first: even if the delete fails, the lease runs out
        with self._write() as execute:
            _free_lease(execute, session_id, holder)

    def _release_quietly(self, session_id: str, holder: str) -> None:
        """Release after a failed final write; if the store cannot even do that, the lease
        (no longer renewed) runs out ``lease_seconds`` later, like a dead writer's."""
        try:
            self._release(session_id, holder)
        except Exception:
            logger.warning("releasing the lease on session %r failed; it expires in %.1f s", session_id,
                           self.lease_seconds, exc_info=True)

    # --------------------------------------------------------------- writes
    def _insert(self, execute: Execute, session_id: str, rows: Sequence[_Row]) -> None:
        for row in rows:
            if row.kind == STEP_START:
                self._check_new_step(execute, session_id, row.turn, row.step)
        self._insert_many(
            "INSERT INTO session_events (session_id, turn, step, kind, call_id, position, payload, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(session_id, row.turn, row.step, row.kind, row.call_id, row.position, row.payload, row.at) for row in rows],
        )

    @abstractmethod
    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """One statement for many rows, in order, inside the current transaction (the writer holds the lock)."""

    def _check_new_step(self, execute: Execute, session_id: str, turn: int, step: int | None) -> None:
        kinds = {
            kind
            for (kind,) in execute(
                # Turn events have no step: two index lookups, not a scan of every event of the turn.
                "SELECT kind FROM session_events WHERE session_id = ? AND turn = ? AND step IS NULL AND kind IN (?, ?) "
                "UNION ALL SELECT kind FROM session_events WHERE session_id = ? AND turn = ? AND step = ? AND kind = ?",
                (session_id, turn, TURN_START, TURN_END, session_id, turn, step, STEP_START),
            )
        }
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

    def _append(self, session_id: str, holder: str, rows: Sequence[_Row], first: bool, release: bool) -> None:
        """Commit a sink's rows in one transaction that checks (``first``: takes) the lease and, on ``release``, frees it."""
        try:
            self._commit_rows(session_id, holder, rows, first, release)
        except BaseException:
            if release:  # the writer is done either way: never renew its lease again, and free it if we still can
                self._release_quietly(session_id, holder)
            raise
        if release:
            self._held.pop((session_id, holder), None)
        elif first:
            self._hold(session_id, holder)

    def _commit_rows(self, session_id: str, holder: str, rows: Sequence[_Row], first: bool, release: bool) -> None:
        """The transaction of :meth:`_append`: the lease check, the rows in order, the release; all or nothing.

        A dialect may replace it with fewer round trips, keeping exactly these
        semantics (:class:`~tether_clr.session.PostgresSessionStore` runs it as one
        server-side function call).
        """
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=first)
            self._insert(execute, session_id, rows)
            if release:
                _free_lease(execute, session_id, holder)

    def _begin_turn(self, session_id: str, payload: str) -> int:
        holder = uuid.uuid4().hex
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=True)
            ((last,),) = execute("SELECT MAX(turn) FROM session_events WHERE session_id = ?", (session_id,))
            turn = (last or 0) + 1
            self._refuse_while_suspended(execute, session_id, f"turn {turn}")
            self._insert(execute, session_id, [_Row(turn, None, TURN_START, None, None, payload)])
            _free_lease(execute, session_id, holder)
        return turn

    def _end_turn(self, session_id: str, turn: int) -> None:
        holder = uuid.uuid4().hex
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=True)
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
            self._insert(execute, session_id, [_Row(turn, None, TURN_END, None, None, "{}")])
            _free_lease(execute, session_id, holder)

    def _repair(self, session_id: str) -> int:
        holder = uuid.uuid4().hex
        with self._write() as execute:
            self._lease(execute, session_id, holder, acquire=True)  # raises, changing nothing, while a writer is live
            plan = plan_repair(self._read(execute, session_id))
            self._insert(execute, session_id, [_new_row(event) for event in plan])
            _free_lease(execute, session_id, holder)
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
    async def begin_turn(self, session_id: str, note: Mapping[str, Any] | None = None) -> int:
        """Write ``turn/start`` and return the new turn's number (1, 2, ...); SessionLeasedError while a batch holds the session.

        ``note``: a JSON object recorded as the event's payload, for the host's own
        bookkeeping (``tether-clr run`` records where in its script the turn is,
        so ``tether-clr approve`` can continue it after a restart).
        """
        if note is not None and not isinstance(note, Mapping):
            raise TypeError(f"note must be a mapping (a JSON object), got {type(note).__name__}")
        payload = "{}" if note is None else _dumps(dict(note))
        return await self._run(self._begin_turn, _session(session_id), payload)

    async def end_turn(self, session_id: str, turn: int) -> None:
        """Write ``turn/end``; ValueError if the turn is unknown, ended, or has a step still open."""
        await self._run(self._end_turn, _session(session_id), turn)

    def sink(self, session_id: str, turn: int, step: int) -> SessionSink:
        """The sink for one step's batch (``execute_batch(..., sink=store.sink(session, turn, step))``)."""
        for name, number in (("turn", turn), ("step", step)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{name} must be a positive int, got {number!r}")
        return SessionSink(self, _session(session_id), turn, step)

    async def events(self, session_id: str) -> list[SessionEvent]:
        """The session's log in sequence order."""
        return await self._run(self._events, _session(session_id))

    async def sessions(self) -> list[str]:
        """Every session with at least one event, sorted (what ``tether-clr log verify`` checks)."""
        return await self._run(self._sessions)

    async def repair(self, session_id: str) -> int:
        """Close what a crash left open (see :mod:`tether_clr.session.repair`); returns how many events it appended.

        Idempotent. Raises :class:`SessionLeasedError`, changing nothing, while a
        live writer holds the session's lease.
        """
        return await self._run(self._repair, _session(session_id))

    def close(self) -> None:
        """Stop renewing leases and close the connection; a batch still writing then fails (SinkError)."""
        with self._lock:
            self._closed.set()
            self._close_connection()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_S = TypeVar("_S", bound=SqlSessionStore)


class _LostLease(Exception):
    """The cause of a SessionLeasedError raised to a writer whose lease was taken over."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"the writer's lease on session {session_id!r} was taken over (it was presumed dead)")


def _free_lease(execute: Execute, session_id: str, holder: str) -> None:
    """Release ``holder``'s lease on the session inside the current transaction (nothing if it is not the holder)."""
    execute("DELETE FROM session_leases WHERE session_id = ? AND holder = ?", (session_id, holder))


def raise_lost_lease(session_id: str, holder: str | None) -> NoReturn:
    """Refuse a write whose writer no longer holds the session's lease (``holder`` holds it now, if anyone)."""
    raise SessionLeasedError(session_id, holder) from _LostLease(session_id)


def check_new_step(session_id: str, turn: int, step: int | None, kinds: set[str]) -> None:
    """Raise ValueError unless a step may start: ``kinds`` are the turn's turn/start, turn/end and this step's step/start found."""
    if TURN_START not in kinds:
        raise ValueError(f"session {session_id!r} has no turn {turn} (call begin_turn first)")
    if TURN_END in kinds:
        raise ValueError(f"turn {turn} of session {session_id!r} has ended")
    if STEP_START in kinds:
        raise ValueError(f"step {step} of turn {turn} of session {session_id!r} was already started")


def raise_suspended(session_id: str, what: str, turn: int, step: int, call_id: str | None) -> NoReturn:
    """Refuse to start ``what`` (a step or a turn) while call ``call_id`` of ``turn``, ``step`` waits for a decision."""
    raise ValueError(
        f"cannot start {what} of session {session_id!r}: call {call_id!r} of turn {turn}, step {step} "
        "waits for an approval decision (resume or cancel_suspended it first)"
    )


def _session(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty str, got {session_id!r}")
    return session_id


def _failure_fields(outcome: ToolExecutionOutcome) -> dict[str, Any]:
    failure = outcome.failure
    if failure is None:
        return {"ok": True}
    return {"ok": False, "code": str(failure.code), "reason": getattr(failure, "reason", None), "message": failure.message}


def call_payload(position: int, call: ToolCall) -> str:
    """A ``tool/call`` payload as JSON text: position, name, the declared argument text, parent call."""
    return _dumps({"index": position, "name": call.name, "arguments": call.arguments, "parent_call_id": call.parent_call_id})


def result_payload(position: int, outcome: ToolExecutionOutcome) -> str:
    """A ``tool/result`` payload as JSON text: position, name, failure fields, and the value.

    The value is already canonical JSON text: spliced in, not parsed and dumped again.
    """
    fields = {"index": position, "name": outcome.name, **_failure_fields(outcome)}
    return _dumps(fields)[:-1] + ',"value":' + outcome.value_json + "}"


class SessionSink:
    """The batch sink of one step: ``execute_batch`` drives it through its hooks.

    ``parks_approvals`` is True: a call whose approval is deferred can be parked
    here, because the log is what :meth:`ToolRegistry.resume` continues from.

    ``batch_started(calls)`` buffers ``step/start`` and ``assistant/message``
    (every proposed call, raw arguments and position included, so the step can
    be repaired or resumed from the log alone); ``call_declared`` ``tool/call``;
    ``approval_asked`` / ``approval_decided`` the approval events, with the
    exact arguments and their fingerprint; ``outcome_ready`` ``tool/result`` in
    model order; ``batch_finished`` ``step/end`` (only if every proposed call was
    declared and has its result: a step an infrastructure fault stopped stays open for
    :meth:`SessionStore.repair`) and releases the lease. ``flush`` makes every
    buffered event durable. The first write takes the session's lease, which is
    renewed while the batch runs and released when it returns.
    """

    parks_approvals = True

    def __init__(self, store: SqlSessionStore, session_id: str, turn: int, step: int) -> None:
        self._store = store
        self.session_id, self.turn, self.step = session_id, turn, step
        self._holder = uuid.uuid4().hex
        self._pending: list[_Row] = []
        self._flushing: anyio.Lock | None = None
        self._leased = False
        self._finished = False
        self._declared: set[int] = set()
        self._answered: set[int] = set()
        self._next_position = 0
        self._proposed = 0

    @classmethod
    def _resuming(
        cls, store: SqlSessionStore, session_id: str, turn: int, step: int, holder: str,
        declared: Iterable[int], answered: Iterable[int], proposed: int,
    ) -> SessionSink:
        """The sink that continues a suspended step, under the lease ``holder`` already took (:meth:`SqlSessionStore._claim`)."""
        sink = cls(store, session_id, turn, step)
        sink._holder, sink._leased = holder, True
        sink._declared, sink._answered, sink._proposed = set(declared), set(answered), proposed
        sink._next_position = max(sink._declared, default=-1) + 1
        return sink

    # ------------------------------------------------------------ buffering
    def _add(self, kind: str, call_id: str | None, position: int | None, payload: str) -> None:
        if self._finished:
            raise RuntimeError(f"the sink of step {self.step} of session {self.session_id!r} has finished")
        self._pending.append(_Row(self.turn, self.step, kind, call_id, position, payload))

    async def _added(self) -> None:
        if not self._store.group_commit:
            await self.flush()

    def _position(self, declaring: bool) -> int:
        declaration = current_declaration()
        if declaration is not None:
            return declaration.index
        if declaring:  # outside execute_batch: positions follow the declarations
            self._next_position += 1
            return self._next_position - 1
        return min(self._declared - self._answered, default=self._next_position)

    async def flush(self) -> None:
        """Commit every buffered event in one transaction (the first one takes the lease)."""
        if self._flushing is None:
            self._flushing = anyio.Lock()
        async with self._flushing:
            if not self._pending:
                return
            rows, self._pending = self._pending, []
            await self._store._run(self._store._append, self.session_id, self._holder, rows, not self._leased, False)
            self._leased = True

    # ---------------------------------------------------------------- hooks
    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        proposal = [
            {
                "index": index,
                "call_id": safe_text_or_value(call.call_id),
                "name": safe_text_or_value(call.name),
                "arguments": safe_text_or_value(call.arguments),
                "parent_call_id": safe_text_or_value(call.parent_call_id),
                **({} if call.argument_error is None else {"argument_error": safe_text_or_value(call.argument_error)}),
            }
            for index, call in enumerate(calls)
        ]
        self._proposed = len(proposal)
        self._add(STEP_START, None, None, _dumps({"calls": len(proposal)}))
        self._add(ASSISTANT_MESSAGE, None, None, _dumps({"calls": proposal}))
        await self._added()

    async def call_declared(self, call: ToolCall) -> None:
        position = self._position(True)
        self._declared.add(position)
        self._add(TOOL_CALL, call.call_id, position, call_payload(position, call))
        await self._added()

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        position = self._position(False)
        payload = {
            "index": position,
            "name": execution.name,
            "arguments": execution.arguments_json,
            "fingerprint": call_fingerprint(execution.name, execution.arguments_json),
            "reason": reason,
            # Who asked: what resuming the step assembles the catalog for again (no secrets: the
            # request context is identity and claimed scopes).
            "context": None if execution.context is None else {**execution.context.identity(), "request_id": execution.context.request_id},
            "owner": execution.owner if isinstance(execution.owner, str) else None,
        }
        self._add(APPROVAL_ASKED, execution.call_id, position, _dumps(payload))
        await self._added()

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        decision = result.value if isinstance(result, ApprovalResult) else "invalid"
        position = self._position(False)
        payload = {
            "index": position,
            "name": execution.name,
            "decision": decision,
            "fingerprint": call_fingerprint(execution.name, execution.arguments_json),
        }
        self._add(APPROVAL_DECIDED, execution.call_id, position, _dumps(payload))
        await self._added()

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        position = self._position(False)
        self._answered.add(position)
        self._add(TOOL_RESULT, outcome.call_id, position, result_payload(position, outcome))
        await self._added()

    async def _release_unfinished(self) -> None:
        """Release the lease of a sink whose batch never finished (a resumed step cancelled before it started)."""
        if self._finished or not self._leased:
            return
        self._finished, self._leased, self._pending = True, False, []
        await self._store._run(self._store._release, self.session_id, self._holder)

    async def batch_finished(self) -> None:
        """Write ``step/end`` when every proposed call was declared and answered, commit, and release the lease."""
        if self._finished:
            return
        if self._declared <= self._answered and len(self._declared) >= self._proposed:
            self._add(STEP_END, None, None, _dumps({"calls": len(self._declared)}))
        self._finished = True
        if self._flushing is None:
            self._flushing = anyio.Lock()
        async with self._flushing:
            rows, self._pending = self._pending, []
            if not rows and not self._leased:
                return
            await self._store._run(self._store._append, self.session_id, self._holder, rows, not self._leased, True)
            self._leased = False
