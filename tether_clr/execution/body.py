"""The execute stage: the execute waterfall around the tool body, its timeout, its cancel scope when
something can cancel it, its own context copy, and a JSON-checked outcome; never raises for tool faults. Floor 4."""

from __future__ import annotations

import contextvars
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from tether_clr.catalog.builtin import CatalogTool
from tether_clr.execution.isolation import in_own_context
from tether_clr.execution.stages import StageBase, fail, reraise_unless_contained, with_hook_content
from tether_clr.execution.timeouts import run_timed
from tether_clr.execution.waterfalls import ContractViolation
from tether_clr.foundations.cancellation import CancellationToken, OperationCancelledError, cancel_scope_for
from tether_clr.foundations.children import context_lending, makes_child_calls
from tether_clr.foundations.errors import ToolArgumentError, ToolError
from tether_clr.foundations.json_values import to_json_text
from tether_clr.foundations.text import describe_exception, exception_text
from tether_clr.records.content import content_parts, parts_to_json
from tether_clr.records.outcomes import ToolDispatch, ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.execution.observing import ObservedCall

__all__ = ["BodyStage"]


def _limit_result(execution: ToolExecution, outcome: ToolExecutionOutcome, limit: int | None) -> ToolExecutionOutcome:
    """``max_result_bytes``: a result whose canonical JSON is larger (UTF-8 bytes) is TOOL_ERROR ``result_too_large``."""
    if limit is None or outcome.failure is not None:
        return outcome
    size = len(outcome.value_json.encode("utf-8"))
    if size <= limit:
        return outcome
    return fail(execution, Codes.TOOL_ERROR, f"the result is {size} bytes, more than max_result_bytes={limit}", "result_too_large")


def _after_body(execution: ToolExecution, entry: ToolEntry, outcome: ToolExecutionOutcome) -> ToolExecutionOutcome:
    """What follows every body: ``max_result_bytes``, then the tool's ``project_content`` hook on a success."""
    outcome = _limit_result(execution, outcome, entry.max_result_bytes)
    if entry.project_content is None or outcome.failure is not None:
        return outcome
    return with_hook_content(execution, outcome, entry.project_content, "project_content")


def _body_failed(execution: ToolExecution, exc: BaseException) -> ToolExecutionOutcome:
    """The outcome of a body that raised ``exc``; re-raises what must not be contained (a real cancellation)."""
    if isinstance(exc, ToolArgumentError):
        return fail(execution, Codes.INVALID_ARGS, exception_text(exc) or "arguments could not be bound")
    if isinstance(exc, OperationCancelledError):
        return fail(execution, Codes.ABORTED, f"cancelled: {exception_text(exc)}")
    if isinstance(exc, ToolError):
        return fail(execution, Codes.TOOL_ERROR, exception_text(exc) or "tool failed")
    if isinstance(exc, Exception):
        return fail(execution, Codes.TOOL_ERROR, describe_exception(exc))
    reraise_unless_contained(exc)  # a CancelledError nothing asked for: the tool's own failure
    return fail(execution, Codes.TOOL_ERROR, f"the tool raised {describe_exception(exc)} without being cancelled")


def _body_returned(execution: ToolExecution, value: Any) -> ToolExecutionOutcome:
    """The outcome of a body that returned ``value``: its JSON (or content parts), or TOOL_ERROR when it is not JSON."""
    try:
        parts = content_parts(value)
        if parts is None:
            # The execution's id and name are recordable text already (begin): no second check.
            return ToolExecutionOutcome(execution.call_id, execution.name, to_json_text(value))
        # the body answered with content: its value is the parts' JSON
        return ToolExecutionOutcome.success(execution.call_id, execution.name, parts_to_json(parts)).with_content(parts)
    except TypeError as exc:
        return fail(execution, Codes.TOOL_ERROR, f"tool result is not JSON-compatible: {exc}")


