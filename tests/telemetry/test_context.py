"""Context propagation under asyncio and trio: the host's span around ``execute_batch`` is the parent of
the call spans; a body (async, or synchronous in a worker thread) runs with its ``tether.body`` span
current, and nothing it sets leaks out; the calls of a parallel group overlap in the trace as their bodies did."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry import trace

from tests.support import call, run_batch
from tests.support.telemetry import Recorded
from tether_clr import PythonFunction, ToolRegistrationOptions

pytestmark = pytest.mark.anyio


def _current_span_id() -> str:
    return format(trace.get_current_span().get_span_context().span_id, "016x")


async def test_the_hosts_span_around_execute_batch_is_the_parent_of_every_call_span() -> None:
    recorded = Recorded()
    registry = recorded.registry()

    async def echo(text: str) -> str:
        return text

    registry.register(PythonFunction.from_callable(echo, name="echo"))
    with recorded.tracer.start_as_current_span("agent step") as host:
        await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "echo", {"text": "b"}), call("c3", "nope"))
    calls = recorded.call_spans()
    assert len(calls) == 3
    for span in calls:
        assert span.parent is not None and span.parent.span_id == host.get_span_context().span_id
        assert span.context.trace_id == host.get_span_context().trace_id


async def test_without_a_host_span_each_call_span_is_a_root() -> None:
    recorded = Recorded()
    registry = recorded.registry()

    async def echo(text: str) -> str:
        return text

    registry.register(PythonFunction.from_callable(echo, name="echo"))
    await run_batch(registry, call("c1", "echo", {"text": "a"}))
    assert recorded.one("execute_tool echo").parent is None


@pytest.mark.parametrize("kind", ["async", "sync in a worker thread"])
async def test_a_body_runs_with_its_body_span_current_and_the_caller_never_sees_it(kind: str) -> None:
    recorded = Recorded()
    registry = recorded.registry()

    async def seen_async() -> str:
        await anyio.sleep(0)
        return _current_span_id()

    def seen_sync() -> str:
        return _current_span_id()

    registry.register(PythonFunction.from_callable(seen_async if kind == "async" else seen_sync, name="seen"))
    with recorded.tracer.start_as_current_span("agent step") as host:
        (outcome,) = await run_batch(registry, call("c1", "seen"))
        assert trace.get_current_span() is host  # the body's span stayed in the body's context
    body = recorded.one("tether.body")
    assert outcome.value == format(body.context.span_id, "016x")
    assert body.parent is not None and body.parent.span_id == recorded.one("execute_tool seen").context.span_id


async def test_a_tools_own_spans_nest_under_its_body_span() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    tracer = recorded.tracer

    def work() -> str:
        with tracer.start_as_current_span("the tool's own work"):
            return "done"

    registry.register(PythonFunction.from_callable(work, name="work"))
    await run_batch(registry, call("c1", "work"))
    own, body = recorded.one("the tool's own work"), recorded.one("tether.body")
    assert own.parent is not None and own.parent.span_id == body.context.span_id


async def test_the_calls_of_a_parallel_group_overlap_as_their_bodies_did() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    started: dict[str, anyio.Event] = {"a": anyio.Event(), "b": anyio.Event()}

    async def meet(me: str, other: str) -> str:
        started[me].set()
        with anyio.fail_after(10):  # each body waits until the other one has started: they overlap
            await started[other].wait()
        return me

    registry.register(PythonFunction.from_callable(meet, name="meet"), None, ToolRegistrationOptions(is_concurrency_safe=True))
    with recorded.tracer.start_as_current_span("agent step"):
        outcomes = await run_batch(registry, call("c1", "meet", {"me": "a", "other": "b"}), call("c2", "meet", {"me": "b", "other": "a"}))
    assert [o.value for o in outcomes] == ["a", "b"]
    first, second = sorted(recorded.spans("tether.body"), key=lambda span: span.start_time or 0)
    assert first.start_time is not None and first.end_time is not None and second.start_time is not None and second.end_time is not None
    assert first.start_time < second.end_time and second.start_time < first.end_time
    calls: list[Any] = recorded.call_spans()
    assert calls[0].start_time < calls[1].end_time and calls[1].start_time < calls[0].end_time
    assert {span.parent.span_id for span in recorded.spans("tether.body") if span.parent} == {span.context.span_id for span in calls}
