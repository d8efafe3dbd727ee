"""The worker pool of a parallel group: admission when a worker is free, one cancel
scope per worker, and the delivery's say before a worker admits another call."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.support import DEADLOCK_GUARD, BlockingApprover, add, call, codes, session_scope
from tether_clr import (
    CancellationSource,
    CancellationToken,
    PythonFunction,
    ToolExecution,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

async def _run_and_cancel(
    registry: ToolRegistry, calls: list[Any], source: CancellationSource, *ready: anyio.Event, scope: Any = None, max_parallelism: int = 4
) -> list[Any]:
    """Run the batch, cancel ``source`` ("stop") once every ``ready`` event is set, return the outcomes."""
    result: list[Any] = []

    async def run() -> None:
        view = registry.seal(scope)
        result.extend(await registry.execute_batch(calls, view, max_parallelism=max_parallelism, cancellation=source.token))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            for event in ready:
                await event.wait()
            source.cancel("stop")
    return result


async def test_a_parallel_call_is_authorized_once_the_call_before_it_has_a_slot() -> None:
    """As with the bounded pool: admission runs ahead while slots are free, plus one call that waits for a slot."""
    registry = ToolRegistry()
    release = {tag: anyio.Event() for tag in "0123"}
    log: list[str] = []
    both_started = anyio.Event()

    async def wait(tag: str) -> str:
        log.append(f"body {tag}")
        if len([e for e in log if e.startswith("body")]) == 2:
            both_started.set()
        await release[tag].wait()
        return tag

    add(registry, wait, parallel=True)

    async def pre(execution: ToolExecution, next_: Any) -> ToolPreDecision:
        log.append(f"authorize {execution.call_id}")
        return await next_()

    registry.register_pre_execute_listener(None, pre)
    calls = [call(f"c{i}", "wait", {"tag": str(i)}) for i in range(4)]
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch(calls, registry.seal(), max_parallelism=2))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await both_started.wait()
            for _ in range(20):  # let every task run: whatever could be authorized now has been
                await anyio.lowlevel.checkpoint()
            assert [e for e in log if e.startswith("authorize")] == ["authorize c0", "authorize c1", "authorize c2"]
            release["1"].set()
            for tag in "023":
                release[tag].set()
    assert codes(result) == [None] * 4
    assert log.index("authorize c3") > log.index("body 1")
    assert [e for e in log if e.startswith("body")] == ["body 0", "body 1", "body 2", "body 3"]


async def test_parallel_body_that_ignores_cancellation_reports_its_real_result() -> None:
    registry = ToolRegistry()
    started = anyio.Event()
    blocked = anyio.Event()

    async def stubborn(tag: str) -> str:
        if tag == "s":
            started.set()
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)
            return "side effect happened"
        await blocked.wait()
        return "never"

    add(registry, stubborn, parallel=True)
    calls = [call("a", "stubborn", {"tag": "s"}), call("b", "stubborn", {"tag": "x"}), call("c", "stubborn", {"tag": "x"})]
    result = await _run_and_cancel(registry, calls, CancellationSource(), started, max_parallelism=2)
    assert codes(result) == [None, "ABORTED", "ABORTED_BEFORE_DISPATCH"]
    assert result[0].value == "side effect happened"
    assert result[1].failure.message == "cancelled: stop"


async def test_parallel_body_that_cancels_the_batch_and_returns_keeps_its_result_and_nothing_else_runs() -> None:
    registry = ToolRegistry()
    source = CancellationSource()
    ran: list[str] = []

    async def body(tag: str) -> str:
        ran.append(tag)
        if tag == "0":
            source.cancel("the tool gave up")  # no await after it: the body returns normally
        return tag

    add(registry, body, parallel=True)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(4)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=1, cancellation=source.token)
    assert codes(outcomes) == [None, "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert outcomes[0].value == "0" and ran == ["0"]


async def test_parallel_body_that_cancels_the_batch_and_awaits_is_aborted() -> None:
    registry = ToolRegistry()
    source = CancellationSource()

    async def body(tag: str) -> str:
        if tag == "0":
            source.cancel("the tool gave up")
            await anyio.sleep(1)
        return tag

    add(registry, body, parallel=True)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=2, cancellation=source.token)
    assert codes(outcomes)[0] == "ABORTED" and outcomes[0].failure.message == "cancelled: the tool gave up"
    assert codes(outcomes)[2] == "ABORTED_BEFORE_DISPATCH"


@pytest.mark.parametrize("max_parallelism", [1, 2])
async def test_cancellation_during_approval_in_a_parallel_group_is_reported_as_the_approval_wait(max_parallelism: int) -> None:
    """A worker between bodies (or before its first) is not interrupted by its own scope: the
    approval step reports the cancellation, and a body still running is ABORTED."""
    registry = ToolRegistry()
    approver = BlockingApprover()
    registry.approval = approver
    body_started = anyio.Event()

    async def work(tag: str) -> str:
        if tag == "slow":
            body_started.set()
            await anyio.sleep_forever()
        return tag

    registry.register(PythonFunction.from_callable(work), None, ToolRegistrationOptions(is_concurrency_safe=True))
    registry.register(
        PythonFunction.from_callable(lambda: "done", name="gated"), None,
        ToolRegistrationOptions(is_concurrency_safe=True, requires_approval=True),
    )
    scope = session_scope()
    first = "slow" if max_parallelism == 2 else "quick"
    calls = [call("c0", "work", {"tag": first}, scope=scope), call("c1", "gated", scope=scope), call("c2", "work", {"tag": "x"}, scope=scope)]
    ready = (approver.asked, body_started) if max_parallelism == 2 else (approver.asked,)
    result = await _run_and_cancel(registry, calls, CancellationSource(), *ready, scope=scope, max_parallelism=max_parallelism)
    assert codes(result) == ["ABORTED" if max_parallelism == 2 else None, "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert result[1].failure.message == "cancelled while waiting for approval"


async def test_a_concurrency_classifier_that_changes_its_arguments_changes_nothing_else() -> None:
    registry = ToolRegistry()
    seen: list[Any] = []

    def meddle(arguments: Any) -> bool:
        arguments["text"] = "changed by the classifier"
        return True

    async def echo(text: str) -> str:
        seen.append(text)
        return text

    registry.register(PythonFunction.from_callable(echo), None, ToolRegistrationOptions(is_concurrency_safe=meddle))
    outcomes = await registry.execute_batch([call("a", "echo", {"text": "hi"}), call("b", "echo", {"text": "ho"})], registry.seal())
    assert [o.value for o in outcomes] == ["hi", "ho"] and seen == ["hi", "ho"]


async def test_a_constant_classifier_reads_the_arguments_as_the_pipeline_does() -> None:
    async def echo(text: str) -> str:
        return text

    parallel, plain = ToolRegistry(), ToolRegistry()
    add(parallel, echo, parallel=True)
    add(plain, echo)  # no classifier: the pipeline reads the arguments itself
    calls = [
        call("a", "echo", '{"text": "hi", "text": "dup"}'),
        call("b", "echo", '{"text": NaN}'),
        call("c", "echo", " "),
        call("d", "echo", '{"text": "\\u00e9t\\u00e9"}'),
    ]
    got = await parallel.execute_batch(calls, parallel.seal())
    want = await plain.execute_batch(calls, plain.seal())
    assert got == want  # frozen records: equal field by field
    assert codes(got) == [None, "INVALID_ARGS", "INVALID_ARGS", None]


async def test_token_is_unchanged_for_a_body_in_a_worker() -> None:
    registry = ToolRegistry()
    tokens: list[CancellationToken] = []

    async def body(cancellation: CancellationToken) -> str:
        tokens.append(cancellation)
        return "ok"

    add(registry, body, parallel=True)
    source = CancellationSource()
    outcomes = await registry.execute_batch([call("a", "body"), call("b", "body")], registry.seal(), cancellation=source.token)
    assert codes(outcomes) == [None, None] and all(t.can_be_cancelled and not t.is_cancelled for t in tokens)
