"""GovernedToolset's fast path (a response holding ONE open call of the toolset runs that call as its batch,
with no turn bookkeeping) gives exactly what its general path (the turn found in the history, run by its first
call) gives: the model's returns, the bodies run, the approvals asked, the session log, the spans.

Each scenario runs twice, once as shipped and once with the fast path switched off
(``_lone_call`` answering None), and the two observations must be equal; the shipped run must
have taken the fast path. asyncio only, as every pydantic-ai agent run (see test_pydantic_ai.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

from tether_clr import (
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)
from tether_clr.integrations import pydantic_ai as adapter
from tether_clr.integrations.pydantic_ai import GovernedToolset

from tests.integrations.scripted import Script, call
from tests.integrations.tools import add_and_refund
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")
Scenario = Callable[[Path], Awaitable[Any]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _returns(script: Script) -> list[list[tuple[str, str, str]]]:
    """Every tool return the model was shown, per model request after the first: (call id, outcome, content)."""
    return [
        [(part.tool_call_id, part.outcome, str(part.content)) for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        for messages in script.seen[1:] if isinstance(messages[-1], ModelRequest)
    ]


async def _both(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scenario: Scenario) -> Any:
    """The scenario's observation with the fast path, asserting it was taken, equal to the one without it."""
    taken: list[str] = []
    lone = adapter._lone_call

    def spied(*args: Any) -> Any:
        found = lone(*args)
        if found is not None:
            taken.append(found.call_id)
        return found

    monkeypatch.setattr(adapter, "_lone_call", spied)
    fast = await scenario(tmp_path / "fast")
    assert taken, "the scenario never took the fast path"
    monkeypatch.setattr(adapter, "_lone_call", lambda *args: None)
    general = await scenario(tmp_path / "general")
    assert fast == general
    return fast


async def test_fast_and_general_paths_give_the_same_returns_for_success_denial_retry_and_a_two_call_turn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def scenario(_: Path) -> Any:
        ran: list[str] = []
        registry = add_and_refund(ran)
        registry.register_guard(None, lambda execution: "no zero" if execution.arguments.get("a") == 0 else None)
        script = Script([call("add", {"a": 2, "b": 3}, "c1")], [call("add", {"a": 0, "b": 1}, "c2")],
                        [call("add", {"a": "x", "b": 1}, "c3")], [call("add", {"a": 1, "b": 1}, "c4")],
                        [call("add", {"a": 4, "b": 4}, "c5"), call("add", {"a": 0, "b": 4}, "c6")], "done")
        result = await Agent(script.model, toolsets=[GovernedToolset(registry, context=ACME)]).run("go")
        return result.output, ran, _returns(script)

    output, ran, returns = await _both(monkeypatch, tmp_path, scenario)
    assert output == "done" and ran == ["add 2 3", "add 1 1", "add 4 4"]
    assert returns[0] == [("c1", "success", "5")] and returns[1][0][2] == "Error [DENIED]: no zero"


@pytest.mark.parametrize("answer", ["approved", "denied"])
async def test_fast_and_general_paths_ask_the_same_approval_and_run_the_body_only_when_approved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: str
) -> None:
    async def scenario(_: Path) -> Any:
        ran: list[str] = []
        script = Script([call("refund", {"order": "A7"}, "c1")], "finished")
        agent = Agent(script.model, toolsets=[GovernedToolset(add_and_refund(ran), context=ACME)],
                      output_type=[str, DeferredToolRequests])
        first = await agent.run("refund")
        requests = first.output
        assert isinstance(requests, DeferredToolRequests)
        asked = ([c.tool_call_id for c in requests.approvals], requests.metadata, list(ran))
        decision: Any = True if answer == "approved" else ToolDenied("not today")
        second = await agent.run(message_history=first.all_messages(),
                                 deferred_tool_results=DeferredToolResults(approvals={"c1": decision}))
        return asked, second.output, ran, _returns(script)

    asked, output, ran, _ = await _both(monkeypatch, tmp_path, scenario)
    assert asked[0] == ["c1"] and asked[1]["c1"]["fingerprint"].startswith("sha256:") and asked[2] == []
    assert output == "finished" and ran == (["refund A7"] if answer == "approved" else [])


async def test_fast_and_general_paths_log_the_same_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async def scenario(directory: Path) -> Any:
        directory.mkdir()
        ran: list[str] = []
        with SqliteSessionStore(directory / "log.sqlite3") as store:
            toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
            script = Script([call("add", {"a": 1, "b": 2}, "c1")], [call("add", {"a": "x", "b": 2}, "c2")],
                            [call("add", {"a": 3, "b": 3}, "c3"), call("add", {"a": 4, "b": 4}, "c4")],
                            [call("refund", {"order": "A7"}, "c5")], "done")
            result = await Agent(script.model, toolsets=[toolset], output_type=[str, DeferredToolRequests]).run("go")
            events = await store.events("s1")
            assert isinstance(result.output, DeferredToolRequests) and log_violations(events) == []
            return ([(e.kind, e.call_id) for e in events], ran, _returns(script),
                    [c.tool_call_id for c in result.output.approvals])

    kinds, ran, _, approvals = await _both(monkeypatch, tmp_path, scenario)
    assert [call_id for kind, call_id in kinds if kind == "tool/call"] == ["c1", "c2", "c3", "c4", "c5"]
    assert ran == ["add 1 2", "add 3 3", "add 4 4"] and approvals == ["c5"]


async def test_fast_and_general_paths_give_the_same_spans_when_traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async def scenario(_: Path) -> Any:
        recorded = Recorded()
        registry = _traced_registry(recorded)
        script = Script([call("add", {"a": 1, "b": 2}, "c1")], [call("refund", {"order": "A7"}, "c2")], "done")
        agent = Agent(script.model, toolsets=[GovernedToolset(registry, context=ACME)], output_type=[str, DeferredToolRequests],
                      capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=recorded.tracer_provider))])
        await agent.run("go")
        spans = recorded.spans()
        by_id = {span.context.span_id: span for span in spans}
        shape = []
        for span in recorded.call_spans():
            attributes = dict(span.attributes or {})
            children = sorted(s.name for s in spans if s.parent is not None and s.parent.span_id == span.context.span_id)
            above = by_id.get(span.parent.span_id) if span.parent is not None else None
            parent = above.name if above is not None else None
            shape.append((span.name, span.instrumentation_scope.name if span.instrumentation_scope else None, parent,
                          children, {k: v for k, v in attributes.items() if k.startswith("tether.") or k == "error.type"},
                          span.status.status_code.name))
        return sorted(shape, key=repr)

    shape = await _both(monkeypatch, tmp_path, scenario)
    assert len(shape) == 2  # one execute_tool span per call: pydantic-ai's, adopted
    assert all(not (scope or "").startswith("tether") for _, scope, *_ in shape)


def _traced_registry(recorded: Recorded) -> ToolRegistry:
    """``add`` and ``refund`` (approval required) on a registry that records spans into ``recorded``."""
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    registry.register(PythonFunction.from_callable(add, name="add"))
    registry.register(PythonFunction.from_callable(refund, name="refund"), None, ToolRegistrationOptions(requires_approval=True))
    return registry
