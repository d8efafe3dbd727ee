"""``--approve auto|prompt|deny``: who answers when a tool asks for approval.

Which calls ask is the tools' own business (``requires_approval`` on the tool
or its registration, or a pre-execute listener's ``ask``); these providers only
answer. ``auto`` approves, ``deny`` rejects, ``prompt`` asks in the terminal.

``prompt`` with no terminal to ask on answers ``DEFERRED``: the call is parked
in the session log (its body does not run), the run stops with exit code 3 and
prints the ``tether-clr approve`` command that decides it, possibly from
another process after a restart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import anyio
import anyio.to_thread
import click
from rich.console import Console

from tether_clr.cli.display import StepView, arguments_text
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution

__all__ = ["APPROVE_MODES", "ApproveMode", "FixedApprover", "TerminalApprover", "approver_for"]

ApproveMode = Literal["auto", "prompt", "deny"]
APPROVE_MODES: tuple[ApproveMode, ...] = ("auto", "prompt", "deny")

NO_TERMINAL = "no terminal to ask on: call {call_id} ({name}) is parked until someone decides it"


class FixedApprover:
    """Gives every request the same answer (``--approve auto`` / ``deny``)."""

    def __init__(self, answer: ApprovalResult) -> None:
        self.answer = answer

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        return self.answer


class TerminalApprover:
    """Asks on the terminal (``--approve prompt``); parks the call (``DEFERRED``), saying so, when there is none.

    ``interactive`` says whether a person can answer (stdin is a terminal);
    ``confirm`` asks the yes/no question (``click.confirm``; tests pass their
    own). The live table pauses while the question is on screen.
    """

    def __init__(
        self,
        console: Console,
        *,
        interactive: bool,
        confirm: Callable[[str], bool] | None = None,
    ) -> None:
        self.console = console
        self.interactive = interactive
        self._confirm = confirm or (lambda question: click.confirm(question, default=False))
        self.view: StepView | None = None  # the step being shown, set by the runner
        self._asking: anyio.Lock | None = None  # one question on screen at a time

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        if not self.interactive:
            self.console.print(NO_TERMINAL.format(call_id=execution.call_id, name=execution.name))
            return ApprovalResult.DEFERRED
        question = (
            f"Approve call {execution.call_id}: {execution.name}({arguments_text(execution.arguments_json)})"
            f"{f' — {reason}' if reason else ''}?"
        )
        if self._asking is None:
            self._asking = anyio.Lock()
        async with self._asking:
            view = self.view
            if view is None:
                answer = await anyio.to_thread.run_sync(self._confirm, question)
            else:
                with view.paused():
                    answer = await anyio.to_thread.run_sync(self._confirm, question)
        return ApprovalResult.APPROVED if answer is True else ApprovalResult.REJECTED


def approver_for(mode: ApproveMode, console: Console, *, interactive: bool) -> FixedApprover | TerminalApprover:
    if mode == "auto":
        return FixedApprover(ApprovalResult.APPROVED)
    if mode == "deny":
        return FixedApprover(ApprovalResult.REJECTED)
    return TerminalApprover(console, interactive=interactive)
