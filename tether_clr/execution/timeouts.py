"""Per-tool timeouts: the deadline around a body, its grace period, and abandoned bodies.

A timed body runs in a task of its own with a token of its own (linked to the
call's and the dispatch's). At the deadline that token is cancelled: an async
Python body is interrupted at its next checkpoint, a .NET body sees its
``CancellationToken`` fire, a synchronous body can poll it. The call then ends
ABORTED, reason ``timeout``, "timed out after N s" (ABORTED, not a refusal:
the body may have had effects), whatever the body does next.

A body that ignores its token gets ``grace`` seconds more; then the pipeline
*abandons* it (:mod:`tether_clr.foundations.abandonment`): the call ends
without it, :attr:`Timeouts.abandoned` counts it, and a ``RuntimeWarning`` (and
a logged warning) names the tool. The body runs on unobserved until it returns;
no later call waits for it. Only the waits that know how to let go can be
abandoned: a worker thread (a synchronous :class:`~tether_clr.PythonFunction`)
and a .NET call. An async Python body that shields itself from cancellation
cannot be left behind: asyncio and trio give no way to keep a coroutine
running once its awaiting task goes on.

Floor 4 (execution): :class:`~tether_clr.execution.pipeline.CallPipeline`
runs it inside the execute waterfall, so execute listeners see the timeout.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Awaitable, Callable

import anyio

from tether_clr.catalog.entries import ToolEntry
from tether_clr.foundations.abandonment import abandoning
from tether_clr.foundations.cancellation import CancellationSource, CancellationToken, cancel_scope_for
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.retry import TIMEOUT

__all__ = ["Timeouts", "run_timed", "timed_out"]

logger = logging.getLogger("tether_clr")

Body = Callable[[CancellationToken], Awaitable["ToolExecutionOutcome | None"]]
"""Runs the tool body with the given token; ``None`` when it was interrupted before an outcome."""


def _seconds(value: object, name: str, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds{' or None' if allow_none else ''}, got {value!r}")
    return float(value)


class Timeouts:
    """One registry's timeout settings, and how many bodies its batches abandoned.

    ``default``: seconds for a tool registered without ``timeout`` (``None``: no
    timeout); ``grace``: how long a timed-out body may still take to stop.
    ``abandoned`` only grows: the bodies whose grace period ran out (each may
    still be running, or have ended since).
    """

    __slots__ = ("default", "grace", "abandoned")

    def __init__(self, default: float | None = None, grace: float = 5.0) -> None:
        self.default = _seconds(default, "default_timeout", allow_none=True)
        grace_seconds = _seconds(grace, "timeout_grace", allow_none=False)
        assert grace_seconds is not None
        self.grace = grace_seconds
        self.abandoned = 0

    def of(self, entry: ToolEntry) -> float | None:
        """The seconds a body of ``entry`` may run; ``None``: no timeout (``math.inf`` opts out of the default)."""
        seconds = entry.timeout if entry.timeout is not None else self.default
        return None if seconds is None or math.isinf(seconds) else seconds


def timed_out(execution: ToolExecution, seconds: float) -> ToolExecutionOutcome:
    """ABORTED, reason ``timeout``: the body ran past its deadline (and may have had effects)."""
    return ToolExecutionOutcome.failed(
        execution.call_id, execution.name, Codes.ABORTED, f"timed out after {seconds:g} s", TIMEOUT
    )


async def run_timed(
    body: Body, execution: ToolExecution, tokens: tuple[CancellationToken, ...], seconds: float, timeouts: Timeouts
) -> ToolExecutionOutcome | None:
    """Run ``body`` with a token linked to ``tokens`` and cancelled after ``seconds``.

    Returns the body's outcome when it ended in time; :func:`timed_out` when the
    deadline passed first (after the body stopped, or was abandoned ``grace``
    seconds later). A cancellation of the awaiting task (the caller's) reaches
    the body as before and is waited for (the drain), except once the deadline
    passed: the grace period is then waited for whatever happens, so a batch
    never waits longer than the deadline plus the grace for a timed body.
    """
    source = CancellationSource(*tokens)
    abandon = CancellationSource()
    result: list[ToolExecutionOutcome | None] = []
    done = anyio.Event()

    async def run() -> None:
        try:
            with abandoning(abandon.token), cancel_scope_for(source.token):
                result.append(await body(source.token))
        finally:
            done.set()

    expired = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.move_on_after(seconds):
                await done.wait()
            if not done.is_set():
                expired = True
                source.cancel(f"timed out after {seconds:g} s")
                with anyio.CancelScope(shield=True), anyio.move_on_after(timeouts.grace):
                    await done.wait()
                if not done.is_set():
                    abandon.cancel("abandoned after the grace period")
                    _abandon(execution, seconds, timeouts)
    finally:
        source.close()
    if expired:
        return timed_out(execution, seconds)
    return result[0] if result else None


def _abandon(execution: ToolExecution, seconds: float, timeouts: Timeouts) -> None:
    timeouts.abandoned += 1
    message = (
        f"tool {execution.name!r} (call {execution.call_id!r}) ignored its cancellation {timeouts.grace:g} s after "
        f"timing out after {seconds:g} s: its body was abandoned and may still be running"
    )
    logger.warning(message)
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    except Exception:  # warnings turned into errors (-W error): the call still gets its outcome
        logger.debug("the abandonment warning was raised as an error; contained", exc_info=True)
