"""ServerCalls.drain: a graceful shutdown is bounded, even by a body that ignores its cancellation."""

from __future__ import annotations

import anyio
import pytest

from tether_clr.mcp.inflight import SHUTDOWN, ServerCalls

pytestmark = pytest.mark.anyio


async def test_calls_that_end_within_the_grace_period_are_not_cancelled() -> None:
    calls = ServerCalls()
    source = calls.start()

    async def finish_soon() -> None:
        await anyio.sleep(0.05)
        calls.finish(source)

    async with anyio.create_task_group() as group:
        group.start_soon(finish_soon)
        assert await calls.drain(5.0) == 0
    assert not source.token.is_cancelled and calls.abandoned == 0


async def test_a_call_past_the_grace_period_is_cancelled_for_shutdown_then_waited_for() -> None:
    calls = ServerCalls()
    source = calls.start()

    async def honour_the_token() -> None:
        while not source.token.is_cancelled:
            await anyio.sleep(0.01)
        calls.finish(source)  # recorded ABORTED, then done

    async with anyio.create_task_group() as group:
        group.start_soon(honour_the_token)
        assert await calls.drain(0.05) == 1
    assert source.token.reason == SHUTDOWN and calls.abandoned == 0


async def test_a_body_that_ignores_its_token_is_left_running_after_the_linger_and_the_drain_returns() -> None:
    calls = ServerCalls()
    calls.start()  # never finishes: a synchronous body cannot be interrupted
    with anyio.fail_after(5):
        assert await calls.drain(0.05, linger=0.1) == 1
    assert calls.abandoned == 1


async def test_a_call_arriving_while_draining_is_cancelled_before_it_starts() -> None:
    calls = ServerCalls()
    with anyio.fail_after(5):
        await calls.drain(0.01, linger=0.01)
    late = calls.start()
    assert late.token.is_cancelled and late.token.reason == SHUTDOWN
