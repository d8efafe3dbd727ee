"""admission_only(): a batch admits its calls through every stage before the body, then stops: no body runs.

What a framework that asks a human BEFORE invoking a tool needs: whether the
pipeline would ask approval, learned without running the call, whatever the
listeners answer (a pre-execute listener that allows must not let the body run).
"""

from __future__ import annotations

from typing import Any

import pytest

from tether_clr import (
    ApprovalResult,
    PythonFunction,
    ToolCall,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolFailureCodes,
)
from tether_clr.execution.admission import ADMISSION_ONLY, admission_only
from tests.support import session_scope
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio


def _registry(ran: list[str], registry: ToolRegistry | None = None) -> ToolRegistry:
    registry = registry if registry is not None else ToolRegistry(instrumentation=None)

    def echo(text: str) -> str:
        ran.append(f"echo {text}")
        return text

    def wipe(path: str) -> str:
        ran.append(f"wipe {path}")
        return "wiped"

    registry.register(PythonFunction.from_callable(echo))
    registry.register(PythonFunction.from_callable(wipe), None, ToolRegistrationOptions(requires_approval=True))
    return registry


class Asked:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def request(self, execution: Any, reason: str | None) -> ApprovalResult:
        self.asked.append(execution.call_id)
        return ApprovalResult.APPROVED  # even an approval runs nothing inside admission_only


async def test_inside_admission_only_no_body_runs_even_when_a_listener_allows_and_approval_is_given() -> None:
    ran: list[str] = []
    registry = _registry(ran)
    listened: list[str] = []

    async def allow(execution: Any, next_: Any) -> ToolPreDecision:
        listened.append(execution.call_id)
        return await next_()

    registry.register_pre_execute_listener(None, allow)
    approvals = Asked()
    calls = [ToolCall("c1", "echo", '{"text": "hi"}'), ToolCall("c2", "wipe", '{"path": "/"}'), ToolCall("c3", "nope", "{}")]
    with admission_only():
        outcomes = await registry.execute_batch(calls, registry.seal(session_scope()), approval=approvals)
    assert ran == []
    assert listened == ["c1", "c2"] and approvals.asked == ["c2"]
    assert [(o.code, o.reason) for o in outcomes] == [
        (ToolFailureCodes.ABORTED_BEFORE_DISPATCH, ADMISSION_ONLY),
        (ToolFailureCodes.ABORTED_BEFORE_DISPATCH, ADMISSION_ONLY),
        (ToolFailureCodes.UNKNOWN_TOOL, None),
    ]


async def test_a_refusal_before_the_body_is_the_same_refusal_inside_admission_only() -> None:
    ran: list[str] = []
    registry = _registry(ran)

    async def deny(execution: Any, next_: Any) -> ToolPreDecision:
        return ToolPreDecision.deny("not here")

    registry.register_pre_execute_listener(None, deny)
    with admission_only():
        (outcome,) = await registry.execute_batch([ToolCall("c1", "echo", '{"text": "hi"}')], registry.seal(session_scope()))
    assert ran == [] and outcome.code is ToolFailureCodes.DENIED and outcome.failure is not None and outcome.failure.message == "not here"


async def test_admission_only_ends_with_its_block_and_traces_nothing() -> None:
    ran: list[str] = []
    recorded = Recorded()
    registry = _registry(ran, recorded.registry())
    call = ToolCall("c1", "echo", '{"text": "hi"}')
    with admission_only():
        await registry.execute_batch([call], registry.seal(session_scope()))
    assert ran == [] and recorded.call_spans() == []
    (outcome,) = await registry.execute_batch([call], registry.seal(session_scope()))
    assert ran == ["echo hi"] and outcome.code is None and len(recorded.call_spans()) == 1
