"""Letting go of a body that ignores cancellation: the end of a timeout's grace period.

A timed-out body's token is cancelled at its deadline. A body that never looks
at it (a synchronous function in a worker thread, a .NET body that never checks
its ``CancellationToken``) cannot be interrupted; the pipeline then waits a
grace period more and *abandons* it: the call ends without it, and the body
goes on running, unobserved, until it returns on its own.

Only the code that waits for such a body can stop waiting, so the pipeline
tells it through an *abandon token*, set for the body (a context variable, so
the :class:`~tether_clr.tools.Tool` protocol does not change, and an execute
listener that swaps the body's token cannot lose it): :func:`abandon_token`
reads it, :func:`run_sync_until_abandoned` is the worker-thread wait that
honours it, and the .NET bridge's drain honours it too. Outside a timed call
the abandon token cannot fire, and nothing changes: a cancelled body is still
waited for (the drain).

Floor 1 (foundations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tether_clr.foundations.cancellation import CancellationToken, OperationCancelledError

__all__ = ["BodyAbandonedError", "abandon_token", "abandoning", "run_sync_until_abandoned"]

_T = TypeVar("_T")

_ABANDON: ContextVar[CancellationToken] = ContextVar("tether_clr_abandon", default=CancellationToken.none())


class BodyAbandonedError(OperationCancelledError):
    """The pipeline stopped waiting for a body that ignored its cancelled token; the body may still run."""


def abandon_token() -> CancellationToken:
    """The token that fires when the pipeline abandons the running body (one that never fires outside a timed call)."""
    return _ABANDON.get()


@contextmanager
def abandoning(token: CancellationToken) -> Iterator[None]:
    """:func:`abandon_token` is ``token`` inside the block (the timed body's)."""
    reset = _ABANDON.set(token)
    try:
        yield
    finally:
        _ABANDON.reset(reset)


async def run_sync_until_abandoned(fn: Callable[[], _T], abandon: CancellationToken) -> _T:
    """``anyio.to_thread.run_sync(fn)``, waited for until it returns or ``abandon`` fires.

    Like a plain ``run_sync``, the wait ignores the cancellation of the awaiting
    task (the thread cannot be interrupted, and a body must not run on behind a
    batch that returned); unlike it, ``abandon`` ends the wait at once, leaving
    the thread to finish alone (it no longer holds a slot of the thread limiter),
    and raises :class:`BodyAbandonedError`.
    """
    with anyio.CancelScope(shield=True) as scope:
        with abandon.register(scope.cancel):
            result: Any = await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    if scope.cancelled_caught:
        raise BodyAbandonedError("abandoned: the body ignored its cancelled token past the grace period")
    return result  # type: ignore[no-any-return]
