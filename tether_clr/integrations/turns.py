"""A logged batch that a framework's cancellation cannot tear: :func:`shielded`.

Agent frameworks cancel tool tasks: pydantic-ai cancels the other calls of a
turn when one raises, LangGraph cancels a node on an interrupt or a timeout.
A logged batch cancelled mid-call would leave a ``tool/call`` with no
``tool/result`` and a turn never ended: the log would break its own rules
(``log_violations``). So, as the MCP server does for a client's
cancellation (:mod:`tether_clr.mcp.calls`), a logged batch runs shielded from
its caller and the caller's cancellation becomes the batch's
:class:`~tether_clr.CancellationToken`: a body running is cancelled through
the token (ABORTED ``cancelled``), a call not yet started ends
ABORTED_BEFORE_DISPATCH, every outcome is recorded, the turn is ended, and
only then does the caller's cancellation go on.

Only logged paths pay for it (a task group and a task per batch);
an unlogged batch has nothing to keep consistent and runs unshielded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from tether_clr.foundations.cancellation import CancellationSource, CancellationToken
from tether_clr.foundations.errors import SinkError, StoreUnavailableError

__all__ = ["FRAMEWORK_CANCELLED", "STORE_FAULTS", "shielded"]

T = TypeVar("T")

FRAMEWORK_CANCELLED = "cancelled by the agent framework"
"""The cancellation reason of a logged batch whose caller (the framework's tool task) was cancelled."""

STORE_FAULTS: tuple[type[BaseException], ...] = (StoreUnavailableError, SinkError)
"""The store itself failed: a turn is then left open for repair, never ended over a log that lacks results."""


async def shielded(work: Callable[[CancellationToken], Awaitable[T]]) -> T:
    """Run ``work(token)`` to its end, shielded from the caller's cancellation, which cancels ``token``.

    Returns what ``work`` returned, or raises what it raised; when the caller was cancelled meanwhile, its
    cancellation is re-raised once ``work`` has finished (recorded everything). ``work`` runs in a task of
    its own: a framework that cancels its tool task natively (pydantic-ai: ``asyncio.Task.cancel``, which
    an anyio shield does not stop) reaches the caller, never ``work``; the caller then waits for ``work``
    (the framework drains the tasks it cancelled).
    """
    source = CancellationSource()
    finished = anyio.Event()
    results: list[T] = []
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            with anyio.CancelScope(shield=True):
                results.append(await work(source.token))
        except BaseException as failure:  # re-raised by the caller, not as an exception group
            failures.append(failure)
        finally:
            finished.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            await finished.wait()
        except anyio.get_cancelled_exc_class():
            source.cancel(FRAMEWORK_CANCELLED)
            raise  # the task group waits for ``run`` to finish before this goes on
    if failures:
        raise failures[0]
    return results[0]
