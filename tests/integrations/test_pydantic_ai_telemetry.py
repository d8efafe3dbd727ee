"""One ``execute_tool`` span per call under pydantic-ai: its own, adopted by tether_clr (OpenTelemetry, one trace).

With pydantic-ai's ``Instrumentation`` capability, every call's span is pydantic-ai's
``execute_tool <name>``; the library sets its ``tether.*`` attributes on it and nests its
``tether.approval`` / ``tether.body`` spans under it, never a second ``execute_tool``.
Without it, the library's own span is a child of the host's current span.

asyncio only, as every pydantic-ai agent run (see test_pydantic_ai.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from tether_clr import PythonFunction, RequestContext, SqliteSessionStore, ToolRegistrationOptions, ToolRegistry
from tether_clr.integrations.pydantic_ai import GovernedToolset

from tests.integrations.scripted import Script, call
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _registry(recorded: Recorded) -> ToolRegistry:
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    registry.register(PythonFunction.from_callable(add, name="add"))
    registry.register(PythonFunction.from_callable(refund, name="refund"), None, ToolRegistrationOptions(requires_approval=True))
    registry.register_guard(None, lambda e: "too big" if e.name == "add" and e.arguments["a"] > 100 else None)
    return registry


def _traced(script: Script, registry: ToolRegistry, recorded: Recorded, **options: Any) -> Agent[Any, Any]:
    return Agent(script.model, toolsets=[GovernedToolset(registry, context=ACME)], **options,
                 capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=recorded.tracer_provider))])


def _tool_spans(recorded: Recorded) -> dict[str, ReadableSpan]:
    """Every ``execute_tool`` span, by call id (asserting there is one per call)."""
    spans = recorded.call_spans()
    by_id = {str((span.attributes or {})["gen_ai.tool.call.id"]): span for span in spans}
    assert len(by_id) == len(spans), [(s.name, s.instrumentation_scope.name if s.instrumentation_scope else None) for s in spans]
    return by_id


def _children(recorded: Recorded, parent: ReadableSpan) -> list[str]:
    return sorted(s.name for s in recorded.spans() if s.parent is not None and s.parent.span_id == parent.context.span_id)


async def test_two_parallel_calls_each_have_one_execute_tool_span_pydantic_ais_with_the_librarys_attributes_and_children() -> None:
    recorded = Recorded()
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 500, "b": 4}, "c2")], "done")
    await _traced(script, _registry(recorded), recorded).run("add")
    spans = _tool_spans(recorded)
    assert set(spans) == {"c1", "c2"}
    for span in spans.values():
        assert span.instrumentation_scope is not None and not span.instrumentation_scope.name.startswith("tether")
        attributes = span.attributes or {}
        assert attributes["tether.tenant.id"] == "acme" and attributes["tether.principal.id"] == "alice"
        assert attributes["tether.tool.version"] and attributes["tether.tool.schema_hash"]
        assert attributes["gen_ai.tool.description"] == "Add two numbers."
    ok, denied = spans["c1"], spans["c2"]
    assert ok.attributes is not None and ok.attributes["tether.stage"] == "body" and "error.type" not in ok.attributes
    assert _children(recorded, ok) == ["tether.body"]
    assert denied.attributes is not None and denied.attributes["tether.stage"] == "guard"
    assert denied.attributes["error.type"] == "DENIED" and denied.status.status_code is StatusCode.ERROR
    assert _children(recorded, denied) == []
    assert ok.parent is not None and denied.parent is not None and ok.parent.span_id == denied.parent.span_id


async def test_a_denied_call_with_a_reason_carries_it_on_pydantic_ais_span() -> None:
    recorded = Recorded()
    registry = _registry(recorded)

    async def slow() -> str:
        await anyio.sleep(30)
        return "late"

    registry.register(PythonFunction.from_callable(slow, name="slow"), None, ToolRegistrationOptions(timeout=0.05))
    script = Script([call("slow", {}, "c1")], "done")
    await _traced(script, registry, recorded).run("slow")
    (span,) = _tool_spans(recorded).values()
    attributes = span.attributes or {}
    assert attributes["error.type"] == "ABORTED" and attributes["tether.failure.reason"] == "timeout"
    assert span.status.status_code is StatusCode.ERROR and _children(recorded, span) == ["tether.body"]


async def test_an_approved_call_has_the_approval_and_body_spans_under_its_own_pydantic_ai_span() -> None:
    recorded = Recorded()
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2")], "done")
    agent = _traced(script, _registry(recorded), recorded, output_type=[str, DeferredToolRequests])
    first = await agent.run("refund")
    assert isinstance(first.output, DeferredToolRequests)
    asked = _tool_spans(recorded)["c2"]
    attributes = asked.attributes or {}
    assert attributes["tether.stage"] == "approval" and attributes["tether.approval.asked"] is True
    assert "error.type" not in attributes and asked.status.status_code is not StatusCode.ERROR  # a question, not a denial
    assert _children(recorded, asked) == ["tether.approval"]
    recorded.exporter.clear()
    await agent.run(message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(approvals={"c2": True}))
    approved = _tool_spans(recorded)["c2"]
    attributes = approved.attributes or {}
    assert attributes["tether.stage"] == "body" and "error.type" not in attributes
    assert "tether.approval" in _children(recorded, approved) and "tether.body" in _children(recorded, approved)


async def test_sequential_execution_still_has_one_span_per_call_for_the_call_that_ran_the_batch() -> None:
    """pydantic-ai's sequential mode starts the second call only after the first ends: the batch (run in the
    first call's task) cannot adopt a span that does not exist yet, so that call's library span is its own,
    under the first call's span, and pydantic-ai's later span of it is the second."""
    recorded = Recorded()
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 3, "b": 4}, "c2")], "done")
    agent = _traced(script, _registry(recorded), recorded)
    with ToolManager.parallel_execution_mode("sequential"):
        result = await agent.run("add")
    assert result.output == "done"
    spans = recorded.call_spans()
    first = [s for s in spans if (s.attributes or {}).get("gen_ai.tool.call.id") == "c1"]
    assert len(first) == 1 and (first[0].attributes or {})["tether.stage"] == "body"
    ours = [s for s in spans if s.instrumentation_scope is not None and s.instrumentation_scope.name == "tether_clr"]
    assert [(s.attributes or {})["gen_ai.tool.call.id"] for s in ours] == ["c2"]
    assert ours[0].parent is not None and ours[0].parent.span_id == first[0].context.span_id


async def test_without_pydantic_ai_instrumentation_the_librarys_span_is_a_child_of_the_hosts_current_span() -> None:
    recorded = Recorded()
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 3, "b": 4}, "c2")], "done")
    agent = Agent(script.model, toolsets=[GovernedToolset(_registry(recorded), context=ACME)])
    with recorded.tracer.start_as_current_span("host request") as host:
        await agent.run("add")
    spans = _tool_spans(recorded)
    assert set(spans) == {"c1", "c2"}
    for span in spans.values():
        assert span.instrumentation_scope is not None and span.instrumentation_scope.name == "tether_clr"
        assert span.parent is not None and span.parent.span_id == host.get_span_context().span_id
        assert _children(recorded, span) == ["tether.body"]


async def test_with_a_store_a_parked_call_is_suspended_on_its_span_and_the_resumed_call_runs_under_its_new_one(tmp_path: Path) -> None:
    recorded = Recorded()
    store = SqliteSessionStore(tmp_path / "log.sqlite3")
    script = Script([call("refund", {"order": "A7"}, "c1")], "done")
    agent = Agent(script.model, toolsets=[GovernedToolset(_registry(recorded), context=ACME, store=store, session_id="s1")],
                  output_type=[str, DeferredToolRequests],
                  capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=recorded.tracer_provider))])
    first = await agent.run("refund")
    assert isinstance(first.output, DeferredToolRequests)
    parked = _tool_spans(recorded)["c1"]
    assert (parked.attributes or {})["tether.suspended"] is True and parked.status.status_code is not StatusCode.ERROR
    recorded.exporter.clear()
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(approvals={"c1": True}))
    assert second.output == "done"
    resumed = _tool_spans(recorded)["c1"]
    assert (resumed.attributes or {})["tether.stage"] == "body"
    assert _children(recorded, resumed) == ["tether.approval", "tether.body"]
    store.close()
