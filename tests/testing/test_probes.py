"""Probe tools: what a probe records of each body, and its gate (hold, wait for starts, release)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import CancellationToken, ToolError
from tether_clr.testing import KitRegistry, ProbeTool, assert_outcomes, tool_call

from tests.support import DEADLOCK_GUARD

pytestmark = pytest.mark.anyio


async def test_a_probe_records_arguments_token_and_the_order_of_start_and_end(tether_registry: KitRegistry) -> None:
    probe = ProbeTool("echo", schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    tether_registry.add(probe)
    outcomes = await tether_registry.run([tool_call("c1", "echo", {"n": 1}), tool_call("c2", "echo", {"n": 2})])
    assert [o.value for o in outcomes] == [{"n": 1}, {"n": 2}]  # the default body echoes its arguments
    assert probe.arguments == [{"n": 1}, {"n": 2}] and probe.ran == 2
    first, second = probe.calls
    assert isinstance(first.token, CancellationToken) and not first.cancelled
    assert [c.ending for c in probe.calls] == ["returned", "returned"]
    assert first.start_seq < first.end_seq < second.start_seq < second.end_seq  # type: ignore[operator]
    assert first.started <= first.ended <= second.started  # type: ignore[operator]
    assert not first.overlapped(second)


async def test_a_body_that_raises_is_a_tool_error_and_is_recorded_as_raised(tether_registry: KitRegistry) -> None:
    def fail(arguments: dict[str, Any]) -> Any:
        raise ToolError("the disk is full")

    probe = ProbeTool("write", body=fail)
    tether_registry.add(probe)
    outcomes = await tether_registry.run([tool_call("c1", "write", {})])
    assert_outcomes(outcomes, {"c1": "TOOL_ERROR"})
    assert probe.calls[0].ending == "raised" and isinstance(probe.calls[0].error, ToolError)


async def test_a_body_taking_two_parameters_gets_the_token_and_an_async_body_is_awaited(tether_registry: KitRegistry) -> None:
    seen: list[CancellationToken] = []

    async def body(arguments: dict[str, Any], token: CancellationToken) -> int:
        seen.append(token)
        await anyio.sleep(0)
        return 7

    probe = ProbeTool("seven", body=body)
    tether_registry.add(probe)
    outcomes = await tether_registry.run([tool_call("c1", "seven")])
    assert outcomes[0].value == 7  # type: ignore[index]
    assert seen == [probe.calls[0].token]


async def test_gated_safe_probes_overlap_and_are_released_one_by_one(tether_registry: KitRegistry) -> None:
    probe = ProbeTool("wait", safe=True, gated=True)
    tether_registry.add(probe)
    done: list[Any] = []

    async def run() -> None:
        done.append(await tether_registry.run([tool_call(f"c{i}", "wait", {"i": i}) for i in range(3)], max_parallelism=3))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await probe.wait_started(3)  # reachable only if all three bodies are inside at once
            assert len(probe.running) == 3
            probe.release(2)
            while probe.calls[2].ending == "running":
                await anyio.sleep(0)
            assert [c.ending for c in probe.calls] == ["running", "running", "returned"]
            probe.release()
    assert_outcomes(done[0], {"c0": None, "c1": None, "c2": None})
    assert probe.calls[0].overlapped(probe.calls[1])


async def test_an_unsafe_probe_is_exclusive_and_safe_can_be_a_predicate(tether_registry: KitRegistry) -> None:
    assert ProbeTool("x").is_concurrency_safe({}) is False
    picky = ProbeTool("y", safe=lambda arguments: arguments.get("read") is True)
    assert picky.is_concurrency_safe({"read": True}) and not picky.is_concurrency_safe({"read": "yes"})


async def test_hold_gates_a_probe_made_ungated(tether_registry: KitRegistry) -> None:
    probe = ProbeTool("later")
    tether_registry.add(probe.hold())
    done: list[Any] = []

    async def run() -> None:
        done.append(await tether_registry.run([tool_call("c1", "later")]))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await probe.wait_started()
            assert done == [] and probe.running
            probe.release(0)
    assert_outcomes(done[0], {"c1": None})
