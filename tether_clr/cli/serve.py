"""``tether-clr mcp serve``: the tools ``run`` would load, served over MCP (stdio or streamable HTTP).

Identity is the host's: a fixed :class:`~tether_clr.RequestContext` (``--tenant``,
``--principal``, ``--scope``) for every request, or ``--context module:attr``, a
``context_for(request)`` callable (sync or async) given each
:class:`~tether_clr.mcp.McpRequest`. With neither the command refuses to start.

``--db``: every call is recorded in the session log by a :class:`SessionCallSink`:
one session per server process, each call its own turn with one step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio

from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.sink import SessionSink
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["SessionCallSink", "fixed_context"]


def fixed_context(context: RequestContext) -> Callable[[Any], RequestContext]:
    """A ``context_for`` that gives every request the same context (a trusted, single-user host)."""

    def context_for(_request: Any) -> RequestContext:
        return context

    return context_for


class SessionCallSink:
    """The MCP server's sink for ``--db``: each call (each one-call batch) is a turn of ``session_id``
    with one step, recorded by the store's own step sink, so the log passes ``log_violations``.

    A session's turns follow one another, so calls are recorded one at a time: a call
    waits until the one before it has finished (its turn is closed) before its own turn
    starts. ``parks_approvals`` is False: an MCP request cannot wait for a later decision,
    so a ``DEFERRED`` approval fails closed (UNAVAILABLE) instead of parking the call.
    """

    parks_approvals = False

    def __init__(self, store: SqlSessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._one_at_a_time: anyio.Semaphore | None = None
        self._turn: int | None = None
        self._step: SessionSink | None = None
        self._held = False

    def _current(self) -> SessionSink:
        if self._step is None:
            raise RuntimeError("a sink hook was called outside a batch")
        return self._step

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        if self._one_at_a_time is None:
            self._one_at_a_time = anyio.Semaphore(1)
        await self._one_at_a_time.acquire()
        self._held = True
        try:
            names = [call.name for call in calls]
            self._turn = await self.store.begin_turn(self.session_id, {"mcp": {"calls": names}})
            self._step = self.store.sink(self.session_id, self._turn, 1)
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
        turn, self._turn, self._step = self._turn, None, None
        try:
            if turn is not None:
                with anyio.CancelScope(shield=True):
                    await self.store.end_turn(self.session_id, turn)
        finally:
            if self._held and self._one_at_a_time is not None:
                self._held = False
                self._one_at_a_time.release()

