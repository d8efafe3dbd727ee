"""After the body: the post-execute waterfall (accept, replace, block), the tool's ``finalize_content``,
the awaited result policies and the result listeners. Floor 4."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from tether_clr.execution.stages import StageBase, fail, reraise_unless_contained, with_hook_content
from tether_clr.execution.waterfalls import post_checked, post_next
from tether_clr.foundations.errors import ResultPolicyError
from tether_clr.foundations.text import describe_exception, safe_repr
from tether_clr.records.contexts import checked_contexts
from tether_clr.records.decisions import ToolPostDecision
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry

__all__ = ["Review"]

_ACCEPT = ToolPostDecision.accept()  # a constant: accept() with no context always returns this one

logger = logging.getLogger("tether_clr")




class Review(StageBase):
    """The post-execute waterfall (:meth:`review`), :meth:`finalize`, result policies and result listeners."""

    __slots__ = ()

    async def review(
        self, execution: ToolExecution, outcome: ToolExecutionOutcome
    ) -> tuple[ToolExecutionOutcome, tuple[str, ...]]:
        """Post-execute waterfall: accept, replace or block a dispatched call's outcome; with the
        additional contexts the decision adds (none when the waterfall failed)."""
        chain = self._chain("post_execute", execution.scope)
        if not chain:
            return outcome, ()

        try:
            decision = post_checked(await chain[0](execution, outcome, post_next(chain, 0, execution, outcome)))
        except BaseException as exc:
            reraise_unless_contained(exc)
            return fail(execution, Codes.TOOL_ERROR, f"post-execute listener failed: {describe_exception(exc)}"), ()
        if decision is _ACCEPT:  # the usual answer, ToolPostDecision.accept(): nothing to check or change
            return outcome, ()
        try:  # a decision built without its factories is checked here: bad contexts fail the call closed
            contexts = checked_contexts(decision.contexts)
        except (TypeError, ValueError) as exc:
            return fail(execution, Codes.TOOL_ERROR, f"post-execute listener added a bad context: {exc}"), ()
        return self._decided(execution, outcome, decision), contexts

    @staticmethod
    def _decided(execution: ToolExecution, outcome: ToolExecutionOutcome, decision: ToolPostDecision) -> ToolExecutionOutcome:
        if decision.is_accept:
            return outcome
        if decision.is_block:
            return fail(execution, Codes.BLOCKED, decision.reason or "blocked by a post-execute listener")
        if decision.is_replace:
            try:
                return ToolExecutionOutcome.success(outcome.call_id, outcome.name, decision.value)
            except TypeError as exc:
                return fail(execution, Codes.TOOL_ERROR, f"post-execute replacement is not JSON-compatible: {exc}")
        return fail(execution, Codes.TOOL_ERROR, f"post-execute listener returned an unknown decision {safe_repr(decision.kind)}")

    @staticmethod
    def finalize(execution: ToolExecution, entry: ToolEntry | None, outcome: ToolExecutionOutcome) -> ToolExecutionOutcome:
        """The tool's ``finalize_content`` hook, last, on any outcome of a call that resolved to it."""
        if entry is None or entry.finalize_content is None:
            return outcome
        return with_hook_content(execution, outcome, entry.finalize_content, "finalize_content")

    # -------------------------------------------------------------- policies
    async def enforce_policies(self, execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        """Await every result policy; the first that raises rejects the outcome."""
        for policy in self._chain("result_policy", execution.scope):
            try:
                verdict = policy(execution, outcome)
                if inspect.isawaitable(verdict):  # awaited only when it is awaitable: a plain policy costs no coroutine
                    await verdict
            except Exception as exc:
                raise ResultPolicyError(
                    f"result policy rejected the outcome of call {execution.call_id!r} ({execution.name}): "
                    f"{describe_exception(exc)}",
                    outcome,
                ) from exc

    def audit_listeners(self) -> tuple[Any, ...]:
        """The batch's audit listeners (registry-wide); empty means no audit machinery runs."""
        return self._listeners.chain("audit", None)

    async def notify(self, execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        for listener in self._chain("result_listener", execution.scope):
            try:
                told = listener(outcome)
                if inspect.isawaitable(told):
                    await told
            except BaseException as exc:
                reraise_unless_contained(exc)
                logger.exception("result listener raised for call %r; ignored", outcome.call_id)

