"""``tether-clr mcp serve``: the tools ``run`` would load, served over MCP (stdio or streamable HTTP).

Identity is the host's: a fixed :class:`~tether_clr.RequestContext` (``--tenant``,
``--principal``, ``--scope``) for every request, or ``--context module:attr``, a
``context_for(request)`` callable (sync or async) given each
:class:`~tether_clr.mcp.McpRequest`. With neither the command refuses to start.

``--db``: every call is recorded in the session log. :class:`LogSessions` maps
each MCP session to a log session of its own (the server's ``sink_for``), which
the replica holds the lease of for as long as the MCP session lasts; each call is
a turn of it with one step, recorded by a :class:`SessionCallSink`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from tether_clr.recording.session.encoding import dumps
from tether_clr.recording.session.events import SessionLeasedError
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.writers import WriterClaim
from tether_clr.recording.session.sink import SessionSink
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["LogSessions", "SessionCallSink", "caller_digest", "fixed_context"]


def fixed_context(context: RequestContext) -> Callable[[Any], RequestContext]:
    """A ``context_for`` that gives every request the same context (a trusted, single-user host)."""

    def context_for(_request: Any) -> RequestContext:
        return context

    return context_for


def caller_digest(context: RequestContext) -> str:
    """Twelve hex digits naming ``context``'s tenant and principal in a log session's name: two tenants whose
    host gives their conversations the same ``session_id`` never share a log session (nor its lease)."""
    return hashlib.sha256(f"{context.tenant_id}\0{context.principal_id}".encode()).hexdigest()[:12]


class SessionCallSink:
    """The sink of one log session for ``--db``: each call (each one-call batch) is a turn of ``session_id``
    with one step, recorded by the store's own step sink, so the log passes ``log_violations``.

    A session's turns follow one another, so calls are recorded one at a time: a call
    waits until the one before it has finished (its turn is closed) before its own turn
    starts. ``holder``: the lease this writer took with ``store.claim`` and holds for the
    whole MCP session; every turn and step is written under it (none takes or frees a
    lease of its own), so ``log repair`` cannot close a turn while it runs. Without it,
    each turn and step takes the lease for itself. ``parks_approvals`` is False: an MCP
    request cannot wait for a later decision, so a ``DEFERRED`` approval fails closed
    (UNAVAILABLE) instead of parking the call.
    """

    parks_approvals = False

    def __init__(
        self, store: SqlSessionStore, session_id: str, *, holder: str | None = None, last_turn: int | None = None
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.holder = holder
        self._one_at_a_time: anyio.Semaphore | None = None
        self._turn: int | None = None
        self._step: SessionSink | None = None
        # The session's last turn, while this writer knows it (it holds the lease, so no one else adds a turn;
        # ``last_turn``: read with the lease, by the claim): the next turn opens in the commit of its step.
        # None: ask the store (begin_turn), as after a call whose turn was not committed whole.
        self._last_turn: int | None = None if holder is None else last_turn
        # A call of this writer ended without its turn committed whole (a commit failed, or its outcome is
        # unknown): that turn may be open. It is repaired under the held lease before another turn starts.
        self.unsettled = False
        self._held = False

    def _semaphore(self) -> anyio.Semaphore:
        if self._one_at_a_time is None:
            self._one_at_a_time = anyio.Semaphore(1)
        return self._one_at_a_time

    def _current(self) -> SessionSink:
        if self._step is None:
            raise RuntimeError("a sink hook was called outside a batch")
        return self._step

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        await self._semaphore().acquire()
        self._held = True
        try:
            if self.unsettled:  # never a new turn behind one that may be open: close it first (or refuse)
                await self.settle()
            note = {"mcp": {"calls": [call.name for call in calls]}}
            last, self._last_turn = self._last_turn, None  # unknown again until this turn is committed whole
            if self.holder is None:
                self._turn = await self.store.begin_turn(self.session_id, note)
                self._step = self.store.sink(self.session_id, self._turn, 1)
            elif last is None:
                self._turn = await self.store.begin_turn(self.session_id, note, holder=self.holder)
                self._step = SessionSink(self.store, self.session_id, self._turn, 1, holder=self.holder, ends_turn=True)
            else:  # the session's one writer: its turn opens and closes in the commits of its one step
                self._turn = last + 1
                self._step = SessionSink(self.store, self.session_id, self._turn, 1, holder=self.holder,
                                         starts_turn=dumps(note), ends_turn=True)  # fmt: skip
            await self._step.batch_started(calls)
        except BaseException:
            await self._finish()
            raise

    async def call_declared(self, call: ToolCall) -> None:
        await self._current().call_declared(call)

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        await self._current().approval_asked(execution, reason)

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        await self._current().approval_decided(execution, result)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        await self._current().outcome_ready(outcome)

    async def flush(self) -> None:
        await self._current().flush()

    async def batch_finished(self) -> None:
        """Close the step and the turn, then let the next call start its turn."""
        if not self._held:
            return
        try:
            await self._current().batch_finished()
        finally:
            await self._finish()

    async def _finish(self) -> None:
        turn, step, self._turn, self._step = self._turn, self._step, None, None
        try:
            if step is not None and step.turn_ended:
                self._last_turn = turn
            elif self.holder is not None:
                # The turn may be open. The store is failing (why we are here): it is repaired before the next
                # call starts its turn, or when the session closes, not now (a call refused in an outage is
                # answered after one attempt at the store, not two).
                self.unsettled = True
            elif turn is not None:  # a writer without a held lease: begin_turn wrote turn/start, so end it
                with anyio.CancelScope(shield=True):
                    await self.store.end_turn(self.session_id, turn)
        finally:
            if self._held and self._one_at_a_time is not None:
                self._held = False
                self._one_at_a_time.release()

    async def settle(self) -> None:
        """Close what a call that ended uncommitted may have left open (``store.repair`` under the held lease,
        idempotent: nothing when the turn never started or did end); raises, leaving ``unsettled``, when the
        store cannot."""
        await self.store.repair(self.session_id, holder=self.holder)
        self.unsettled = False

    async def idle(self) -> None:
        """Wait until no call of this session is being recorded (what closing the session waits for)."""
        async with self._semaphore():
            pass


CLOSE_WAIT = 10.0
"""Seconds closing a log session waits for the call being recorded (shutdown has cancelled it already)."""


class _Open:
    """One log session open on this replica: its sink, and how many connections use it."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0
        self.sink: SessionCallSink | None = None


