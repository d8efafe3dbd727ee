"""Review of the worker pool (issue 9): failing tests for the defects found.

Each test is named for the rule it checks; see /work/notes/review-9.md for the
evidence and the suggested fixes. They fail on the reviewed code (review9 branch).
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.helpers import add, call, codes
from tether_clr import (
    RequestContext,
    ResultPolicyError,
    ToolExecution,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

DEADLOCK_GUARD = 10  # seconds; only turns a scheduling bug into a failure instead of a hang

_TOOL_STATE: contextvars.ContextVar[str | None] = contextvars.ContextVar("review9_tool_state", default=None)


# ------------------------------------------------------------------ context isolation (regression)
async def test_a_tool_body_that_sets_a_context_variable_changes_nothing_the_next_body_sees() -> None:
    """Before the worker pool each body ran in its own task (its own copy of the context); now a
    worker runs several bodies in one task, so what one tool sets in a ContextVar is seen by the
    next tool that worker runs (tracing spans, log bindings, tenant context leak between calls)."""
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
    provider) of a later call must not see state a tool body put into its context. Admission now
    runs in the worker task that just ran a body, so it does."""
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


# ------------------------------------------------------------------ the delivery's say (documented promise)
async def test_a_result_policy_that_awaits_still_stops_the_batch_before_that_slot_admits_anything_new() -> None:
    """batch.py: "The slot of the outcome it is waiting for is given back only once it took that
    outcome up, so a policy that stops the batch stops it before that slot admits anything new."
    The slot is given back when the delivery *resumes* (take_up runs before review, audit and the
    policies), so a policy (or post-execute listener, or audit listener) that awaits lets the worker
    admit and start the next bodies before it raises: with max_parallelism=1 the whole group runs."""
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


# ------------------------------------------------------------------ pre-existing (not introduced by the pool)
async def test_parallel_bodies_start_in_model_order_with_an_asynchronous_scope_authority() -> None:
    """README: bodies "started in model order". Re-authorization awaits an asynchronous authority
    before each body, in whichever worker popped the call, so a quicker answer for a later call
    starts its body first. (Pre-existing: the bounded pool's per-call tasks did the same.)"""
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
    someone else cancelled raises CancelledError without the batch being cancelled. It escapes the
    pipeline's ``except Exception``, ends the worker task, the task group treats it as its own
    cancellation, and execute_batch *returns an empty list* for three declared calls: every outcome
    is lost, silently. (Pre-existing: the bounded pool's per-call task did the same.)"""
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
