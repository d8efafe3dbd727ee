"""The scheduler keeps tool bodies apart and in order: a context variable a body sets is seen by
nothing else, an awaiting result policy still stops the batch before that slot admits again,
bodies start in model order whatever order re-authorization answers in, and a CancelledError
nobody asked for is the tool's own failure, never a lost batch.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.support import DEADLOCK_GUARD, add, call, codes
from tether_clr import (
    RequestContext,
    ResultPolicyError,
    ToolExecution,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

_TOOL_STATE: contextvars.ContextVar[str | None] = contextvars.ContextVar("isolation_tool_state", default=None)


# ------------------------------------------------------------------ context isolation
async def test_a_tool_body_that_sets_a_context_variable_changes_nothing_the_next_body_sees() -> None:
    """A worker runs several bodies in one task: each body runs in its own copy of the context, so
    what one tool sets in a ContextVar (a tracing span, a log binding) never reaches the next."""
    registry = ToolRegistry()
    seen: list[tuple[str, str | None]] = []

    async def body(tag: str) -> str:
        seen.append((tag, _TOOL_STATE.get()))
        _TOOL_STATE.set(f"set by {tag}")
        return tag

    add(registry, body, parallel=True)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=1)
    assert codes(outcomes) == [None, None, None]
    assert seen == [("0", None), ("1", None), ("2", None)]


async def test_a_tool_body_cannot_influence_the_guards_of_a_later_call_through_its_context() -> None:
    """Deterministic code decides whether a call runs: a guard (or pre-execute listener, or approval
    provider) of a later call never sees state a tool body put into its context, although
    admission runs in the worker task that just ran a body."""
    registry = ToolRegistry()
    seen_by_guard: list[tuple[str, str | None]] = []

    async def body(tag: str) -> str:
        _TOOL_STATE.set("elevated by a tool")
        return tag

    add(registry, body, parallel=True)

    def guard(execution: ToolExecution) -> str | None:
        seen_by_guard.append((execution.call_id, _TOOL_STATE.get()))
        return "refused: elevated" if _TOOL_STATE.get() is not None else None

    registry.register_guard(None, guard)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=1)
    assert seen_by_guard == [("c0", None), ("c1", None), ("c2", None)]
    assert codes(outcomes) == [None, None, None]


# ------------------------------------------------------------------ the delivery's say
async def test_a_result_policy_that_awaits_still_stops_the_batch_before_that_slot_admits_anything_new() -> None:
    """The slot of the outcome the delivery is at is given back only after the post-execute
    listeners, the audit and the result policies let it through and the sink recorded it, so a
    policy that awaits before it raises still stops the batch before that slot admits again."""
    registry = ToolRegistry()
    ran: list[str] = []

    async def body(tag: str) -> str:
        ran.append(tag)
        return tag

    add(registry, body, parallel=True)

    async def policy(execution: ToolExecution, outcome: Any) -> None:
        if execution.call_id == "c0":
            for _ in range(20):  # e.g. a policy that asks a service; every runnable task runs meanwhile
                await anyio.lowlevel.checkpoint()
            raise RuntimeError("c0 may not return this")

    registry.register_result_policy(None, policy)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        with pytest.raises(ResultPolicyError):
            await registry.execute_batch(calls, registry.seal(), max_parallelism=1)
    assert ran == ["0"]


# ------------------------------------------------------------------ start order, stray cancellations
async def test_parallel_bodies_start_in_model_order_with_an_asynchronous_scope_authority() -> None:
    """Bodies start in model order: re-authorization awaits an asynchronous authority before each
    body, in whichever worker popped the call, and a quicker answer for a later call still waits
    for the earlier calls to start."""
    registry = ToolRegistry()
    started: list[str] = []

    async def body(tag: str) -> str:
        started.append(tag)
        return tag

    add(registry, body, parallel=True)
    asked = {"n": 0}

    async def authority(context: RequestContext) -> set[str]:
        asked["n"] += 1
        if asked["n"] == 1:  # the first re-authorization answers a little later than the others
            for _ in range(5):
                await anyio.lowlevel.checkpoint()
        return set()

    registry.authority = authority
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.assemble(RequestContext("acme", "alice")), max_parallelism=3)
    assert codes(outcomes) == [None, None, None]
    assert started == ["0", "1", "2"]


async def test_a_tool_that_raises_cancelled_error_of_its_own_still_gets_an_outcome_for_every_call(anyio_backend: str) -> None:
    """asyncio only (trio's Cancelled cannot be raised by a tool): a tool that awaits a future
    someone else cancelled raises CancelledError without the batch being cancelled; that is the
    tool's failure (TOOL_ERROR), and every declared call still gets its outcome."""
    if anyio_backend != "asyncio":
        pytest.skip("only asyncio lets a tool raise the cancellation exception on its own")
    registry = ToolRegistry()

    async def body(tag: str) -> str:
        if tag == "0":
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()  # e.g. a connection pool cancelled the request it was waiting for
            await future
        return tag

    add(registry, body, parallel=True)
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(3)]
    with anyio.fail_after(DEADLOCK_GUARD):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=2)
    assert [o.call_id for o in outcomes] == ["c0", "c1", "c2"]
    assert codes(outcomes) == ["TOOL_ERROR", None, None] and "without being cancelled" in outcomes[0].failure.message  # type: ignore[union-attr]


async def test_a_cancelled_error_the_batch_asked_for_still_cancels(anyio_backend: str) -> None:
    """The containment of a stray CancelledError never swallows a real one: a caller's cancellation
    while a body runs still ends that call ABORTED (and the host's own cancel scope still works)."""
    from tether_clr import CancellationSource

    registry = ToolRegistry()
    started = anyio.Event()

    async def body(tag: str) -> str:
        started.set()
        await anyio.sleep_forever()
        return tag

    add(registry, body, parallel=True)
    source = CancellationSource()
    calls = [call(f"c{i}", "body", {"tag": str(i)}) for i in range(2)]
    results: list[Any] = []

    async def run() -> None:
        results.append(await registry.execute_batch(calls, registry.seal(), max_parallelism=2, cancellation=source.token))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            source.cancel("stop")
    assert codes(results[0]) == ["ABORTED", "ABORTED"]
    with anyio.CancelScope() as scope:
        scope.cancel()
        await registry.execute_batch(calls, registry.seal(), max_parallelism=2)
    assert scope.cancelled_caught
