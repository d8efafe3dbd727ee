"""The execute_tool spans of tether_clr nest under the host's OpenTelemetry span around the LangGraph run.

LangChain and LangGraph trace through callbacks (LangSmith), not OpenTelemetry: the framework's
current span is the host's (or an OTel instrumentation's) span around ``graph.ainvoke``; LangGraph
runs nodes in tasks that copy the context, so the span is current inside the tools. asyncio only,
as every LangGraph run (see test_langchain.py).
"""

from __future__ import annotations

import pytest

from tether_clr import PythonFunction, RequestContext
from tether_clr.integrations.langchain import GovernedTools

from tests.integrations.lc_scripted import ScriptedChat, agent_graph, call, thread
from tests.support.telemetry import Recorded

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_execute_tool_span_is_a_child_of_the_hosts_span_around_the_graph_run() -> None:
    recorded = Recorded()
    registry = recorded.registry()

    def add(a: int, b: int) -> int:
        return a + b

    registry.register(PythonFunction.from_callable(add, name="add"))
    chat = ScriptedChat.of([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 3, "b": 4}, "c2")],
                           [call("add", {"a": 5, "b": 6}, "c3")], "done")
    graph = agent_graph(chat, GovernedTools(registry, context=RequestContext("acme", "alice")))
    with recorded.tracer.start_as_current_span("agent run") as host:
        await graph.ainvoke({"messages": [("user", "add")]}, thread())
    ours = recorded.spans("execute_tool add")
    assert len(ours) == 3
    for span in ours:
        assert span.parent is not None and span.parent.span_id == host.get_span_context().span_id
        assert span.context.trace_id == host.get_span_context().trace_id
    assert sorted(str(s.attributes["gen_ai.tool.call.id"]) for s in ours if s.attributes) == ["c1", "c2", "c3"]