class _Uninterruptible:
    """Stands in for the body's cancel scope when nothing can cancel its token (see ``execute``)."""

    cancelled_caught = False

    def __enter__(self) -> _Uninterruptible:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_UNINTERRUPTIBLE = _Uninterruptible()


class BodyStage(StageBase):
    """The execute waterfall and the body (:meth:`execute`)."""

    __slots__ = ()

    @property
    def swaps_cancellation(self) -> bool:
        """Execute listeners may hand a body another token than its execution's (the view's scope has some)."""
        return self.listens("execute")

    def cancelled(self, execution: ToolExecution) -> ToolExecutionOutcome:
        """ABORTED for a body its execution's token interrupted, as :meth:`execute` reports it."""
        return fail(execution, Codes.ABORTED, f"cancelled: {execution.cancellation.reason or 'cancellation requested'}")

    async def execute(
        self, execution: ToolExecution, entry: ToolEntry, interruptible: bool = True, key: str | None = None,
        observed: ObservedCall | None = None, arguments: dict[str, Any] | None = None,
    ) -> ToolExecutionOutcome:
        """Execute waterfall around the tool body; never raises for tool faults.

        ``interruptible=False`` is the batch's promise that nothing can cancel the
        execution's token while this body runs (an inline call in a batch whose
        caller passed no cancellable token), or that the batch links the token to
        a cancel scope around this call itself (a parallel worker, which then
        reports an interrupted body with :meth:`cancelled`); with no execute
        listener to swap in another token, the body then runs without a cancel
        scope of its own. ``key``: the call's key in the step (its position, or a
        child's key), under which a body that makes child calls keys its children.
        The tool's timeout (:mod:`~tether_clr.execution.timeouts`) runs around the
        body, inside the waterfall: execute listeners see its outcome.
        ``observed``: the call's instrumentation, told each body (``body`` stage).
        ``arguments``: the object the body gets, when the caller holds one nobody else has seen
        (:meth:`begin`'s ``fresh``, for a first attempt); by default a detached copy, ``execution.arguments``.
        """
        if observed is not None:
            observed.stage = "body"
        chain = self._chain("execute", execution.scope)
        if not chain:  # no waterfall to build: straight to the body, with the same containment
            try:
                if not interruptible and observed is None and self._plain(entry, key):
                    return await self._run_plain(execution, entry, arguments)
                return await self._run_body(execution, execution.cancellation, entry, interruptible, key, observed, arguments)
            except BaseException as exc:
                reraise_unless_contained(exc)
                return fail(execution, Codes.TOOL_ERROR, f"execute listener failed: {describe_exception(exc)}")

        async def step(index: int, dispatch: ToolDispatch) -> ToolExecutionOutcome:
            if index == len(chain):
                return await self._run_body(execution, dispatch.cancellation, entry, True, key, observed, arguments)

            async def next_(changed: ToolDispatch | None = None) -> ToolExecutionOutcome:
                if changed is None:
                    changed = dispatch
                elif not isinstance(changed, ToolDispatch) or changed.execution is not execution:
                    raise ContractViolation("execute listeners may only replace the dispatch's cancellation")
                return await step(index + 1, changed)

            outcome = await chain[index](dispatch, next_)
            if not isinstance(outcome, ToolExecutionOutcome):
                raise ContractViolation(f"execute listener returned {type(outcome).__name__}, expected ToolExecutionOutcome")
            return outcome

        try:
            return await step(0, ToolDispatch(execution, execution.cancellation))
        except BaseException as exc:
            reraise_unless_contained(exc)
            return fail(execution, Codes.TOOL_ERROR, f"execute listener failed: {describe_exception(exc)}")

    async def _run_body(
        self, execution: ToolExecution, cancellation: CancellationToken, entry: ToolEntry, interruptible: bool = True,
        key: str | None = None, observed: ObservedCall | None = None, arguments: dict[str, Any] | None = None,
    ) -> ToolExecutionOutcome:
        """The body with its timeout and cancel scope; ``cancellation``: the token the execute waterfall handed
        down (the execution's own, unless a listener swapped it)."""
        outcome: ToolExecutionOutcome | None = None
        timeouts = self._timeouts
        seconds = None if timeouts is None else timeouts.of(entry)
        # The caller's token always reaches the body, even if a listener swapped in an unlinked one.
        linked = cancel_scope_for(execution.cancellation, cancellation) if interruptible else _UNINTERRUPTIBLE
        with linked as scope:
            if seconds is None:
                outcome = await self._invoke(execution, entry, key, observed, cancellation, arguments)
            else:  # a timed body: its own token, cancelled at the deadline (execution/timeouts.py)
                assert timeouts is not None
                tokens = (execution.cancellation, cancellation)
                invoke = partial(self._invoke, execution, entry, key, observed, arguments=arguments)
                outcome = await run_timed(invoke, execution, tokens, seconds, timeouts)
        if outcome is None or scope.cancelled_caught:
            reason = cancellation.reason or execution.cancellation.reason or "cancellation requested"
            return fail(execution, Codes.ABORTED, f"cancelled: {reason}")
        return _after_body(execution, entry, outcome)

    def _plain(self, entry: ToolEntry, key: str | None) -> bool:
        """Whether ``entry``'s body needs nothing around it: no timeout, not the catalog's own tool, no child calls."""
        timeouts = self._timeouts
        return (
            (timeouts is None or timeouts.of(entry) is None)
            and not entry.catalog_tool
            and not self._lends(entry, key)
        )

    def _lends(self, entry: ToolEntry, key: str | None) -> bool:
        """Whether ``entry``'s body is lent a child-call handle: it makes child calls, and the batch can run them."""
        return key is not None and self.children is not None and makes_child_calls(entry.tool)

    async def _run_plain(self, execution: ToolExecution, entry: ToolEntry, arguments: dict[str, Any] | None) -> ToolExecutionOutcome:
        """:meth:`_run_body` for a body that needs nothing around it (:meth:`_plain`, nothing can interrupt it, no
        instrumentation): the same outcomes, in one frame."""
        try:
            body = entry.tool.invoke(execution.arguments if arguments is None else arguments, execution.cancellation)
            value = await in_own_context(body)  # in a copy of the context: what the body sets there is seen by nothing else
        except BaseException as exc:
            return _body_failed(execution, exc)
        return _after_body(execution, entry, _body_returned(execution, value))

    async def _invoke(
        self, execution: ToolExecution, entry: ToolEntry, key: str | None, observed: ObservedCall | None, token: CancellationToken,
        arguments: dict[str, Any] | None = None,
    ) -> ToolExecutionOutcome:
        """The tool body with ``token``, its failures as outcomes; a cancellation of the awaiting task propagates.

        A body that makes child calls is lent a handle on ``token`` (so a timeout cancels its children
        too), closed when the body ends. An observed body is told to its instrumentation, with the
        context copy it runs in (where a span can be made current for the body alone)."""
        lent = None
        if self._lends(entry, key):
            assert self.children is not None and key is not None
            lent = self.children.lend(execution, key, token)
        try:
            if arguments is None:
                arguments = execution.arguments
            # In a copy of the context: what the body sets there is seen by nothing else.
            if entry.catalog_tool:  # the catalog's own tool (the tool search): it reads the view of the call
                body = cast(CatalogTool, entry.tool).invoke_in_view(self._view, arguments, token)
            else:
                body = entry.tool.invoke(arguments, token)
            context = None if lent is None else context_lending(lent)
            if observed is not None:
                context = contextvars.copy_context() if context is None else context
                observed.body_started(context)
            try:
                value = await in_own_context(body, context)
            finally:
                if lent is not None:
                    lent.close()
                if observed is not None:
                    observed.body_ended()
        except BaseException as exc:
            return _body_failed(execution, exc)
        return _body_returned(execution, value)
