"""RetryPolicy: which failed attempts of an idempotent tool's call are tried again, how often, how soon.

A retry repeats a body that may have had effects, so only a version whose
metadata says ``idempotent=True`` may have a policy: the catalog refuses one
on any other version when it is registered (``ValueError``). The executor
never guesses which tools are safe to repeat.

Only two failures can ever be retried, because only they come from a body that
ran and might succeed on another try: a body failure (TOOL_ERROR) and a
timeout (ABORTED, reason ``timeout``). A refusal (UNKNOWN_TOOL, INVALID_ARGS,
DENIED, UNAVAILABLE, BLOCKED), a cancellation and ABORTED_BEFORE_DISPATCH never
are: asking again would get the same answer, or undo what a caller asked for.

Floor 2 (records).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

from tether_clr.records.outcomes import ToolExecutionOutcome, ToolFailureCodes

__all__ = ["RETRY_ON_DEFAULT", "RETRYABLE", "TIMEOUT", "RetryPolicy", "is_timeout"]

logger = logging.getLogger("tether_clr")

TIMEOUT: Final = "timeout"
"""The ``reason`` of an ABORTED outcome whose body ran past its timeout; also a ``retry_on`` selector."""

RETRYABLE: Final = frozenset({str(ToolFailureCodes.TOOL_ERROR), TIMEOUT})
"""What ``retry_on`` may name: ``"TOOL_ERROR"`` (a body failure) and ``"timeout"``."""

RETRY_ON_DEFAULT: Final = RETRYABLE
"""The default selection: both a body failure and a timeout are retried."""

_NEVER = frozenset(str(code) for code in ToolFailureCodes) - {str(ToolFailureCodes.TOOL_ERROR)}


def is_timeout(outcome: ToolExecutionOutcome) -> bool:
    """ABORTED with reason ``timeout``: the body ran past its timeout."""
    return outcome.code is ToolFailureCodes.ABORTED and outcome.reason == TIMEOUT


def _selector(value: Any) -> Callable[[ToolExecutionOutcome], Any] | frozenset[str]:
    if callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, (str, bytes)) or not isinstance(value, Collection):
        raise TypeError(f"retry_on must be a collection of 'TOOL_ERROR' / 'timeout' or a predicate, got {value!r}")
    selected = frozenset(str(item) for item in value)
    refused = sorted(selected & _NEVER)
    if refused:
        raise ValueError(
            f"retry_on names {refused}: only a body failure (TOOL_ERROR) or a timeout ('timeout') can be retried; "
            "a refusal, a cancellation or a call never dispatched is never retried"
        )
    unknown = sorted(selected - RETRYABLE)
    if unknown:
        raise ValueError(f"retry_on names {unknown}; it may name only {sorted(RETRYABLE)}")
    return selected


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a call of an idempotent tool is retried (``ToolRegistrationOptions(retry=...)``).

    ``attempts``: how many attempts a call gets at most, the first included
    (``1`` never retries). ``backoff``: the seconds to wait before the next
    attempt; a number waits the same before each, a callable ``backoff(n)`` is
    asked with the number of the attempt that just failed (1, 2, ...) and may
    grow the wait (``lambda n: 0.1 * 2 ** (n - 1)``). The wait ends at once when
    the batch is cancelled; a callable that raises or answers something that is
    not a finite non-negative number stops the retries (fail closed).

    ``retry_on``: which failed attempts are tried again. A collection naming
    ``"TOOL_ERROR"`` (a body failure) and/or ``"timeout"`` (the default: both),
    or a predicate ``retry_on(outcome) -> bool`` asked only about those two
    kinds of failure, where only an exact ``True`` retries (raising does not).
    Naming a refusal code is a ``ValueError``: refusals are never retried.
    """

    attempts: int = 3
    backoff: float | Callable[[int], float] = 0.2
    retry_on: Collection[str] | Callable[[ToolExecutionOutcome], Any] = RETRY_ON_DEFAULT

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be a positive int, got {self.attempts!r}")
        if not callable(self.backoff) and _seconds(self.backoff) is None:
            raise ValueError(f"backoff must be a finite non-negative number of seconds or a callable, got {self.backoff!r}")
        object.__setattr__(self, "retry_on", _selector(self.retry_on))

    def retries(self, outcome: ToolExecutionOutcome) -> bool:
        """Whether this failed attempt is one to try again (attempts left aside)."""
        timeout = is_timeout(outcome)
        if not timeout and outcome.code is not ToolFailureCodes.TOOL_ERROR:
            return False  # a success, a refusal, a cancellation: never
        selector = self.retry_on
        if isinstance(selector, frozenset):
            return (TIMEOUT if timeout else str(ToolFailureCodes.TOOL_ERROR)) in selector
        try:
            return selector(outcome) is True  # type: ignore[operator]
        except Exception:
            logger.warning("retry_on predicate raised for call %r; not retried", outcome.call_id, exc_info=True)
            return False

    def delay(self, attempt: int) -> float | None:
        """Seconds to wait after failed attempt number ``attempt``; None stops the retries."""
        backoff = self.backoff
        if not callable(backoff):
            return float(backoff)
        try:
            seconds = _seconds(backoff(attempt))
        except Exception:
            logger.warning("retry backoff raised after attempt %d; not retried", attempt, exc_info=True)
            return None
        if seconds is None:
            logger.warning("retry backoff answered no number of seconds after attempt %d; not retried", attempt)
        return seconds


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)
