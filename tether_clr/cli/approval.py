"""``--approve auto|prompt|deny``: who answers when a tool asks for approval.

Which calls ask is the tools' own business (``requires_approval`` on the tool
or its registration, or a pre-execute listener's ``ask``); these providers only
answer. ``auto`` approves, ``deny`` rejects, ``prompt`` asks in the terminal:
``y`` approves the call, ``n`` rejects it, ``a`` approves it *always* in this
session and ``p`` always for this principal (a grant in the session log: later
calls of the same tool version and schema are not asked again, see
:class:`~tether_clr.ApprovalGrant`).

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
from tether_clr.records.grants import ApprovalGrant, GrantScope
from tether_clr.records.outcomes import ToolExecution

__all__ = ["ANSWERS", "APPROVE_MODES", "ApproveMode", "FixedApprover", "TerminalApprover", "approver_for", "choose_in_terminal"]

ApproveMode = Literal["auto", "prompt", "deny"]
APPROVE_MODES: tuple[ApproveMode, ...] = ("auto", "prompt", "deny")

ANSWERS: dict[str, ApprovalResult | ApprovalGrant] = {
    "y": ApprovalResult.APPROVED,
    "n": ApprovalResult.REJECTED,
    "a": ApprovalGrant.approve(GrantScope.SESSION),
    "p": ApprovalGrant.approve(GrantScope.PRINCIPAL),
}
"""The terminal's answers: yes, no, always (this session), always (this principal)."""

CHOICES = "y = yes, n = no, a = always in this session, p = always for you (every session)"

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
    ``choose`` asks the question and returns one of :data:`ANSWERS`' keys
    (``click.prompt`` with those choices, ``n`` by default; tests pass their
    own); ``confirm``, a yes/no question instead, offers no "always". The live
    table pauses while the question is on screen.
    """

    def __init__(
        self,
        console: Console,
        *,
        interactive: bool,
        confirm: Callable[[str], bool] | None = None,
        choose: Callable[[str], str] | None = None,
    ) -> None:
        self.console = console
        self.interactive = interactive
        if choose is None:
            choose = choose_in_terminal if confirm is None else (lambda question: "y" if confirm(question) is True else "n")
        self._choose = choose
        self.view: StepView | None = None  # the step being shown, set by the runner
        self._asking: anyio.Lock | None = None  # one question on screen at a time

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult | ApprovalGrant:
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
                answer = await anyio.to_thread.run_sync(self._choose, question)
            else:
                with view.paused():
                    answer = await anyio.to_thread.run_sync(self._choose, question)
        return ANSWERS.get(answer, ApprovalResult.REJECTED)  # anything else is a no


def choose_in_terminal(question: str) -> str:
    click.echo(CHOICES)
    return str(click.prompt(question, type=click.Choice(list(ANSWERS)), default="n", show_choices=True))


def approver_for(mode: ApproveMode, console: Console, *, interactive: bool) -> FixedApprover | TerminalApprover:
    if mode == "auto":
        return FixedApprover(ApprovalResult.APPROVED)
    if mode == "deny":
        return FixedApprover(ApprovalResult.REJECTED)
    return TerminalApprover(console, interactive=interactive)
