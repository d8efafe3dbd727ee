"""What every stage of :class:`~tether_clr.execution.pipeline.CallPipeline` shares: its state (the
batch's view, listener chains, approval provider, timeouts) and the containment rules that turn what
user code raises or returns wrongly into a failure outcome with a stable code.

Each stage is a mixin of :class:`StageBase` in a module of its own (resolution, authorization, body,
review), so a profile shows each stage's cost by module and a stage with nothing configured costs a
branch. Floor 4 (execution).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tether_clr.execution.isolation import foreign_cancellation
from tether_clr.execution.timeouts import Timeouts
from tether_clr.foundations.text import describe_exception
from tether_clr.records.content import as_parts
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

if TYPE_CHECKING:
    from tether_clr.catalog.views import SealedToolCatalogView
    from tether_clr.execution.children import ChildCalling
    from tether_clr.execution.listeners import ListenerKind, ListenerSnapshot
    from tether_clr.execution.ports import ApprovalProvider
    from tether_clr.records.scope import AgentPipelineScope

__all__ = ["ApprovalRequest", "StageBase", "describe_exception", "fail", "maybe_await", "reraise_unless_contained", "with_hook_content"]

ApprovalRequest = Callable[[ToolExecution, "str | None"], Awaitable[Any]]
"""An approval provider's ``request``: ``(execution, reason) -> ApprovalResult``."""

logger = logging.getLogger("tether_clr")


def fail(execution: ToolExecution, code: Codes, message: str, reason: str | None = None) -> ToolExecutionOutcome:
    return ToolExecutionOutcome.failed(execution.call_id, execution.name, code, message, reason)


def with_hook_content(
    execution: ToolExecution, outcome: ToolExecutionOutcome, hook: Callable[[ToolExecutionOutcome], Any], name: str
) -> ToolExecutionOutcome:
    """``outcome`` with the content ``hook`` gives it; TOOL_ERROR (reason ``content_hook``) naming the hook
    when it raises or returns something that is not content parts."""
    try:
        parts = hook(outcome)
        if inspect.iscoroutine(parts):
            parts.close()  # never awaited by design: content hooks are synchronous
            raise TypeError(f"{name} must be synchronous; it returned a coroutine")
        return outcome.with_content(as_parts(parts, name))
    except Exception as exc:
        return fail(execution, Codes.TOOL_ERROR, f"{name} of {execution.name!r} failed: {describe_exception(exc)}", "content_hook")


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def reraise_unless_contained(exc: BaseException) -> None:
    """Let through what the pipeline must not contain (a real cancellation, KeyboardInterrupt...).

    Contained, as a failure outcome: any ``Exception``, and a ``CancelledError``
    nothing asked for (:func:`~tether_clr.isolation.foreign_cancellation`).
    """
    if isinstance(exc, Exception) or foreign_cancellation(exc):
        return
    raise exc


class StageBase:
    """The state of one batch's pipeline: its view, listener snapshot and chains, approval provider, timeouts."""

    __slots__ = ("_view", "_listeners", "_approval", "_scope", "_chains", "_unloaded", "_timeouts", "children")

    def __init__(
        self, view: SealedToolCatalogView, listeners: ListenerSnapshot, approval: ApprovalProvider | None,
        timeouts: Timeouts | None = None, children: ChildCalling | None = None,
    ) -> None:
        self._view = view
        self._timeouts = timeouts  # the registry's: default timeout, grace, abandoned bodies
        self.children = children  # lends a body that makes child calls its handle (execution/children.py)
        self._unloaded = view.unloaded  # empty, so falsy, in a view with no deferred tool: nothing more is paid
        self._listeners = listeners
        self._approval = approval
        # The chains of the view's own scope: every call of a batch runs in it.
        scope = self._scope = view.scope
        self._chains: dict[ListenerKind, tuple[Any, ...]] = listeners.stage_chains(scope)

    def listens(self, kind: ListenerKind) -> bool:
        """Whether the view's own scope has ``kind`` listeners: a call in that scope meets them (a stage with none
        is only a branch, and a caller may skip calling it)."""
        return bool(self._chains[kind])

    def _chain(self, kind: ListenerKind, scope: AgentPipelineScope | None) -> tuple[Any, ...]:
        """``listeners.chain(kind, scope)``, looked up once per batch for the view's scope."""
        return self._chains[kind] if scope is self._scope else self._listeners.chain(kind, scope)