class LogSessions:
    """Which log session each MCP session's calls are recorded in (``mcp serve --db``); the server's ``sink_for``.

    * ``fixed``: every call goes to that one session (``--session`` over stdio, whose
      one connection is the one MCP session).
    * otherwise ``prefix``: a handshake-era MCP session is ``<prefix>-<Mcp-Session-Id>``
      over HTTP (``<prefix>-<fresh id>`` for a connection without one); a 2026-07-28
      request, which has no session, is ``<prefix>-<caller>-<context.session_id>`` when
      the host's ``context_for`` names one (that client's requests share it; ``caller``:
      :func:`caller_digest`, so tenants never share one), else a log session of its own,
      ``<prefix>-<fresh id>``.

    :meth:`start` (before serving) repairs what a crash left open, and takes the
    fixed session's lease for the replica's lifetime. Opening a prefix's log session
    takes its lease (``store.claim``), renewed by the store until the session closes,
    and first repairs a turn a crashed writer left open (``notify`` says so). Closing it (the connection ended) waits for the call
    being recorded, then frees the lease. Connections that map to the same log
    session share it, and their calls are its turns one at a time; different log
    sessions never wait on one another here.
    """

    def __init__(
        self, store: SqlSessionStore, *, prefix: str | None = None, fixed: str | None = None,
        notify: Callable[[str], None] = lambda _message: None,
    ) -> None:
        if (prefix is None) == (fixed is None):
            raise ValueError("give a prefix or a fixed session, exactly one")
        self.store, self.prefix, self.fixed, self.notify = store, prefix, fixed, notify
        self._open: dict[str, _Open] = {}
        self._fixed_sink: SessionCallSink | None = None
        self._fixed_repaired = False

    async def start(self) -> list[str]:
        """Before serving: repair what a crash left open in this replica's sessions, saying so; returns them.

        ``fixed``: take the session's lease for the replica's lifetime first (a crashed
        writer's lease runs out within ``lease_seconds``: this waits for it, up to twice
        that; :class:`SessionLeasedError` when a live writer keeps it), then repair
        under it. ``prefix``: repair every ``<prefix>-*`` session whose last turn is
        open, except those a live writer holds (another replica's, or one crashed less
        than ``lease_seconds`` ago: ``log repair`` them later).
        """
        if self.fixed is not None:
            deadline = anyio.current_time() + 2 * self.store.lease_seconds + 1
            while True:
                try:
                    claim = await self.store.claim_writer(self.fixed)
                    break
                except SessionLeasedError as exc:
                    left = exc.expires_in if exc.expires_in is not None else self.store.lease_seconds
                    if anyio.current_time() + left > deadline:
                        raise
                    self.notify(f"session {self.fixed} is leased by another writer for {left:.1f} s more; "
                                "waiting for the lease to run out (a crashed replica's does)")  # fmt: skip
                    await anyio.sleep(left + 0.05)
            self._fixed_sink = await self._opened(claim)
            return [self.fixed] if self._fixed_repaired else []
        start = f"{self.prefix}-"
        repaired = []
        for name in await self.store.open_sessions(start):  # one query, not every session's log
            crashed = await self.store.open_turns(name)
            if not crashed:
                continue
            try:
                appended = await self.store.repair(name)
            except SessionLeasedError:
                self.notify(f"session {name}: turn(s) {_turns(crashed)} open, but a live writer holds it; left alone")
                continue
            self.notify(f"session {name}: repaired the turn(s) {_turns(crashed)} a crash left open "
                        f"({appended} event(s) appended) before serving")  # fmt: skip
            repaired.append(name)
        return repaired

    async def stop(self) -> None:
        """After serving: free the fixed session's lease (a prefix's sessions are freed as their connections end)."""
        sink, self._fixed_sink = self._fixed_sink, None
        if sink is not None:
            await self.close(sink)

    def session_for(self, request: Any, context: RequestContext) -> str:
        """The log session of a connection whose first call is ``request`` by ``context``."""
        if self.fixed is not None:
            return self.fixed
        mcp_session = getattr(request, "session_id", None)
        if mcp_session:  # the server made it for this connection: one client's, whoever it is
            return f"{self.prefix}-{mcp_session}"
        if context.session_id:  # the host's name for a conversation: kept apart per tenant and principal
            return f"{self.prefix}-{caller_digest(context)}-{context.session_id}"
        return f"{self.prefix}-{uuid.uuid4().hex[:16]}"

    @asynccontextmanager
    async def sink_for(self, request: Any, context: RequestContext) -> AsyncIterator[SessionCallSink]:
        """The server's ``sink_for``: the connection's log session, open while the connection lasts."""
        if self.fixed is not None:
            if self._fixed_sink is None:
                raise RuntimeError("LogSessions.start() was not awaited before serving")
            yield self._fixed_sink
            return
        name = self.session_for(request, context)
        entry = self._open.setdefault(name, _Open())
        entry.users += 1
        try:
            async with entry.lock:
                if entry.sink is None:
                    entry.sink = await self.open(name)
            sink = entry.sink
        except BaseException:
            await self._leave(name, entry)
            raise
        try:
            yield sink
        finally:
            await self._leave(name, entry)

    async def _leave(self, name: str, entry: _Open) -> None:
        entry.users -= 1
        with anyio.CancelScope(shield=True):
            async with entry.lock:
                if entry.users == 0:
                    sink, entry.sink = entry.sink, None
                    if sink is not None:
                        await self.close(sink)
                    if entry.users == 0 and self._open.get(name) is entry:
                        del self._open[name]

    async def open(self, name: str) -> SessionCallSink:
        """Take ``name``'s lease (SessionLeasedError while another writer holds it), repair a turn a crash
        left open under it, and give the sink that writes under it."""
        return await self._opened(await self.store.claim_writer(name))

    async def _opened(self, claim: WriterClaim) -> SessionCallSink:
        name = claim.session_id
        try:
            crashed = claim.open_turns
            if crashed:
                appended = await self.store.repair(name, holder=claim.holder)
                self._fixed_repaired = True
                self.notify(f"session {name}: repaired the turn(s) {_turns(crashed)} a crash left open "
                            f"({appended} event(s) appended) before serving")  # fmt: skip
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.store.release(name, claim.holder)
            raise
        # a repair closes turns and starts none: the last turn is still the claim's
        return SessionCallSink(self.store, name, holder=claim.holder, last_turn=claim.last_turn)

    async def close(self, sink: SessionCallSink) -> None:
        """Wait for the call being recorded, then free the session's lease."""
        with anyio.move_on_after(CLOSE_WAIT) as waiting:
            await sink.idle()
        if waiting.cancelled_caught:  # a body that ignores its token still runs: its turn keeps the lease
            self.notify(f"session {sink.session_id}: a call is still running; its lease is left to run out")
            return
        try:
            if sink.unsettled:
                await sink.settle()
        finally:
            if sink.holder is not None:
                await self.store.release(sink.session_id, sink.holder)


def _turns(turns: Sequence[int]) -> str:
    return ", ".join(map(str, turns))
