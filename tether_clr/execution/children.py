"""Child calls: a tool body calling other tools through the whole pipeline (programmatic tool calling).

A batch lends each body that makes child calls (``makes_child_calls``) a
:class:`LentChildCalls` handle (a :class:`~tether_clr.ChildCalls`). Each
``call_tool`` runs one call as its own one-call batch run
(:class:`~tether_clr.execution.batch.BatchRun`, through the ``run`` callable the
batch hands :class:`ChildCalling`, so this module never imports the batch):

* against the parent's view (the same sealed snapshot, so the same request
  context: a child sees only what the parent's caller could see), with the
  same listener snapshot and approval provider;
* with ``parent_call_id`` the parent's call id, call id ``<parent>/<n>`` and key
  ``<parent key>/<n>`` in the step's log (:class:`~tether_clr.Declaration.child`);
* on a token linked to the parent's (its execution's and its dispatch's), so
  cancelling the parent cancels its children. The child's run is shielded from
  the parent's cancel scope and cancelled through that token instead, so a
  cancelled child still drains and records its result; a cancel scope of the
  parent's own code (``anyio.move_on_after`` around ``call_tool``) reaches the
  child the same way;
* recorded through :class:`ChildSink`: the step's sink without its step hooks
  (no ``step/start``, no ``step/end``, no lease release), which cannot park a
  call (a child's deferred approval fails closed, UNAVAILABLE).

A child deeper than the registry's ``max_child_depth`` is refused INVALID_ARGS
``too_deep`` (by the batch run, so the refusal is declared, audited and
recorded like any other). An infrastructure fault in a child's run (a result
policy, the sink) stops the whole batch, as it would in the parent's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from tether_clr.execution.ports import ForwardingSink, ToolCallSink
from tether_clr.foundations.cancellation import CancellationSource, CancellationToken
from tether_clr.foundations.children import ChildCalls
from tether_clr.foundations.json_values import to_json_text
from tether_clr.records.children import child_call_error
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

__all__ = ["TOO_DEEP", "ChildCalling", "ChildOrigin", "ChildSink", "LentChildCalls", "too_deep"]

TOO_DEEP = "too_deep"
"""The failure ``reason`` (INVALID_ARGS) of a child call deeper than ``max_child_depth``."""


@dataclass(frozen=True, slots=True)
class ChildOrigin:
    """Where a child batch run comes from: its key under the step (``"0/1"``) and its depth (1 for a child of a model's call)."""

    key: str
    depth: int


RunChild = Callable[[ToolCall, ChildOrigin, CancellationToken], Awaitable[ToolExecutionOutcome]]


def too_deep(execution: ToolExecution, depth: int, limit: int) -> ToolExecutionOutcome:
    """The refusal of a child call at ``depth`` when ``max_child_depth`` is ``limit``."""
    message = f"child call {execution.call_id!r} would be {depth} levels deep; max_child_depth is {limit}"
    return ToolExecutionOutcome.failed(execution.call_id, execution.name, Codes.INVALID_ARGS, message, TOO_DEEP)


class ChildCalling:
    """What one batch run lends its bodies: how to run a child (``run``) and how deep its calls are (``depth``).

    Children are numbered per parent key across all of its handles, so the
    attempts of a retried parent never reuse a child's key in the log."""

    __slots__ = ("_run", "depth", "_numbers")

    def __init__(self, run: RunChild, depth: int) -> None:
        self._run = run
        self.depth = depth
        self._numbers: dict[str, int] = {}

    def lend(self, execution: ToolExecution, key: str, cancellation: CancellationToken) -> LentChildCalls:
        """The handle of the body of ``execution`` (keyed ``key`` in the step), dispatched with ``cancellation``."""
        return LentChildCalls(self._run, execution, key, self.depth, cancellation, self._next_number)

    def _next_number(self, key: str) -> int:
        number = self._numbers[key] = self._numbers.get(key, 0) + 1
        return number


class LentChildCalls(ChildCalls):
    """The :class:`~tether_clr.ChildCalls` handle of one running body; closed (and its children cancelled) when it ends."""

    __slots__ = ("_run", "_parent", "_key", "_depth", "_source", "_numbers", "_open")

    def __init__(
        self, run: RunChild, parent: ToolExecution, key: str, depth: int, cancellation: CancellationToken,
        numbers: Callable[[str], int],
    ) -> None:
        self._run = run
        self._parent = parent
        self._key = key
        self._depth = depth
        # The children's token: the parent's, whichever token the execute waterfall handed its body, and close().
        self._source = CancellationSource(parent.cancellation, cancellation)
        self._numbers = numbers
        self._open = True

    @property
    def call_id(self) -> str:
        return self._parent.call_id

    @property
    def depth(self) -> int:
        return self._depth

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
        """Run ``name`` as a child call; its value, or a :class:`~tether_clr.ChildCallError` carrying its outcome.

        ``TypeError`` (the parent's own bug, before anything is recorded) for a
        name that is not a string or arguments JSON cannot hold; ``RuntimeError``
        once the parent's body has returned.
        """
        if not self._open:
            raise RuntimeError(f"the body of call {self._parent.call_id!r} has returned: it can make no more child calls")
        if not isinstance(name, str):
            raise TypeError(f"a child call's tool name is a str, got {type(name).__name__}")
        text = arguments if isinstance(arguments, str) else to_json_text({} if arguments is None else arguments)
        parent, number = self._parent, self._numbers(self._key)
        call = ToolCall(f"{parent.call_id}/{number}", name, text, parent.scope, parent.call_id, parent.invocation_context)
        outcome = await self._shielded(call, ChildOrigin(f"{self._key}/{number}", self._depth + 1))
        if outcome.failure is None:
            return outcome.value
        raise child_call_error(outcome)

    async def _shielded(self, call: ToolCall, origin: ChildOrigin) -> ToolExecutionOutcome:
        """Run the child shielded from the caller's cancel scopes, which cancel its token instead (so it drains and records)."""
        source = CancellationSource(self._source.token)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancel_when_cancelled, source)
                with anyio.CancelScope(shield=True):
                    outcome = await self._run(call, origin, source.token)
                group.cancel_scope.cancel()
        finally:
            source.close()
        # A cancelled caller's scope takes over here (the child is recorded): its Cancelled, not the child's error.
        await anyio.lowlevel.checkpoint_if_cancelled()
        return outcome

    def close(self) -> None:
        """The body ended: no more child calls, and a child still running (one the body did not await) is cancelled."""
        self._open = False
        self._source.cancel(f"the body of call {self._parent.call_id!r} has returned")
        self._source.close()


async def _cancel_when_cancelled(source: CancellationSource) -> None:
    """Wait until the enclosing scope is cancelled (the child finished, or the parent's code was cancelled)."""
    try:
        await anyio.sleep_forever()
    finally:
        source.cancel("the parent call was cancelled")


class ChildSink(ForwardingSink):
    """A child run's sink: the step's sink without the step's own hooks, and never parking a call.

    ``call_declared``, ``outcome_ready``, the approval hooks and ``flush`` reach
    the step's sink, under a :class:`~tether_clr.Declaration` whose ``child``
    names the child; ``batch_started``, ``contexts_added`` and ``batch_finished``
    do not (a child opens no step, adds no context, and must not end the step or
    release its lease).
    """

    def __init__(self, inner: ToolCallSink) -> None:
        super().__init__(inner.inner if isinstance(inner, ChildSink) else inner)
        for name in ("batch_started", "contexts_added", "batch_finished"):
            setattr(self, name, None)

    @property
    def parks_approvals(self) -> bool:
        return False
