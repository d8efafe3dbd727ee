"""The execute_tool spans of tether_clr nest under pydantic-ai's own spans (OpenTelemetry context, one trace).

asyncio only, as every pydantic-ai agent run (see test_pydantic_ai.py).
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings

from tether_clr import PythonFunction, RequestContext
from tether_clr.integrations.pydantic_ai import GovernedToolset

from tests.integrations.scripted import Script, call
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_execute_tool_span_is_a_child_of_pydantic_ais_tool_span_in_the_same_trace() -> None:
    recorded = Recorded()
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        return a + b

    registry.register(PythonFunction.from_callable(add, name="add"))
    script = Script([call("add", {"a": 1, "b": 2}, "c1")], [call("add", {"a": 3, "b": 4}, "c2")], "done")
    agent = Agent(script.model, toolsets=[GovernedToolset(registry, context=RequestContext("acme", "alice"))],
                  capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=recorded.tracer_provider))])
    await agent.run("add")
    spans = recorded.spans()
    ours = [s for s in spans if s.name == "execute_tool add" and s.instrumentation_scope.name.startswith("tether")]
    theirs = {s.context.span_id: s for s in spans if s.name.startswith("execute_tool") and s not in ours}
    assert len(ours) == 2 and len(theirs) == 2, [(s.name, s.instrumentation_scope.name) for s in spans]
    for span in ours:
        assert span.parent is not None and span.parent.span_id in theirs
        parent = theirs[span.parent.span_id]
        assert parent.attributes is not None and span.attributes is not None
        assert parent.attributes["gen_ai.tool.call.id"] == span.attributes["gen_ai.tool.call.id"]
        assert span.context.trace_id == parent.context.trace_id


async def test_the_calls_of_one_model_turn_nest_under_the_tool_span_of_the_call_that_ran_their_batch() -> None:
    recorded = Recorded()
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        return a + b

    registry.register(PythonFunction.from_callable(add, name="add"))
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 3, "b": 4}, "c2")], "done")
    agent = Agent(script.model, toolsets=[GovernedToolset(registry, context=RequestContext("acme", "alice"))],
                  capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=recorded.tracer_provider))])
    await agent.run("add")
    spans = recorded.spans()
    ours = [s for s in spans if s.name == "execute_tool add" and s.instrumentation_scope.name.startswith("tether")]
    theirs = {s.context.span_id: s for s in spans if s.name.startswith("execute_tool") and s not in ours}
    first = next(s for s in theirs.values() if s.attributes is not None and s.attributes["gen_ai.tool.call.id"] == "c1")
    assert len(ours) == 2
    assert all(span.parent is not None and span.parent.span_id == first.context.span_id for span in ours)
