"""The execution layer's ports: what a batch records through, and who it asks for approval.

* :class:`ToolCallSink`: where a batch records what happened, durably, in model
  order (two required methods);
* :class:`SinkHooks`: the optional hooks a sink may add, an explicit protocol;
  :class:`ForwardingSink` wraps a sink and has exactly the hooks of the sink it
  wraps, so a wrapper overrides what it adds and forwards the rest unlisted;
* :class:`Declaration` and :func:`current_declaration`: which call a sink is
  being told about;
* :class:`ApprovalProvider`: asked before a call that needs approval runs.

The implementations live above: the tool log and the session log (layer 5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import ApprovalGrant, GrantKey
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = [
    "OPTIONAL_HOOKS",
    "ApprovalProvider",
    "Declaration",
    "ForwardingSink",
    "SinkHooks",
    "ToolCallSink",
    "current_declaration",
    "declaring",
    "told",
]


class ToolCallSink(Protocol):
    """Where a batch records what happened, durably, in model order.

    While either method is awaited, :func:`current_declaration` names the call
    it is about, so a sink can pair each outcome with its own declaration even
    when a provider reuses call ids (``call_0``, ``call_1``...) in every step.
    A sink may also have any of the optional :class:`SinkHooks`.
    """

    async def call_declared(self, call: ToolCall) -> None: ...

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None: ...


class SinkHooks(Protocol):
    """The optional hooks of a :class:`ToolCallSink`; ``execute_batch`` calls those a sink has.

    * ``batch_started(calls)``: once, before anything else, with every proposed call;
    * ``approval_asked(execution, reason)`` / ``approval_decided(execution, result)``:
      around each request to the approval provider (``result`` is what it answered);
    * ``approval_from_grant(execution, key)`` / ``approval_granted(execution, key, grant)``:
      remembered answers (a sink that has both, and ``approval_decided``, holds grants): before
      asking the provider, ``approval_from_grant`` returns the decision (``APPROVED`` or
      ``REJECTED``) of a live grant matching the call's identity and ``key``, having recorded
      that decision, or None to ask; after an ``*_ALWAYS`` answer, ``approval_granted``
      records the grant (:class:`~tether_clr.ApprovalGrant`, with its scope);
    * ``attempt_ended(execution, attempt, outcome)``: after each attempt of a call
      of a tool with a retry policy (``attempt`` counts from 1; ``outcome`` is that
      attempt's, before the post-execute waterfall), before the next attempt starts;
    * ``flush()``: at each point where durability is owed: before the first body
      of a group starts, and before the delivery waits for a body still running.
      A sink may buffer what it was told and make it durable here, so a group's
      declarations, or results that are ready together, are one transaction;
    * ``contexts_added(contexts)``: the additional contexts post-execute listeners
      added for a call (non-empty, in order), right before that call's
      ``outcome_ready``, under the same declaration; never for a child call;
    * ``batch_finished()``: once, when the batch returns or raises.

    And one attribute: ``parks_approvals = True`` says the sink is a log a
    suspended step can be resumed from (a session store's step sink, or a
    wrapper of one). Only then may a call whose approval is ``DEFERRED`` be
    parked; with any other sink it fails closed (UNAVAILABLE), because nothing
    could ever resume it and the call would be lost.

    Every hook failure is an infrastructure fault: the batch stops and raises
    :class:`~tether_clr.SinkError`, never a disguised tool result. While
    ``approval_asked``/``approval_decided``/``attempt_ended`` are awaited, :func:`current_declaration`
    names the call, as it does for the two required methods.
    """

    parks_approvals: bool

    async def batch_started(self, calls: Sequence[ToolCall]) -> None: ...

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None: ...

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None: ...

    async def approval_from_grant(self, execution: ToolExecution, key: GrantKey) -> ApprovalResult | None: ...

    async def approval_granted(self, execution: ToolExecution, key: GrantKey, grant: ApprovalGrant) -> None: ...
    async def attempt_ended(self, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None: ...

    async def flush(self) -> None: ...

    async def contexts_added(self, contexts: Sequence[str]) -> None: ...

    async def batch_finished(self) -> None: ...


OPTIONAL_HOOKS: tuple[str, ...] = (
    "batch_started", "approval_asked", "approval_decided", "approval_from_grant", "approval_granted", "attempt_ended",
    "flush", "contexts_added", "batch_finished",
)
"""The method names of :class:`SinkHooks`, in the order a batch first calls them."""


class ForwardingSink:
    """A sink that forwards everything to ``inner``: subclass it to add to some hooks.

    It has exactly the hooks ``inner`` has (a hook ``inner`` lacks is ``None``
    here, so the batch skips it, as it would for ``inner`` itself) and the same
    ``parks_approvals``. An override calls ``await super().hook(...)`` to forward;
    a failure of ``inner`` propagates unchanged (the batch turns it into
    :class:`~tether_clr.SinkError`).
    """

    def __init__(self, inner: ToolCallSink) -> None:
        self.inner = inner
        for name in OPTIONAL_HOOKS:
            if not callable(getattr(inner, name, None)):
                setattr(self, name, None)

    @property
    def parks_approvals(self) -> bool:
        return getattr(self.inner, "parks_approvals", False) is True

    async def call_declared(self, call: ToolCall) -> None:
        await self.inner.call_declared(call)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        await self.inner.outcome_ready(outcome)

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        await self.inner.batch_started(calls)  # type: ignore[attr-defined]

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        await self.inner.approval_asked(execution, reason)  # type: ignore[attr-defined]

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        await self.inner.approval_decided(execution, result)  # type: ignore[attr-defined]

    async def approval_from_grant(self, execution: ToolExecution, key: GrantKey) -> ApprovalResult | None:
        return await self.inner.approval_from_grant(execution, key)  # type: ignore[attr-defined, no-any-return]

    async def approval_granted(self, execution: ToolExecution, key: GrantKey, grant: ApprovalGrant) -> None:
        await self.inner.approval_granted(execution, key, grant)  # type: ignore[attr-defined]
    async def attempt_ended(self, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None:
        await self.inner.attempt_ended(execution, attempt, outcome)  # type: ignore[attr-defined]

    async def flush(self) -> None:
        await self.inner.flush()  # type: ignore[attr-defined]

    async def contexts_added(self, contexts: Sequence[str]) -> None:
        await self.inner.contexts_added(contexts)  # type: ignore[attr-defined]

    async def batch_finished(self) -> None:
        await self.inner.batch_finished()  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Declaration:
    """One declared call: the batch run that declared it and its position in the model's order.

    ``child`` is set for a child call (one a tool body made, see
    :class:`~tether_clr.ChildCalls`): its key under the step, ``"<position of
    the model's call>/<n>"`` (``/<m>`` more per level), while ``batch_id`` and
    ``index`` (0) name the child's own one-call batch run.
    """

    batch_id: str
    index: int
    child: str | None = None


_DECLARATION: ContextVar[Declaration | None] = ContextVar("tether_clr_declaration", default=None)


def current_declaration() -> Declaration | None:
    """The declaration a sink is being told about, or None outside ``call_declared`` / ``outcome_ready``.

    ``execute_batch`` sets it around each of those two awaits (a context
    variable, so concurrent batches sharing one sink never see each other's).
    The call and the outcome of one declaration get the same value.
    """
    return _DECLARATION.get()


_T = TypeVar("_T")


async def told(declaration: Declaration, method: Callable[[_T], Awaitable[None]], record: _T) -> None:
    """``await method(record)`` with :func:`current_declaration` naming ``declaration``."""
    token = _DECLARATION.set(declaration)
    try:
        await method(record)
    finally:
        _DECLARATION.reset(token)


@contextmanager
def declaring(declaration: Declaration | None) -> Iterator[None]:
    """:func:`current_declaration` names ``declaration`` inside the block (the approval hooks)."""
    token = _DECLARATION.set(declaration)
    try:
        yield
    finally:
        _DECLARATION.reset(token)


class ApprovalProvider(Protocol):
    """Asked for a pre-execute ``ask`` and for every call of a tool that requires approval.

    The request carries the call itself: ``execution.name``, ``execution.arguments``
    (a fresh parsed copy of the validated arguments) and ``execution.arguments_json``
    (their canonical text), the scope, owner and call ids; ``reason`` is the
    listener's, or ``"tool 'NAME' requires approval"``. Anything but
    ``ApprovalResult.APPROVED`` (or ``APPROVED_ALWAYS``) keeps the body from
    running; ``DEFERRED`` parks the call when the batch's sink can hold it;
    ``APPROVED_ALWAYS``/``REJECTED_ALWAYS`` or an :class:`~tether_clr.ApprovalGrant`
    decide the call and are remembered when the sink holds grants.
    """

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult | ApprovalGrant: ...
