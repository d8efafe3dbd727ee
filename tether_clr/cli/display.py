"""The live view of ``tether-clr run``: one table per step, a progress line while it runs.

:class:`DisplaySink` wraps a step's session sink: every hook is forwarded to
the session sink first (so what is shown was recorded), then the row of the
call changes: ``proposed`` -> ``declared`` -> ``awaiting approval`` /
``approved`` / ``rejected`` -> ``ok`` or the failure code, with the time from
the call's declaration (``tool/call``, before its body may start) to its
recorded result. On a terminal the table redraws in place with a progress bar
under it while the step runs; elsewhere (a pipe, CI, tests) each step's final
table is printed once, so the output stays readable and deterministic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from tether_clr.execution.ports import ForwardingSink, ToolCallSink, current_declaration
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import GrantKey, grant_of, plain_result
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["DisplaySink", "StepView", "outcome_status", "shorten"]


def outcome_status(outcome: ToolExecutionOutcome) -> str:
    """``ok`` or the failure code (UNKNOWN_TOOL, DENIED...)."""
    return "ok" if outcome.failure is None else str(outcome.failure.code)


def shorten(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut (table cells stay one line)."""
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class _Row:
    call: ToolCall
    status: str = "proposed"
    detail: str = ""
    declared_at: float | None = None
    millis: float | None = None


class StepView:
    """The rows of one step and how they render; :meth:`live` shows them while the step runs."""

    def __init__(self, console: Console, turn: int, step: int, calls: Sequence[ToolCall]) -> None:
        self.console = console
        self.title = f"turn {turn}, step {step}"
        self.rows = [_Row(call) for call in calls]
        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console,
        )
        self._task = self._progress.add_task(self.title, total=len(self.rows))
        self._live: Live | None = None
        self._running = False

    def _row(self, call_id: str) -> _Row | None:
        declaration = current_declaration()
        if declaration is not None and declaration.child is not None:
            return None  # a child call (a tool body's) has no row of the model's step
        if declaration is not None and 0 <= declaration.index < len(self.rows):
            return self.rows[declaration.index]
        return next((row for row in self.rows if row.call.call_id == call_id), None)

    def table(self) -> Table:
        table = Table(title=self.title, title_justify="left", expand=False)
        for header, justify in (("call", "left"), ("tool", "left"), ("status", "left"), ("ms", "right"), ("result", "left")):
            table.add_column(header, justify=justify)  # type: ignore[arg-type]
        for row in self.rows:
            style = "green" if row.status == "ok" else "red" if row.status.isupper() else "yellow"
            millis = "" if row.millis is None else f"{row.millis:.1f}"
            table.add_row(row.call.call_id, row.call.name, Text(row.status, style=style), millis, row.detail)
        return table

    def _renderable(self) -> RenderableType:
        return Group(self.table(), self._progress) if self._running else self.table()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._renderable(), refresh=True)

    @contextmanager
    def live(self) -> Iterator[None]:
        """Show the step while it runs; print its final table when it ends."""
        self._running = self.console.is_terminal
        if not self.console.is_terminal:
            try:
                yield
            finally:
                self.console.print(self.table())
            return
        with Live(self._renderable(), console=self.console, auto_refresh=True, transient=False) as live:
            self._live = live
            try:
                yield
            finally:
                self._running = False
                live.update(self._renderable(), refresh=True)
                self._live = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop redrawing (for a prompt in the terminal), then resume."""
        live = self._live
        if live is None:
            yield
            return
        live.stop()
        try:
            yield
        finally:
            live.start()

    # ----------------------------------------------------------- updates
    def declared(self, call: ToolCall) -> None:
        row = self._row(call.call_id)
        if row is not None:
            row.status, row.declared_at = "declared", time.perf_counter()
            self._refresh()

    def asked(self, execution: ToolExecution, reason: str | None) -> None:
        row = self._row(execution.call_id)
        if row is not None:
            row.status, row.detail = "awaiting approval", shorten(reason or "")
            self._refresh()

    def decided(self, execution: ToolExecution, result: Any, how: str = "") -> None:
        row = self._row(execution.call_id)
        if row is not None:
            grant = grant_of(result)
            how = how or ("" if grant is None else f" always ({grant.scope.value})")
            plain = plain_result(result)
            row.status = f"{getattr(plain, 'value', plain)}{how}"
            self._refresh()

    def recorded(self, outcomes: Sequence[ToolExecutionOutcome]) -> None:
        """Show outcomes recorded earlier (a resumed step's, from before it was suspended) on rows not yet shown."""
        for outcome in outcomes:
            row = self._row(outcome.call_id)
            if row is not None and row.status in ("proposed", "declared"):
                self.finished(outcome)

    def finished(self, outcome: ToolExecutionOutcome) -> None:
        row = self._row(outcome.call_id)
        if row is None:
            return
        row.status = outcome_status(outcome)
        if row.declared_at is not None:
            row.millis = (time.perf_counter() - row.declared_at) * 1000
        if outcome.failure is None:
            row.detail = shorten(outcome.value_json)
        else:
            row.detail = shorten(f"{outcome.failure.message}")
        self._progress.advance(self._task)
        self._refresh()


class DisplaySink(ForwardingSink):
    """A step's sink with the live view attached: each hook reaches the wrapped sink first, then the view.

    A failure of the wrapped sink propagates unchanged (``execute_batch`` turns it
    into :class:`~tether_clr.SinkError`), so the view never shows what was not
    recorded. Every other hook is forwarded by :class:`~tether_clr.ForwardingSink`.
    """

    def __init__(self, inner: ToolCallSink, view: StepView) -> None:
        super().__init__(inner)
        self._view = view

    async def call_declared(self, call: ToolCall) -> None:
        await super().call_declared(call)
        self._view.declared(call)

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        await super().approval_asked(execution, reason)
        self._view.asked(execution, reason)

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        await super().approval_decided(execution, result)
        self._view.decided(execution, result)

    async def approval_from_grant(self, execution: ToolExecution, key: GrantKey) -> ApprovalResult | None:
        result = await super().approval_from_grant(execution, key)
        if result is not None:
            self._view.decided(execution, result, " (remembered)")
        return result

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        await super().outcome_ready(outcome)
        self._view.finished(outcome)


def arguments_text(arguments_json: str) -> str:
    """Arguments for a prompt: compact JSON when they parse, the raw text otherwise."""
    try:
        return json.dumps(json.loads(arguments_json), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        return arguments_json
