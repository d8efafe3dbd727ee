"""The calls in flight on one handshake-era connection, and what cancels them without a task per call.

A call's batch runs shielded from the SDK's cancellation of its handler, so that
it always ends with an outcome the sink, listeners and audit record; what the
client's cancellation must do is cancel the call's token. Two ways:

* **A watcher per call** (any connection): a task beside the batch that the SDK's
  cancellation of the handler reaches, and that cancels the token. It costs a
  task group and a task for every call.
* **A watcher per connection** (a handshake-era connection, once its
  ``notifications/initialized`` has arrived): :class:`ConnectionCalls` keeps the
  token source of each call in flight by request id. The client's
  ``notifications/cancelled`` cancels that call's token (the server's handler for
  that notification); the connection's end (EOF, a closed session, the server
  shutting down) cancels them all, through one task per connection: the server's
  ``notifications/initialized`` handler, which the SDK runs in the connection's
  own task group and cancels when the connection ends. While that task is alive
  a call needs no task of its own.

Anything else that cancels a handler on such a connection also ends the
connection (the SDK cancels a handler only for ``notifications/cancelled`` or at
the connection's end), so the two cover every case the per-call watcher did.
The 2026-07-28 era (a client cancels by closing the request's stream, with no
notification) and connections that never sent ``notifications/initialized``
(stateless HTTP) keep the per-call watcher.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.shared.dispatcher import coerce_request_id

from tether_clr.foundations.cancellation import CancellationSource

__all__ = ["CLIENT_CANCELLED", "CONNECTION_CLOSED", "SHUTDOWN", "ConnectionCalls", "ServerCalls"]

CLIENT_CANCELLED = "cancelled by the client (notifications/cancelled)"
CONNECTION_CLOSED = "the client's connection closed"
SHUTDOWN = "shutdown"
"""The reason of a call cancelled because the server is stopping (:meth:`ServerCalls.drain`): the
outcome is ABORTED ``cancelled: shutdown`` (ABORTED_BEFORE_DISPATCH ``not dispatched: shutdown``
for a call that arrived while the server was draining)."""

CALLS_KEY = "tether_clr.mcp.calls"
"""Where a connection's :class:`ConnectionCalls` lives in its SDK ``Connection.state``."""


class ConnectionCalls:
    """The token sources of one connection's calls in flight, by request id; see the module."""

    def __init__(self) -> None:
        self._sources: dict[Any, CancellationSource] = {}
        self.watching = False
        """True while the connection's watcher runs: only then may a call go without a watcher of its own."""

    def add(self, request_id: Any, source: CancellationSource) -> Any:
        """Register a call's source; returns the key :meth:`discard` takes."""
        key = coerce_request_id(request_id)
        self._sources[key] = source
        return key

    def discard(self, key: Any, source: CancellationSource) -> None:
        if self._sources.get(key) is source:
            del self._sources[key]

    def cancel(self, request_id: Any, reason: str) -> None:
        """``notifications/cancelled`` for ``request_id``: cancel that call's token (nothing if it is not in flight)."""
        if request_id is None:
            return
        source = self._sources.get(coerce_request_id(request_id))
        if source is not None:
            source.cancel(reason)

    async def watch(self) -> None:
        """Run for the connection's lifetime; when the SDK cancels it (the connection ended), cancel every call in flight."""
        self.watching = True
        try:
            await anyio.sleep_forever()
        finally:
            self.watching = False
            sources, self._sources = list(self._sources.values()), {}
            for source in sources:
                source.cancel(CONNECTION_CLOSED)


LINGER = 5.0
"""Seconds a drain waits, after cancelling the calls still running, for them to end before it gives up on them."""


class ServerCalls:
    """Every call in flight on one server, whatever its connection: what a graceful shutdown waits for.

    :meth:`start` registers a call's token source (already cancelled with
    :data:`SHUTDOWN` once the server is draining: the call is recorded as not
    dispatched, its body never runs); :meth:`finish` forgets it. :meth:`drain`
    waits for the calls in flight to end, cancels the ones still running after
    ``grace`` seconds, and waits for them to be recorded. One event loop: the
    server's (calls and the drain run on it).
    """

    def __init__(self) -> None:
        self._sources: set[CancellationSource] = set()
        self._empty: anyio.Event | None = None
        self.draining = False
        self.abandoned = 0  # calls still running after the last drain's linger (bodies that ignore their token)

    def __len__(self) -> int:
        return len(self._sources)

    def start(self) -> CancellationSource:
        source = CancellationSource()
        if self.draining:
            source.cancel(SHUTDOWN)
        self._sources.add(source)
        return source

    def finish(self, source: CancellationSource) -> None:
        self._sources.discard(source)
        if not self._sources and self._empty is not None:
            self._empty.set()

    async def _settled(self) -> None:
        while self._sources:
            self._empty = anyio.Event()
            await self._empty.wait()

    async def drain(self, grace: float, linger: float = LINGER) -> int:
        """Stop starting calls, let those in flight end for up to ``grace`` seconds, then cancel the rest
        with :data:`SHUTDOWN` and wait up to ``linger`` seconds more for them to end (recorded); returns
        how many were cancelled. A body that ignores its token (a synchronous function cannot be
        interrupted) is left running after that: :attr:`abandoned` counts them, and the shutdown goes on
        (their turns stay open, for the next start's repair)."""
        self.draining = True
        with anyio.move_on_after(grace):
            await self._settled()
        late = list(self._sources)
        for source in late:
            source.cancel(SHUTDOWN)
        with anyio.move_on_after(linger):
            await self._settled()
        self.abandoned = len(self._sources)
        return len(late)
