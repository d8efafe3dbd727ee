"""The agent loop of ``tether-clr run`` (and of ``tether-clr approve``, which continues it).

For every turn: ``begin_turn`` (its ``turn/start`` records the run's settings
and where in the script the turn is: :class:`RunSettings`); for every step:
:class:`~tether_clr.loop.StepLoop` assembles the catalog for the run's
:class:`RequestContext` (so governance, feature flags and deny rules apply per
step, as they would per model request) and runs the step's calls as one batch
with the session store's step sink (wrapped by the live view), and the outcomes
are shown; the turn's text is printed and
the turn ended. A tool's failure is an outcome like any other; an
infrastructure fault (the store, a result policy) propagates and stops the run.

A step whose approval was deferred (``--approve prompt`` with no terminal)
suspends the run: :attr:`RunResult.suspended` says where, and
:func:`continue_script` later resumes that step with the decision
(:meth:`ToolRegistry.resume`) and runs the rest of the script.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from tether_clr.cli.approval import TerminalApprover
from tether_clr.cli.display import DisplaySink, StepView
from tether_clr.records.script import Script
from tether_clr.execution.ports import ToolCallSink
from tether_clr.loop import StepLoop
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.records.suspension import BatchSuspended
from tether_clr.registry import ToolRegistry

__all__ = ["RunResult", "RunSettings", "Suspension", "continue_script", "run_script"]

_NOTE_KEY = "tether_clr_run"


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What ``tether-clr approve`` needs to continue a run in a new process, recorded in each ``turn/start``.

    Paths are absolute (``cwd`` is where ``--tools`` modules were imported from);
    the request context is identity and claimed scopes, nothing secret.
    """

    script: str
    tools: tuple[str, ...]
    assemblies: tuple[str, ...]
    cwd: str
    tenant: str
    principal: str
    scopes: tuple[str, ...]
    approve: str
    max_parallelism: int

    @classmethod
    def of(
        cls, script: str | Path, tools: Sequence[str], assemblies: Sequence[str | Path], context: RequestContext,
        approve: str, max_parallelism: int,
    ) -> RunSettings:
        """The settings of a run started here: paths made absolute, ``cwd`` the current directory."""
        return cls(
            str(Path(script).resolve()), tuple(tools), tuple(str(Path(a).resolve()) for a in assemblies), os.getcwd(),
            context.tenant_id, context.principal_id, tuple(sorted(context.scopes)), approve, max_parallelism,
        )

    def note(self, script_turn: int) -> dict[str, Any]:
        return {_NOTE_KEY: {**asdict(self), "script_turn": script_turn}}

    @classmethod
    def from_note(cls, note: Mapping[str, Any]) -> tuple[RunSettings, int] | None:
        """The settings and script turn a ``turn/start`` payload records, or None when it records none (or is malformed)."""
        recorded = note.get(_NOTE_KEY)
        if not isinstance(recorded, dict):
            return None
        try:
            fields = {name: recorded[name] for name in cls.__dataclass_fields__}
            for name in ("tools", "assemblies", "scopes"):
                fields[name] = tuple(fields[name])
            settings = cls(**fields)
            turn = recorded["script_turn"]
        except (KeyError, TypeError):
            return None
        ok = isinstance(turn, int) and all(isinstance(v, str) for v in (*settings.tools, *settings.assemblies, *settings.scopes))
        return (settings, turn) if ok and isinstance(settings.max_parallelism, int) else None

    @property
    def context(self) -> RequestContext:
        return RequestContext(self.tenant, self.principal, frozenset(self.scopes))


@dataclass(frozen=True, slots=True)
class Suspension:
    """Where a run stopped: the session's turn and step numbers, the script turn, and the parked calls."""

    turn: int
    step: int
    script_turn: int
    batch: BatchSuspended


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run did: its turn numbers in the session and every step's outcomes, in order.

    ``suspended`` is set when a step parked a call: the run stopped there (its
    outcomes so far are the last entry of ``steps``).
    """

    session_id: str
    turns: tuple[int, ...]
    steps: tuple[tuple[ToolExecutionOutcome, ...], ...]
    suspended: Suspension | None = None


@dataclass(frozen=True, slots=True)
class _Start:
    """Continue inside a turn already begun: its script turn, session turn number, and the next step (0-based)."""

    script_turn: int
    turn: int
    step: int


def _watched(registry: ToolRegistry, view: StepView) -> StepView:
    """``view``, which a terminal approver now prompts over."""
    approver = registry.approval
    if isinstance(approver, TerminalApprover):
        approver.view = view
    return view


async def run_script(
    script: Script,
    registry: ToolRegistry,
    store: SessionStore,
    session_id: str,
    context: RequestContext,
    console: Console,
    *,
    max_parallelism: int = 4,
    settings: RunSettings | None = None,
    start: _Start | None = None,
) -> RunResult:
    """Run the turns of ``script`` in session ``session_id`` (from ``start``, when continuing); see the module docstring."""
    loop = StepLoop(registry, store, session_id, context, max_parallelism=max_parallelism)
    turns: list[int] = []
    steps: list[tuple[ToolExecutionOutcome, ...]] = []
    for index in range(0 if start is None else start.script_turn, len(script.turns)):
        turn = script.turns[index]
        if start is not None and index == start.script_turn:
            loop.continue_turn(start.turn, start.step)
            number, first_step = start.turn, start.step
        else:
            number, first_step = await loop.begin_turn(None if settings is None else settings.note(index)), 0
        turns.append(number)
        for step_index in range(first_step, len(turn.steps)):
            view = _watched(registry, StepView(console, number, step_index + 1, turn.steps[step_index]))
            with view.live():
                result = await loop.run_step(turn.steps[step_index], wrap_sink=_display(view))
            steps.append(result.outcomes)
            if result.suspended is not None:
                return RunResult(session_id, tuple(turns), tuple(steps), Suspension(result.turn, result.step, index, result.suspended))
        if turn.text is not None:
            console.print(f"[bold]model:[/bold] {turn.text}", highlight=False)
        await loop.end_turn()
    return RunResult(session_id, tuple(turns), tuple(steps))


async def continue_script(
    script: Script,
    registry: ToolRegistry,
    store: SessionStore,
    session_id: str,
    settings: RunSettings,
    console: Console,
    *,
    suspended_at: tuple[int, int, int],
    decisions: Mapping[str, Any],
) -> RunResult:
    """Resume the suspended step ``(turn, step, script_turn)`` with ``decisions``, then run the rest of the script.

    The step's table shows every call: the ones resumed live, and those the step
    delivered before it was suspended from the outcomes the resumed batch returns first.
    """
    turn, step, script_turn = suspended_at
    loop = StepLoop(registry, store, session_id, settings.context, max_parallelism=settings.max_parallelism)
    view = _watched(registry, StepView(console, turn, step, script.turns[script_turn].steps[step - 1]))
    with view.live():
        result = await loop.resume(decisions, wrap_sink=_display(view), suspended_at=(turn, step))
        view.recorded(result.outcomes)
    if result.suspended is not None:
        return RunResult(session_id, (turn,), (result.outcomes,), Suspension(turn, step, script_turn, result.suspended))
    rest = await run_script(
        script, registry, store, session_id, settings.context, console,
        max_parallelism=settings.max_parallelism, settings=settings, start=_Start(script_turn, turn, step),
    )
    return RunResult(session_id, rest.turns, (result.outcomes, *rest.steps), rest.suspended)


def _display(view: StepView) -> Callable[[ToolCallSink], ToolCallSink]:
    def wrap(sink: ToolCallSink) -> ToolCallSink:
        return DisplaySink(sink, view)

    return wrap
