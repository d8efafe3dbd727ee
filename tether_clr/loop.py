"""The model-tools step loop as a library component: assemble, run a step, record, continue.

A host that talks to a model does the same few things every step: assemble the
catalog for who is asking (so governance, flags and deny rules apply per model
request), show the model the assembly's definitions, run the calls the model
proposed as one batch with the session log's step sink, hand the outcomes back,
and continue, or stop where a call waits for an approval decision and resume it
later. :class:`StepLoop` is that sequence for one session, numbered and recorded:

    loop = StepLoop(registry, store, "session-1", context)
    await loop.begin_turn()
    tools = loop.assemble().definitions          # what the model is shown
    step = await loop.run_step(calls)            # the model's proposed calls
    if step.suspended is not None:               # a call waits for a decision
        step = await loop.resume({call_id: ApprovalResult.APPROVED})
    await loop.end_turn()

The ``tether-clr`` command runs its scripts through it. Tool failures are
outcomes; an infrastructure fault (the store, a result policy) is raised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether_clr.catalog.views import ToolAssembly
from tether_clr.execution.ports import ToolCallSink
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended
from tether_clr.registry import ToolRegistry

__all__ = ["StepLoop", "StepResult"]

SinkWrapper = Callable[[ToolCallSink], ToolCallSink]


@dataclass(frozen=True, slots=True)
class StepResult:
    """One step as the loop ran it: its numbers in the session, its outcomes in model order, and
    ``suspended`` when a call was parked (``outcomes`` are then the ones delivered before it);
    ``additional_contexts``: what post-execute listeners added for the model, in the model order
    of their calls, to show it after the results (the session log records them as ``user/message``)."""

    turn: int
    step: int
    outcomes: tuple[ToolExecutionOutcome, ...]
    suspended: BatchSuspended | None = None
    additional_contexts: tuple[str, ...] = ()


class StepLoop:
    """The steps of one session: each assembled for ``context``, run as one batch, recorded in ``store``.

    ``scope``: where the calls run (default: a scope of this session owned by the
    context's principal, so approvals and audit see who asked). One loop runs
    one step at a time; the numbers of turns and steps come from the log
    (:meth:`begin_turn`) and from the loop (steps count from 1 in each turn).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        store: SessionStore,
        session_id: str,
        context: RequestContext,
        *,
        scope: AgentPipelineScope | None = None,
        max_parallelism: int = 4,
    ) -> None:
        if not isinstance(context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(context).__name__}")
        self.registry = registry
        self.store = store
        self.session_id = session_id
        self.context = context
        self.scope = scope if scope is not None else AgentPipelineScope(session_id=session_id, owner=context.principal_id)
        self.max_parallelism = max_parallelism
        self.turn: int | None = None
        self.step = 0  # the last step of the current turn
        self.suspended: StepResult | None = None

    def assemble(self) -> ToolAssembly:
        """The catalog this context may see and call now (what the next step's model request shows)."""
        return self.registry.assemble(self.context, self.scope)

    async def begin_turn(self, note: Mapping[str, Any] | None = None) -> int:
        """Start a turn in the log (``note``: the host's bookkeeping, recorded with it); returns its number."""
        self.turn = await self.store.begin_turn(self.session_id, note)
        self.step = 0
        return self.turn

    def continue_turn(self, turn: int, step: int) -> None:
        """Go on inside a turn begun earlier (another process, say): the next step is ``step + 1``."""
        self.turn, self.step = turn, step

    async def run_step(
        self, calls: Sequence[ToolCall], *, wrap_sink: SinkWrapper | None = None, assembly: ToolAssembly | None = None
    ) -> StepResult:
        """Run the model's proposed ``calls`` as the turn's next step, against a fresh assembly (or ``assembly``,
        the one the model was shown). ``wrap_sink`` wraps the step's session sink (a live view, say)."""
        turn = self._current_turn()
        if self.suspended is not None:
            raise RuntimeError(f"step {self.suspended.step} of turn {self.suspended.turn} is suspended: resume it first")
        self.step += 1
        sink: ToolCallSink = self.store.sink(self.session_id, turn, self.step)
        if wrap_sink is not None:
            sink = wrap_sink(sink)
        view = assembly if assembly is not None else self.assemble()
        outcomes = await self.registry.execute_batch(calls, view, max_parallelism=self.max_parallelism, sink=sink)
        return self._result(turn, self.step, outcomes)

    async def resume(
        self,
        decisions: Mapping[str, Any],
        *,
        wrap_sink: SinkWrapper | None = None,
        suspended_at: tuple[int, int] | None = None,
    ) -> StepResult:
        """Continue the suspended step with the approvers' decisions (see :meth:`ToolRegistry.resume`).

        ``suspended_at``: the (turn, step) of a step parked by another process;
        by default, the one this loop parked. Returns the step's whole outcome list.
        """
        if suspended_at is None:
            if self.suspended is None:
                raise RuntimeError("no step of this loop is suspended")
            suspended_at = (self.suspended.turn, self.suspended.step)
        turn, step = suspended_at
        outcomes = await self.registry.resume(
            self.store, self.session_id, decisions, self.assemble(), max_parallelism=self.max_parallelism,
            wrap_sink=wrap_sink,
        )  # raises, changing nothing here, when the decisions do not fit the parked calls
        self.turn, self.step, self.suspended = turn, step, None
        return self._result(turn, step, outcomes)

    async def end_turn(self) -> None:
        """End the current turn in the log (``ValueError`` while a step of it is open)."""
        await self.store.end_turn(self.session_id, self._current_turn())
        self.turn = None

    def _current_turn(self) -> int:
        if self.turn is None:
            raise RuntimeError("no turn has begun: call begin_turn first")
        return self.turn

    def _result(self, turn: int, step: int, outcomes: list[ToolExecutionOutcome] | BatchSuspended) -> StepResult:
        if isinstance(outcomes, BatchSuspended):
            self.suspended = StepResult(turn, step, outcomes.delivered, outcomes, outcomes.additional_contexts)
            return self.suspended
        return StepResult(turn, step, tuple(outcomes), None, tuple(getattr(outcomes, "additional_contexts", ())))
