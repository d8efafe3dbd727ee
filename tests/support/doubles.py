"""Test doubles shared by the tests: approval providers, pre-execute listeners, sinks, exceptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from tether_clr import ApprovalResult, InMemoryToolLog, ToolExecution, ToolPreDecision


class Approver:
    """An approval provider that records each question and gives one answer (or raises ``error``).

    ``decide``, when given, answers instead of ``result``, from the execution.
    ``requests`` holds ``(call_id, reason, arguments)`` per question, ``asked`` just the call ids.
    """

    def __init__(
        self,
        result: Any = ApprovalResult.APPROVED,
        error: Exception | None = None,
        *,
        decide: Callable[[ToolExecution], Any] | None = None,
    ) -> None:
        self.result = result
        self.error = error
        self.decide = decide
        self.requests: list[tuple[str, str | None, Any]] = []

    @property
    def asked(self) -> list[str]:
        return [call_id for call_id, _, _ in self.requests]

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        self.requests.append((execution.call_id, reason, execution.arguments))
        if self.error is not None:
            raise self.error
        return self.decide(execution) if self.decide is not None else self.result


def asking(reason: str) -> Callable[[Any, Any], Any]:
    """A pre-execute listener that asks for approval, giving ``reason``."""

    async def ask(execution: Any, next_: Any) -> ToolPreDecision:
        return ToolPreDecision.ask(reason)

    return ask


class FailingSink(InMemoryToolLog):
    """An in-memory log whose ``failing`` hook (``call_declared`` or ``outcome_ready``) raises ``error()``."""

    def __init__(self, failing: str, error: Callable[[], BaseException] = lambda: OSError("disk full")) -> None:
        super().__init__()
        self.failing = failing
        self.error = error

    async def call_declared(self, call: Any) -> None:
        if self.failing == "call_declared":
            raise self.error()
        await super().call_declared(call)

    async def outcome_ready(self, outcome: Any) -> None:
        if self.failing == "outcome_ready":
            raise self.error()
        await super().outcome_ready(outcome)


class Unprintable(Exception):
    """An exception whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("str() of this exception raises")


class BlockingApprover:
    """An approval provider that sets ``asked`` and then never answers (until cancelled)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover
