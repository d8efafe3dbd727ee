"""The execute_tool spans of tether_clr nest under the host's current OpenTelemetry span around an SDK run.

The OpenAI Agents SDK traces with its own tracing (``agents.tracing``: traces and spans sent to
its processors), not OpenTelemetry. Its tool calls run in asyncio tasks created inside
``Runner.run``, so they carry the OpenTelemetry context current when the host called it: the
library's spans are children of the host's span (first test). A host that bridges the SDK's
spans to OpenTelemetry with a trace processor that makes each SDK function span the current
OpenTelemetry span gets the library's span under that one (second test).

asyncio only, as every SDK run (see test_openai_agents.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.tracing import Span, Trace, TracingProcessor, get_trace_provider, set_trace_processors
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from tether_clr import PythonFunction, RequestContext
from tether_clr.integrations.openai_agents import governed_tools

from tests.integrations.scripted_agents import ScriptedModel, call
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _recorded_registry() -> tuple[Recorded, Any]:
    recorded = Recorded()
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        return a + b

    registry.register(PythonFunction.from_callable(add, name="add"))
    return recorded, registry


async def test_each_execute_tool_span_is_a_child_of_the_hosts_span_around_the_run() -> None:
    recorded, registry = _recorded_registry()
    model = ScriptedModel([call("add", {"a": 1, "b": 2}, "c1")], [call("add", {"a": 3, "b": 4}, "c2")], "done")
    agent = Agent(name="agent", model=model, tools=governed_tools(registry, context=ACME))
    with recorded.tracer.start_as_current_span("handle request") as host:
        await Runner.run(agent, "add", run_config=RunConfig(tracing_disabled=True))
    ours = recorded.spans("execute_tool add")
    assert len(ours) == 2
    for span in ours:
        assert span.parent is not None and span.parent.span_id == host.get_span_context().span_id
        assert span.context.trace_id == host.get_span_context().trace_id
    assert sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in ours) == ["c1", "c2"]


class _Bridge(TracingProcessor):
    """A host's bridge: each SDK function span becomes an OpenTelemetry span, current while it is open."""

    def __init__(self, tracer: otel_trace.Tracer) -> None:
        self.tracer = tracer
        self.open: dict[str, tuple[otel_trace.Span, object]] = {}

    def on_trace_start(self, trace: Trace) -> None: ...

    def on_trace_end(self, trace: Trace) -> None: ...

    def on_span_start(self, span: Span[Any]) -> None:
        if span.span_data.type != "function":
            return
        otel_span = self.tracer.start_span(f"sdk function {getattr(span.span_data, 'name', '')}")
        token = otel_context.attach(otel_trace.set_span_in_context(otel_span))
        self.open[span.span_id] = (otel_span, token)

    def on_span_end(self, span: Span[Any]) -> None:
        found = self.open.pop(span.span_id, None)
        if found is not None:
            otel_context.detach(found[1])  # type: ignore[arg-type]
            found[0].end()

    def shutdown(self) -> None: ...

    def force_flush(self) -> None: ...


async def test_with_the_sdks_spans_bridged_to_opentelemetry_execute_tool_nests_under_the_sdks_function_span() -> None:
    recorded, registry = _recorded_registry()
    multi = getattr(get_trace_provider(), "_multi_processor", None)
    saved = list(getattr(multi, "_processors", ()))
    set_trace_processors([_Bridge(recorded.tracer)])
    try:
        model = ScriptedModel([call("add", {"a": 1, "b": 2}, "c1")], "done")
        agent = Agent(name="agent", model=model, tools=governed_tools(registry, context=ACME))
        await Runner.run(agent, "add", run_config=RunConfig(tracing_disabled=False))
    finally:
        set_trace_processors(saved)
    (ours,) = recorded.spans("execute_tool add")
    (theirs,) = recorded.spans("sdk function add")
    assert ours.parent is not None and ours.parent.span_id == theirs.context.span_id
    assert ours.context.trace_id == theirs.context.trace_id
