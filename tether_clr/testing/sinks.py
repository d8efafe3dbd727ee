"""A recording sink: the timeline of everything a batch told its sink, in order.

``RecordingSink()`` has both required methods and every optional hook of
:class:`~tether_clr.SinkHooks`, and appends a :class:`SinkRecord` per call:
declared, approval asked and decided, grants, attempts, flushes, contexts,
outcome, batch started and finished. ``RecordingSink(inner)`` records the same
way and forwards everything to ``inner`` (a session store's step sink, say),
having exactly ``inner``'s hooks and ``parks_approvals``, as a
:class:`~tether_clr.ForwardingSink` does, so wrapping a sink never changes
what the batch does.

``sink.lines()`` gives the timeline as short strings (``"call_declared c1"``,
``"approval_decided c1 approved"``, ``"outcome_ready c2 DENIED"``) for
one-line assertions; ``sink.lines("call_declared", "outcome_ready")`` only those hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tether_clr.execution.ports import OPTIONAL_HOOKS, Declaration, ToolCallSink, current_declaration
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import ApprovalGrant, GrantKey
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["RecordingSink", "SinkRecord"]


@dataclass(frozen=True, slots=True)
class SinkRecord:
    """One thing the sink was told: the ``hook`` name, the call it is about (if any), what it carried
    (``detail``: the call, the outcome, the reason, the answer, the calls of the batch...) and
    :func:`~tether_clr.current_declaration` at that moment."""

    hook: str
    call_id: str | None = None
    detail: Any = None
    declaration: Declaration | None = None

    def __str__(self) -> str:
        return " ".join(part for part in (self.hook, self.call_id, _brief(self.hook, self.detail)) if part)


def _brief(hook: str, detail: Any) -> str:
    if hook == "batch_started":
        return " ".join(call.call_id for call in detail)
    if hook == "outcome_ready" or hook == "attempt_ended":
        outcome = detail if hook == "outcome_ready" else detail[1]
        text = "ok" if outcome.failure is None else str(outcome.failure.code)
        return text if hook == "outcome_ready" else f"#{detail[0]} {text}"
    if hook in ("approval_decided", "approval_granted"):
        return _answer(detail)
    if hook == "approval_from_grant":
        return "none" if detail is None else _answer(detail)
    if hook == "contexts_added":
        return " | ".join(detail)
    return ""


def _answer(answer: Any) -> str:
    if isinstance(answer, ApprovalGrant):
        return f"{answer.result.value} ({answer.scope.value})"
    return str(answer.value) if isinstance(answer, Enum) else repr(answer)


_HOOKS = frozenset({"call_declared", "outcome_ready", *OPTIONAL_HOOKS})


class RecordingSink:
    """A sink that records every call to it (see the module docstring); ``inner``: a sink to forward to.

    ``fail_on``: the hook (``"flush"``, ``"outcome_ready"``...) that raises ``error()`` instead of
    recording (default: ``OSError("disk full")``), for tests of the batch's infrastructure faults:
    the batch must raise :class:`~tether_clr.SinkError`, never disguise the failure as a tool result.
    """

    def __init__(
        self,
        inner: ToolCallSink | None = None,
        *,
        fail_on: str | None = None,
        error: Callable[[], BaseException] = lambda: OSError("disk full"),
    ) -> None:
        if fail_on is not None and fail_on not in _HOOKS:
            raise ValueError(f"no such sink hook: {fail_on!r}")
        self.inner = inner
        self.timeline: list[SinkRecord] = []
        self.fail_on = fail_on
        self.error = error
        if inner is not None:
            for name in OPTIONAL_HOOKS:
                if not callable(getattr(inner, name, None)):
                    setattr(self, name, None)

    @property
    def parks_approvals(self) -> bool:
        return self.inner is not None and getattr(self.inner, "parks_approvals", False) is True

    def _note(self, hook: str, call_id: str | None = None, detail: Any = None) -> None:
        if hook == self.fail_on:
            raise self.error()
        self.timeline.append(SinkRecord(hook, call_id, detail, current_declaration()))

    # -- the required methods ------------------------------------------------------------

    async def call_declared(self, call: ToolCall) -> None:
        self._note("call_declared", call.call_id, call)
        if self.inner is not None:
            await self.inner.call_declared(call)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self._note("outcome_ready", outcome.call_id, outcome)
        if self.inner is not None:
            await self.inner.outcome_ready(outcome)

    # -- the optional hooks ---------------------------------------------------------------

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        self._note("batch_started", None, tuple(calls))
        if self.inner is not None:
            await self.inner.batch_started(calls)  # type: ignore[attr-defined]

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        self._note("approval_asked", execution.call_id, reason)
        if self.inner is not None:
            await self.inner.approval_asked(execution, reason)  # type: ignore[attr-defined]

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        self._note("approval_decided", execution.call_id, result)
        if self.inner is not None:
            await self.inner.approval_decided(execution, result)  # type: ignore[attr-defined]

    async def approval_from_grant(self, execution: ToolExecution, key: GrantKey) -> ApprovalResult | None:
        if self.fail_on == "approval_from_grant":
            raise self.error()
        found: ApprovalResult | None = None
        if self.inner is not None:
            found = await self.inner.approval_from_grant(execution, key)  # type: ignore[attr-defined]
        self._note("approval_from_grant", execution.call_id, found)
        return found

    async def approval_granted(self, execution: ToolExecution, key: GrantKey, grant: ApprovalGrant) -> None:
        self._note("approval_granted", execution.call_id, grant)
        if self.inner is not None:
            await self.inner.approval_granted(execution, key, grant)  # type: ignore[attr-defined]

    async def attempt_ended(self, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None:
        self._note("attempt_ended", execution.call_id, (attempt, outcome))
        if self.inner is not None:
            await self.inner.attempt_ended(execution, attempt, outcome)  # type: ignore[attr-defined]

    async def flush(self) -> None:
        self._note("flush")
        if self.inner is not None:
            await self.inner.flush()  # type: ignore[attr-defined]

    async def contexts_added(self, contexts: Sequence[str]) -> None:
        self._note("contexts_added", None, tuple(contexts))
        if self.inner is not None:
            await self.inner.contexts_added(contexts)  # type: ignore[attr-defined]

    async def batch_finished(self) -> None:
        self._note("batch_finished")
        if self.inner is not None:
            await self.inner.batch_finished()  # type: ignore[attr-defined]

    # -- what the test reads ----------------------------------------------------------------

    def lines(self, *hooks: str) -> list[str]:
        """The timeline as short strings, only of ``hooks`` when any are named (an unknown name is an error)."""
        unknown = set(hooks) - _HOOKS
        if unknown:
            raise ValueError(f"no such sink hook: {sorted(unknown)}")
        return [str(record) for record in self.timeline if not hooks or record.hook in hooks]

    def of(self, hook: str) -> list[SinkRecord]:
        """The records of one hook, in order."""
        return [record for record in self.timeline if record.hook == hook]

    @property
    def calls(self) -> list[ToolCall]:
        """The declared calls, in the order declared."""
        return [record.detail for record in self.of("call_declared")]

    @property
    def outcomes(self) -> list[ToolExecutionOutcome]:
        """The delivered outcomes, in the order delivered."""
        return [record.detail for record in self.of("outcome_ready")]

    def render(self) -> str:
        """The whole timeline, one numbered line per record (what a failed assertion shows)."""
        return "\n".join(f"{number:>3}  {record}" for number, record in enumerate(self.timeline, 1)) or "  (nothing recorded)"

    def clear(self) -> None:
        self.timeline.clear()
