"""The batch's side of the instrumentation port: the stage each call reached, and containment.

A batch that an :class:`~tether_clr.execution.instrumentation.Instrumentation`
observes holds one :class:`ObservedBatch`, and each of its calls one
:class:`ObservedCall` (on its slot). The stages set ``stage`` as the call goes
through them (a plain attribute: nothing is told until something is timed);
the approval wait, each body and the end are told to the observer. Whatever
the observer raises is logged (once per process at warning level, then at
debug) and dropped: instrumentation never changes an outcome and never escapes
``execute_batch``. A batch nobody observes has no ``ObservedBatch`` and its
calls none: every stage pays one ``is None`` branch.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tether_clr.execution.instrumentation import BatchObserver, CallObserver, Instrumentation, Stage
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView

__all__ = ["ObservedBatch", "ObservedCall", "observe_batch"]

logger = logging.getLogger("tether_clr")

_warned = False


def _contained(event: Callable[..., Any], *arguments: Any) -> Any:
    """``event(*arguments)``, or None (logged) when it raises an ``Exception``."""
    global _warned
    try:
        return event(*arguments)
    except Exception:
        level = logging.DEBUG if _warned else logging.WARNING
        _warned = True
        logger.log(level, "instrumentation raised in %s; ignored (calls are unaffected)", getattr(event, "__qualname__", event), exc_info=True)
        return None


class ObservedCall:
    """One observed call: the stage it reached, its attempt, and its observer (told through :func:`_contained`)."""

    __slots__ = ("_observer", "stage", "attempt", "_open")

    def __init__(self, observer: CallObserver) -> None:
        self._observer = observer
        self.stage: Stage = "resolve"
        self.attempt = 1
        self._open = True

    def approval_started(self) -> None:
        _contained(self._observer.approval_started)

    def approval_ended(self) -> None:
        _contained(self._observer.approval_ended)

    def body_started(self, context: contextvars.Context) -> None:
        _contained(self._observer.body_started, self.attempt, context)

    def body_ended(self) -> None:
        _contained(self._observer.body_ended, self.attempt)

    def settled(self, before: ToolExecutionOutcome | None, after: ToolExecutionOutcome) -> None:
        """The delivery's post-execute step turned ``before`` into ``after``: if it changed the result, it decided."""
        if before is not None and (after.failure is not before.failure or after.value_json is not before.value_json):
            self.stage = "post_execute"

    def ended(self, outcome: ToolExecutionOutcome | None, error: BaseException | None = None, stage: Stage | None = None) -> None:
        """Tell the observer how the call ended (once; later calls do nothing)."""
        if self._open:
            self._open = False
            attempts = self.attempt if outcome is None else outcome.attempts
            _contained(self._observer.ended, self.stage if stage is None else stage, outcome, error, attempts)


class ObservedBatch:
    """One observed batch: its calls, so that those still open when it ends are ended too."""

    __slots__ = ("_observer", "_calls")

    def __init__(self, observer: BatchObserver) -> None:
        self._observer = observer
        self._calls: list[ObservedCall] = []

    def call(self, execution: ToolExecution, entry: ToolEntry | None) -> ObservedCall | None:
        observer = _contained(self._observer.call_started, execution, entry)
        if observer is None:
            return None
        call = ObservedCall(observer)
        self._calls.append(call)
        return call

    def finished(self, error: BaseException | None) -> None:
        """The batch ended: every call not ended yet ends with ``error`` (None: the step was suspended)."""
        for call in self._calls:
            call.ended(None, error)


def observe_batch(instrumentation: Instrumentation | None, view: SealedToolCatalogView) -> ObservedBatch | None:
    """The batch's observer, or None when there is no instrumentation or it records nothing now."""
    if instrumentation is None:
        return None
    observer = _contained(instrumentation.batch_started, view)
    return None if observer is None else ObservedBatch(observer)
