"""The agent loop of ``tether-clr run``: a scripted model's turns, each step through the full pipeline.

For every turn: ``begin_turn``; for every step: the catalog is assembled for
the run's :class:`RequestContext` (so governance, feature flags and deny rules
apply per step, as they would per model request), the step's calls run as one
batch with the session store's step sink (wrapped by the live view), and the
outcomes are shown; the turn's text is printed and the turn ended. A tool's
failure is an outcome like any other; an infrastructure fault (the store, a
result policy) propagates and stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from ..context import RequestContext
from ..outcomes import ToolExecutionOutcome
from ..registry import ToolRegistry
from ..scope import AgentPipelineScope
from ..session.store import SessionStore
from .approval import TerminalApprover
from .display import DisplaySink, StepView
from .script import Script

__all__ = ["RunResult", "run_script"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run did: its turn numbers in the session and every step's outcomes, in order."""

    session_id: str
    turns: tuple[int, ...]
    steps: tuple[tuple[ToolExecutionOutcome, ...], ...]


async def run_script(
    script: Script,
    registry: ToolRegistry,
    store: SessionStore,
    session_id: str,
    context: RequestContext,
    console: Console,
    *,
    max_parallelism: int = 4,
) -> RunResult:
    """Run every turn of ``script`` in session ``session_id``; see the module docstring."""
    scope = AgentPipelineScope(session_id=session_id, owner=context.principal_id)
    turns: list[int] = []
    steps: list[tuple[ToolExecutionOutcome, ...]] = []
    approver = registry.approval
    for turn in script.turns:
        number = await store.begin_turn(session_id)
        turns.append(number)
        for step_number, calls in enumerate(turn.steps, 1):
            view = StepView(console, number, step_number, calls)
            if isinstance(approver, TerminalApprover):
                approver.view = view
            catalog = registry.assemble(context, scope)
            sink = DisplaySink(store.sink(session_id, number, step_number), view)
            with view.live():
                outcomes = await registry.execute_batch(calls, catalog, max_parallelism=max_parallelism, sink=sink)
            steps.append(tuple(outcomes))
        if turn.text is not None:
            console.print(f"[bold]model:[/bold] {turn.text}", highlight=False)
        await store.end_turn(session_id, number)
    return RunResult(session_id, tuple(turns), tuple(steps))
