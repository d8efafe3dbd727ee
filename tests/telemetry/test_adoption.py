"""Adopting a framework's span (tether_clr.telemetry.adopted_spans): the call's attributes and children go on
the given span, which the library never ends; a call without one keeps its own span; the adoption holds for
the batches started inside the context manager only. Read back through the real SDK's in-memory exporter."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode

from tests.support import Approver, call, run_batch, session_scope
from tests.support.telemetry import Recorded
from tether_clr import ApprovalResult, PythonFunction, RequestContext, ToolRegistrationOptions, ToolRegistry
from tether_clr.telemetry import adopted_spans, approvals_captured, span_to_adopt

pytestmark = pytest.mark.anyio

CTX = RequestContext("acme", "alice")


async def echo(text: str) -> str:
    """Says the text back."""
    return text


def _registry(recorded: Recorded) -> ToolRegistry:
    registry = recorded.registry()
    registry.register(PythonFunction.from_callable(echo, name="echo"))
    registry.register(PythonFunction.from_callable(echo, name="gated"), None, ToolRegistrationOptions(requires_approval=True))
    registry.register_guard(None, lambda e: "no shouting" if e.arguments.get("text") == "LOUD" else None)
    return registry


def _framework_span(recorded: Recorded, call_id: str, **attributes: Any) -> Any:
    """What a framework's tracer would start for a call: its own execute_tool span, with its own attributes."""
    return recorded.tracer.start_span("framework execute_tool echo",
                                      attributes={"gen_ai.tool.call.id": call_id, **attributes})


def _children(recorded: Recorded, parent: Any) -> list[ReadableSpan]:
    span_id = parent.get_span_context().span_id
    return [s for s in recorded.spans() if s.parent is not None and s.parent.span_id == span_id]


async def test_an_adopted_span_gets_the_calls_attributes_and_children_and_is_never_ended_by_the_library() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    framework = _framework_span(recorded, "c1", **{"gen_ai.tool.name": "echo-as-the-framework-names-it"})
    with adopted_spans({"c1": framework}):
        (outcome,) = await registry.execute_batch([call("c1", "echo", {"text": "hi"})], registry.assemble(CTX))
    assert outcome.failure is None
    assert framework.is_recording()  # not ended: the framework ends its own span
    assert recorded.call_spans() == []  # no second execute_tool span
    attributes = framework.attributes
    assert attributes["gen_ai.tool.name"] == "echo-as-the-framework-names-it"  # the framework's gen_ai.* win
    assert attributes["gen_ai.tool.description"] == "Says the text back." and attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["tether.stage"] == "body" and attributes["tether.tenant.id"] == "acme"
    assert attributes["tether.tool.version"] and attributes["tether.tool.schema_hash"]
    assert [s.name for s in _children(recorded, framework)] == ["tether.body"]
    framework.end()
    assert [s.name for s in recorded.spans()] == ["tether.body", "framework execute_tool echo"]


async def test_a_failed_call_sets_its_code_reason_and_error_status_on_the_adopted_span() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    framework = _framework_span(recorded, "c1")
    with adopted_spans({"c1": framework}):
        (outcome,) = await run_batch(registry, call("c1", "echo", {"text": "LOUD"}))
    framework.end()
    assert outcome.code == "DENIED"
    (span,) = recorded.spans()
    assert span.attributes is not None and span.attributes["error.type"] == "DENIED" and span.attributes["tether.stage"] == "guard"
    assert span.status.status_code is StatusCode.ERROR


async def test_the_approval_and_body_spans_of_an_adopted_call_are_its_children_and_the_body_sees_them_current() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    registry.approval = Approver(ApprovalResult.APPROVED)
    seen: list[int] = []

    async def probe(text: str) -> str:
        seen.append(trace.get_current_span().get_span_context().span_id)
        return text

    registry.register(PythonFunction.from_callable(probe, name="probe"), None, ToolRegistrationOptions(requires_approval=True))
    framework = _framework_span(recorded, "c1")
    with adopted_spans({"c1": framework}):
        await run_batch(registry, call("c1", "probe", {"text": "x"}), scope=session_scope())
    children = {s.name: s for s in _children(recorded, framework)}
    assert set(children) == {"tether.approval", "tether.body"}
    assert seen == [children["tether.body"].context.span_id]


