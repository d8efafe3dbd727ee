"""Governed retries: the attempts of one call of a tool with a :class:`~tether_clr.RetryPolicy`.

Each attempt is the whole execute stage (the execute waterfall, the timeout,
the body); before every attempt after the first, the batch waits the policy's
backoff (ended at once by the batch's cancellation) and re-authorizes the call
against the live catalog, exactly as before the first: a tool disabled, a scope
revoked or a deny rule added between attempts refuses the next one (DENIED,
with the reason), and no body runs. Each attempt is told to the sink
(``tool/attempt`` in a session log) with its number and outcome, before the
next one starts.

A failed attempt is retried only when the policy selects it
(:meth:`RetryPolicy.retries`: a body failure or a timeout, never a refusal),
attempts are left, the batch is not cancelled, and the version is still
idempotent in the live catalog (fail closed).

Floor 4 (execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from tether_clr.catalog.entries import ToolEntry
from tether_clr.execution.pipeline import CallPipeline
from tether_clr.foundations.cancellation import CancellationToken, cancel_scope_for
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

if TYPE_CHECKING:
    from tether_clr.execution.observing import ObservedCall

__all__ = ["Recorder", "backoff", "run_attempts"]

Recorder = Callable[[int, ToolExecutionOutcome, bool], Awaitable[bool]]
"""``record(attempt, outcome, again)``: tell the sink (``again``: another attempt follows); False when
it failed (the batch is aborting: stop)."""


def _still_idempotent(entry: ToolEntry) -> bool:
    record = entry.record
    return record.entry is not None and record.current.candidate.metadata.idempotent is True


async def backoff(token: CancellationToken, seconds: float) -> bool:
    """Sleep ``seconds`` unless ``token`` is cancelled first; True when the sleep ran out."""
    if token.is_cancelled:
        return False
    if seconds > 0:
        with cancel_scope_for(token):
            await anyio.sleep(seconds)
    return not token.is_cancelled


async def run_attempts(
    pipeline: CallPipeline, execution: ToolExecution, entry: ToolEntry, interruptible: bool, key: str,
    record: Recorder, begin: Callable[[int], None], observed: ObservedCall | None = None,
) -> ToolExecutionOutcome:
    """Run the attempts of a call whose tool has a retry policy (the first already re-authorized):
    the outcome of the last, saying how many there were (``key``: the call's key in the step, for its children). ``begin(n)`` is told before attempt ``n``
    (after the first) is re-authorized, so a call interrupted during it says it took ``n`` attempts.
    ``observed``: the call's instrumentation; each attempt's body is told with its number."""
    policy = entry.retry
    assert policy is not None
    token = execution.cancellation
    number = 1
    outcome = await pipeline.execute(execution, entry, interruptible, key, observed)
    while True:
        retry = number < policy.attempts and policy.retries(outcome) and _still_idempotent(entry)
        delay = policy.delay(number) if retry else None
        if not await record(number, outcome, delay is not None) or delay is None:
            return outcome.with_attempts(number)
        if not await backoff(token, delay):
            reason = token.reason or "cancellation requested"
            return ToolExecutionOutcome.failed(
                execution.call_id, execution.name, Codes.ABORTED,
                f"cancelled while waiting to retry after attempt {number}: {reason}",
            ).with_attempts(number)
        number += 1
        begin(number)
        if observed is not None:
            observed.attempt, observed.stage = number, "authorization"
        refusal = await pipeline.reauthorize(execution, entry)
        outcome = await pipeline.execute(execution, entry, interruptible, key, observed) if refusal is None else refusal
