"""Batch scheduling: grouping, bounded overlap, model-order sink, cancellation drain,
and infrastructure faults (ports the intent of Tether's ToolSchedulerTests)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support import DEADLOCK_GUARD, FailingSink, add, call, codes
from tether_clr import (
    CancellationSource,
    CancellationToken,
    InMemoryToolLog,
    ResultPolicyError,
    SinkError,
    ToolPostDecision,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

class Gate:
    """Bodies that block until the test (or enough siblings) let them go."""

    def __init__(self, expected: int = 0) -> None:
        self.expected = expected
        self.active = 0
        self.peak = 0
        self.started: list[str] = []
        self.finished: list[str] = []
        self.all_started = anyio.Event()
        self.release: dict[str, anyio.Event] = {}

    def tool(self):
        async def body(tag: str) -> str:
            self.started.append(tag)
            self.active += 1
            self.peak = max(self.peak, self.active)
            if len(self.started) == self.expected:
                self.all_started.set()
            try:
                await self.release.setdefault(tag, anyio.Event()).wait()
            finally:
                self.active -= 1
            self.finished.append(tag)
            return tag

        return body

    def open(self, tag: str) -> None:
        self.release.setdefault(tag, anyio.Event()).set()


async def test_parallel_bodies_overlap_and_outcomes_keep_model_order() -> None:
    registry = ToolRegistry()
    gate = Gate(expected=3)
    add(registry, gate.tool(), "wait", parallel=True)
    calls = [call(f"c{i}", "wait", {"tag": t}) for i, t in enumerate("abc")]
    sink = InMemoryToolLog()
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch(calls, registry.seal(), max_parallelism=3, sink=sink))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await gate.all_started.wait()  # only reachable if all three bodies overlap
            for tag in "cba":  # finish in reverse order
                gate.open(tag)
                await anyio.sleep(0.01)
    assert gate.finished == ["c", "b", "a"]
    assert [o.value for o in result] == ["a", "b", "c"]
    assert [o.call_id for o in sink.outcomes] == ["c0", "c1", "c2"]


async def test_max_parallelism_bounds_overlap() -> None:
    registry = ToolRegistry()
    gate = Gate(expected=2)
    add(registry, gate.tool(), "wait", parallel=True)
    calls = [call(f"c{i}", "wait", {"tag": str(i)}) for i in range(5)]
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch(calls, registry.seal(), max_parallelism=2))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await gate.all_started.wait()
            await anyio.sleep(0.05)  # room for a broken limiter to start a third body
            assert gate.active == 2
            for i in range(5):
                gate.open(str(i))
    assert gate.peak == 2
    assert [o.value for o in result] == [str(i) for i in range(5)]


async def test_exclusive_call_is_a_barrier() -> None:
    registry = ToolRegistry()
    timeline: list[str] = []

    async def reader(tag: str) -> str:
        timeline.append(f"start {tag}")
        await anyio.sleep(0.01 if tag == "r1" else 0)
        timeline.append(f"end {tag}")
        return tag

    async def writer() -> str:
        timeline.append("start w")
        await anyio.sleep(0)
        timeline.append("end w")
        return "w"

    add(registry, reader, "read", parallel=True)
    add(registry, writer, "write")
    calls = [
        call("1", "read", {"tag": "r1"}),
        call("2", "read", {"tag": "r2"}),
        call("3", "write"),
        call("4", "read", {"tag": "r3"}),
    ]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal())
    assert codes(outcomes) == [None] * 4
    w_start, w_end = timeline.index("start w"), timeline.index("end w")
    assert timeline.index("end r1") < w_start and timeline.index("end r2") < w_start
    assert w_end < timeline.index("start r3")
    assert timeline.index("start r2") < timeline.index("end r1")  # the readers did overlap


async def test_call_declared_is_awaited_before_body_and_outcomes_follow_model_order() -> None:
    registry = ToolRegistry()
    events: list[str] = []

    async def body(tag: str) -> str:
        events.append(f"body {tag}")
        await anyio.sleep(0.02 if tag == "a" else 0)
        return tag

    add(registry, body, "t", parallel=True)

    class SlowSink:
        async def call_declared(self, c):
            await anyio.sleep(0.005)
            events.append(f"declared {c.call_id}")

        async def outcome_ready(self, outcome):
            events.append(f"outcome {outcome.call_id}")

    calls = [call("a", "t", {"tag": "a"}), call("b", "t", {"tag": "b"})]
    await registry.execute_batch(calls, registry.seal(), sink=SlowSink())
    assert events.index("declared a") < events.index("body a")
    assert events.index("declared b") < events.index("body b")
    assert [e for e in events if e.startswith("outcome")] == ["outcome a", "outcome b"]


async def test_decision_stages_run_in_model_order_while_bodies_finish_out_of_order() -> None:
    registry = ToolRegistry()
    stages: list[str] = []

    async def body(delay: float) -> float:
        await anyio.sleep(delay)
        stages.append(f"body {delay}")
        return delay

    add(registry, body, "t", parallel=True)

    async def pre(execution, next_):
        stages.append(f"pre {execution.call_id}")
        return await next_()

    async def post(execution, outcome, next_):
        stages.append(f"post {execution.call_id}")
        return ToolPostDecision.accept()

    registry.register_pre_execute_listener(None, pre)
    registry.register_guard(None, lambda e: stages.append(f"guard {e.call_id}"))
    registry.register_post_execute_listener(None, post)
    calls = [call("c0", "t", {"delay": 0.03}), call("c1", "t", {"delay": 0.0}), call("c2", "t", {"delay": 0.01})]
    await registry.execute_batch(calls, registry.seal())
    only = lambda prefix: [s for s in stages if s.startswith(prefix)]  # noqa: E731
    assert only("pre") == ["pre c0", "pre c1", "pre c2"]
    assert only("guard") == ["guard c0", "guard c1", "guard c2"]
    assert only("post") == ["post c0", "post c1", "post c2"]
    assert only("body")[0] == "body 0.0"


async def test_mixed_failures_in_one_batch_each_get_a_stable_code() -> None:
    registry = ToolRegistry()

    def boom() -> None:
        raise ValueError("bad")

    add(registry, boom)
    add(registry, lambda n: n, "echo")
    sink = InMemoryToolLog()
    calls = [call("1", "ghost"), call("2", "echo", "{"), call("3", "boom"), call("4", "echo", {"n": 4})]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=sink)
    assert codes(outcomes) == ["UNKNOWN_TOOL", "INVALID_ARGS", "TOOL_ERROR", None]
    assert sink.events == [
        ("declared", "1"), ("outcome", "1"),
        ("declared", "2"), ("outcome", "2"),
        ("declared", "3"), ("outcome", "3"),
        ("declared", "4"), ("outcome", "4"),
    ]


async def test_cancellation_drains_started_and_aborts_unstarted_calls() -> None:
    registry = ToolRegistry()
    gate = Gate(expected=2)
    add(registry, gate.tool(), "wait", parallel=True)
    ran_after: list[str] = []
    add(registry, lambda: ran_after.append("x"), "later")
    calls = [call(f"c{i}", "wait", {"tag": str(i)}) for i in range(4)] + [call("c4", "later")]
    source = CancellationSource()
    sink = InMemoryToolLog()
    result: list[Any] = []

    async def run() -> None:
        result.extend(
            await registry.execute_batch(calls, registry.seal(), max_parallelism=2, sink=sink, cancellation=source.token)
        )

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await gate.all_started.wait()
            source.cancel("user stopped the agent")
    assert codes(result) == ["ABORTED", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert gate.started == ["0", "1"] and gate.active == 0
    assert ran_after == []
    assert [c.call_id for c in sink.calls] == ["c0", "c1", "c2", "c3", "c4"]
    assert [o.call_id for o in sink.outcomes] == ["c0", "c1", "c2", "c3", "c4"]
    assert "user stopped the agent" in result[0].failure.message


async def test_already_cancelled_batch_dispatches_nothing() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    source = CancellationSource()
    source.cancel()
    outcomes = await registry.execute_batch([call("a", "t"), call("b", "t")], registry.seal(), cancellation=source.token)
    assert codes(outcomes) == ["ABORTED_BEFORE_DISPATCH"] * 2
    assert ran == []


async def test_body_that_observes_token_gets_aborted() -> None:
    registry = ToolRegistry()
    started = anyio.Event()

    async def cooperative(cancellation: CancellationToken) -> str:
        started.set()
        while True:
            cancellation.raise_if_cancelled()
            await anyio.sleep(0.001)

    add(registry, cooperative)
    source = CancellationSource()
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch([call("c", "cooperative")], registry.seal(), cancellation=source.token))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            source.cancel("stop")
    assert codes(result) == ["ABORTED"]


async def test_result_policy_failure_cleans_up_every_dispatched_call() -> None:
    registry = ToolRegistry()
    gate = Gate()
    add(registry, gate.tool(), "wait", parallel=True)
    cleaned: list[str] = []

    async def lease(dispatch, next_):
        try:
            return await next_()
        finally:
            cleaned.append(dispatch.execution.call_id)

    registry.register_execute_listener(None, lease)

    async def reject_first(execution, outcome):
        if execution.call_id == "c0":
            raise RuntimeError("c0 is not allowed to return this")

    registry.register_result_policy(None, reject_first)
    seen_by_listeners: list[str] = []
    registry.register_result_listener(None, lambda outcome: seen_by_listeners.append(outcome.call_id))
    sink = InMemoryToolLog()
    calls = [call(f"c{i}", "wait", {"tag": str(i)}) for i in range(3)] + [call("c3", "wait", {"tag": "never"})]
    gate.expected = 3
    raised: list[ResultPolicyError] = []

    async def run() -> None:
        with pytest.raises(ResultPolicyError) as info:
            await registry.execute_batch(calls, registry.seal(), max_parallelism=3, sink=sink)
        raised.append(info.value)
        assert gate.active == 0  # nothing left running once execute_batch raised

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await gate.all_started.wait()
            gate.open("0")  # c0 finishes; c1 and c2 stay in flight until the batch aborts
    assert sorted(cleaned) == ["c0", "c1", "c2"]
    assert sink.outcomes == [] and seen_by_listeners == []
    assert raised[0].outcome.call_id == "c0" and raised[0].delivered == ()
    assert "never" not in gate.started  # queued behind the limiter, never dispatched


async def test_result_policy_failure_reports_what_was_delivered() -> None:
    registry = ToolRegistry()
    add(registry, lambda n: n, "echo")

    def reject_b(execution, outcome):
        if execution.call_id == "b":
            raise RuntimeError("no")

    registry.register_result_policy(None, reject_b)
    sink = InMemoryToolLog()
    with pytest.raises(ResultPolicyError) as info:
        await registry.execute_batch([call("a", "echo", {"n": 1}), call("b", "echo", {"n": 2}), call("c", "echo", {"n": 3})], registry.seal(), sink=sink)
    assert [o.call_id for o in info.value.delivered] == ["a"]
    assert [o.call_id for o in sink.outcomes] == ["a"]
    assert [c.call_id for c in sink.calls] == ["a", "b"]  # c was never declared, never ran


@pytest.mark.parametrize("failing", ["call_declared", "outcome_ready"])
async def test_sink_failure_is_raised_not_disguised(failing: str) -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")

    with pytest.raises(SinkError, match="disk full"):
        await registry.execute_batch([call("a", "t"), call("b", "t")], registry.seal(), sink=FailingSink(failing))
    assert ran == ([] if failing == "call_declared" else [1])


async def test_body_that_ignores_cancellation_reports_its_real_result() -> None:
    registry = ToolRegistry()
    started = anyio.Event()

    async def stubborn() -> str:
        started.set()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.01)
        return "side effect happened"

    add(registry, stubborn)
    source = CancellationSource()
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch([call("c", "stubborn")], registry.seal(), cancellation=source.token))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            source.cancel()
    assert result[0].value == "side effect happened"


async def test_empty_batch_returns_nothing() -> None:
    registry = ToolRegistry()
    assert await registry.execute_batch([], registry.seal()) == []
