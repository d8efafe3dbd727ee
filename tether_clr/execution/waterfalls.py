"""The waterfalls of the pre-execute and post-execute listeners: each listener asks the rest through ``next``.

A listener returns a decision, or awaits ``next()`` for the rest of the chain's;
past the last listener, pre-execute allows and post-execute accepts. A listener
that returns the wrong type, or hands ``next`` another execution, breaks its
contract (:class:`ContractViolation`); the pipeline turns that into TOOL_ERROR.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether_clr.records.decisions import ToolPostDecision, ToolPreDecision
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome

__all__ = ["ContractViolation", "post_checked", "post_next", "post_step", "pre_checked", "pre_next", "pre_step"]


class ContractViolation(Exception):
    """A listener broke its contract (wrong return type, changed the execution)."""


def pre_next(chain: tuple[Any, ...], index: int, execution: ToolExecution) -> Callable[..., Awaitable[ToolPreDecision]]:
    """The ``next`` listener ``index`` of a pre-execute waterfall gets: it asks the rest, and past the last one allows."""
    rest = index + 1 < len(chain)

    async def next_(same: ToolExecution | None = None) -> ToolPreDecision:
        if same is not None and same != execution:
            raise ContractViolation("pre-execute listeners cannot change the execution")
        return await pre_step(chain, index + 1, execution) if rest else ToolPreDecision.allow()

    return next_


def pre_checked(decision: Any) -> ToolPreDecision:
    """A pre-execute listener's answer, or :class:`ContractViolation` when it is not a decision."""
    if not isinstance(decision, ToolPreDecision):
        raise ContractViolation(f"pre-execute listener returned {type(decision).__name__}, expected ToolPreDecision")
    return decision


async def pre_step(chain: tuple[Any, ...], index: int, execution: ToolExecution) -> ToolPreDecision:
    """Listener ``index`` of a pre-execute waterfall (the pipeline awaits the first one itself, one coroutine less)."""
    return pre_checked(await chain[index](execution, pre_next(chain, index, execution)))


def post_next(
    chain: tuple[Any, ...], index: int, execution: ToolExecution, outcome: ToolExecutionOutcome
) -> Callable[..., Awaitable[ToolPostDecision]]:
    """The ``next`` listener ``index`` of a post-execute waterfall gets: it asks the rest, and past the last one accepts."""
    rest = index + 1 < len(chain)

    async def next_(*_same: Any) -> ToolPostDecision:
        return await post_step(chain, index + 1, execution, outcome) if rest else ToolPostDecision.accept()

    return next_


def post_checked(decision: Any) -> ToolPostDecision:
    """A post-execute listener's answer, or :class:`ContractViolation` when it is not a decision."""
    if not isinstance(decision, ToolPostDecision):
        raise ContractViolation(f"post-execute listener returned {type(decision).__name__}, expected ToolPostDecision")
    return decision


async def post_step(chain: tuple[Any, ...], index: int, execution: ToolExecution, outcome: ToolExecutionOutcome) -> ToolPostDecision:
    """Listener ``index`` of a post-execute waterfall (the pipeline awaits the first one itself)."""
    return post_checked(await chain[index](execution, outcome, post_next(chain, index, execution, outcome)))