async def test_a_call_without_an_adopted_span_keeps_its_own_span_under_the_current_one() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    framework = _framework_span(recorded, "c1")
    with recorded.tracer.start_as_current_span("host") as host, adopted_spans({"c1": framework}):
        await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "echo", {"text": "b"}))
    (own,) = recorded.call_spans()
    assert own.attributes is not None and own.attributes["gen_ai.tool.call.id"] == "c2"
    assert own.parent is not None and own.parent.span_id == host.get_span_context().span_id
    assert framework.attributes["tether.stage"] == "body"


async def test_adoption_holds_only_for_batches_started_inside_the_context_manager() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    framework = _framework_span(recorded, "c1")
    with adopted_spans({"c1": framework}):
        pass
    await run_batch(registry, call("c1", "echo", {"text": "a"}))
    assert [s.name for s in recorded.call_spans()] == ["execute_tool echo"]
    assert "tether.stage" not in framework.attributes


async def test_a_span_given_for_two_calls_or_not_recording_is_not_adopted() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    shared = _framework_span(recorded, "c1")
    silent = NonRecordingSpan(SpanContext(1, 2, False))
    with adopted_spans({"c1": shared, "c2": shared, "c3": silent}):
        await run_batch(registry, *(call(f"c{i}", "echo", {"text": "a"}) for i in (1, 2, 3)))
    assert sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in recorded.call_spans()) == ["c1", "c2", "c3"]
    assert "tether.stage" not in shared.attributes


async def test_span_to_adopt_is_the_current_span_only_when_it_says_it_is_that_calls() -> None:
    recorded = Recorded()
    with recorded.tracer.start_as_current_span("framework", attributes={"gen_ai.tool.call.id": "c1"}) as span:
        assert span_to_adopt("c1") is span and span_to_adopt() is span
        assert span_to_adopt("c2") is None
    with recorded.tracer.start_as_current_span("host"):
        assert span_to_adopt("c1") is None
    assert span_to_adopt() is None  # nothing current


async def test_in_a_batch_that_captures_approvals_an_asked_call_is_recorded_as_asked_not_denied() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    registry.approval = Approver(ApprovalResult.REJECTED)
    framework = _framework_span(recorded, "c1")
    with approvals_captured(), adopted_spans({"c1": framework}):
        (outcome,) = await run_batch(registry, call("c1", "gated", {"text": "x"}), scope=session_scope())
    framework.end()
    assert outcome.code == "DENIED"  # the capture's refusal keeps the body from running
    span = recorded.one("framework execute_tool echo")
    attributes = span.attributes or {}
    assert attributes["tether.approval.asked"] is True and attributes["tether.stage"] == "approval"
    assert "error.type" not in attributes and span.status.status_code is StatusCode.UNSET
    assert [s.name for s in _children(recorded, framework)] == ["tether.approval"]


async def test_outside_a_capture_an_approval_refusal_is_a_denial_and_a_refusal_without_asking_is_never_asked() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    registry.approval = Approver(ApprovalResult.REJECTED)
    await run_batch(registry, call("c1", "gated", {"text": "x"}), scope=session_scope())
    with approvals_captured():  # no session to ask in: refused before any provider is asked
        await run_batch(registry, call("c2", "gated", {"text": "x"}))
    for span in recorded.call_spans():
        attributes = span.attributes or {}
        assert attributes["error.type"] == "DENIED" and "tether.approval.asked" not in attributes


async def test_adopted_calls_are_counted_and_timed_as_any_other() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    framework = _framework_span(recorded, "c1")
    with adopted_spans({"c1": framework}):
        await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "echo", {"text": "LOUD"}))
    assert recorded.counts("tether.tool.duration") == {
        (("gen_ai.tool.name", "echo"), ("tether.outcome.code", "OK")): 1,
        (("gen_ai.tool.name", "echo"), ("tether.outcome.code", "DENIED")): 1,
    }
    assert recorded.counts() == recorded.counts("tether.tool.duration")
