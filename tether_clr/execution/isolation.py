"""Keeping user code's side effects on the scheduler apart: context variables and stray cancellations.

Two ways code the pipeline runs (a tool body, a listener) could otherwise reach
past its outcome:

* **Context variables.** Bodies of a parallel group share a worker task, and an
  EXCLUSIVE call's body runs in the batch's own task. :class:`InOwnContext`
  runs a coroutine's every step inside a fresh copy of the current context, so
  what a body sets in a ``ContextVar`` (a tracing span, a log binding, an
  "elevated" flag) is seen by nothing else: not the next body, not the guards
  or approval of a later call, not the caller.
* **A cancellation nobody asked for.** On asyncio, code that awaits a future
  something else cancelled gets ``CancelledError`` although its task was not
  cancelled. Left alone it would unwind the batch like a real cancellation and
  lose every outcome; :func:`foreign_cancellation` tells it apart (the task has
  no pending cancel request), so the pipeline can contain it as a failure.
  (Trio has no such case: only a cancel scope raises ``trio.Cancelled``.)

Floor 3 (execution helpers): no imports from the catalog or the executor.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from types import CoroutineType
from typing import Any, Generic, TypeVar

__all__ = ["InOwnContext", "foreign_cancellation", "in_own_context"]

_T = TypeVar("_T")


class InOwnContext(Generic[_T]):
    """Await ``coroutine`` with each of its steps run inside ``context`` (a copy nobody else uses).

    It drives the coroutine as ``await`` would (``send`` / ``throw`` / ``close``,
    passing what it yields to the event loop unchanged), so it works under any
    event loop; only the context its code sees differs.
    """

    __slots__ = ("_coroutine", "_context")

    def __init__(self, coroutine: Coroutine[Any, Any, _T], context: contextvars.Context) -> None:
        self._coroutine = coroutine
        self._context = context

    def __await__(self) -> Generator[Any, Any, _T]:
        coroutine, run = self._coroutine, self._context.run
        message: Any = None
        error: BaseException | None = None
        while True:
            try:
                if error is None:
                    yielded = run(coroutine.send, message)
                else:
                    yielded = run(coroutine.throw, error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            message, error = None, None
            try:
                message = yield yielded
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as thrown:  # a cancellation, or what the loop throws in: into the coroutine
                error = thrown


def in_own_context(awaitable: Any, context: contextvars.Context | None = None) -> Any:
    """``awaitable`` to await in a fresh copy of the current context (a coroutine), or unchanged (anything else).

    ``context``: that copy, prepared by the caller (one lending a body its child-call handle)."""
    if type(awaitable) is CoroutineType or isinstance(awaitable, Coroutine):  # the usual coroutine: no ABC check
        return InOwnContext(awaitable, contextvars.copy_context() if context is None else context)
    return awaitable


def foreign_cancellation(exc: BaseException) -> bool:
    """True for an asyncio ``CancelledError`` raised while the current task has no pending cancel request.

    Such an error comes from code that awaited a future someone else cancelled:
    no cancel scope, host or batch asked for it, so treating it as a
    cancellation would unwind the batch and lose its outcomes.
    """
    if not isinstance(exc, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop running (trio): nothing raises asyncio's CancelledError there
        return False
    return task is not None and task.cancelling() == 0
