"""How a .NET call is driven: reused completion pipes, the drain, a token cancelled before the start.

``tether_clr.clr.tasks`` reuses one pipe per call in flight instead of opening
a new one per call; these tests pin down the rules that make reuse safe: a pipe
goes back only once its byte was read (so the .NET side is done with it), a
cancelled call gives its pipe back only after the drain, and nothing leaks.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest

from tether_clr import CancellationSource, CancellationToken, OperationCancelledError

pytestmark = pytest.mark.anyio


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1


def _idle_pipes() -> list[tuple[int, int]]:
    from tether_clr.clr.tasks import _pipes

    return list(_pipes._idle)


def _empty(read_end: int) -> bool:
    try:
        return os.read(read_end, 16) == b""  # pragma: no cover - a pipe with no writer left
    except BlockingIOError:
        return True


async def test_sequential_calls_reuse_one_pipe_and_leak_no_descriptor(clr_tools: dict[str, Any]) -> None:
    add = clr_tools["functions"]["Add"]
    token = CancellationSource().token
    assert await add.invoke({"a": 1, "b": 2}, token) == 3  # warm: the pool holds a pipe now
    before = _open_descriptors()
    for i in range(25):
        assert await add.invoke({"a": i, "b": 1}, token) == i + 1
    assert _open_descriptors() == before
    assert all(_empty(read_end) for read_end, _ in _idle_pipes())


async def test_overlapping_calls_each_get_their_own_pipe(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    delay = clr_tools["functions"]["Delay"]
    results: dict[int, Any] = {}

    async def one(index: int) -> None:
        results[index] = await delay.invoke({"milliseconds": 200, "label": str(index)}, CancellationToken.none())

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for index in range(4):
                tg.start_soon(one, index)
    assert results == {index: str(index) for index in range(4)}
    assert waiter.PeakRunning >= 2
    idle = _idle_pipes()
    assert len({pipe for pipe in idle}) == len(idle)  # no pipe was handed out twice
    assert all(_empty(read_end) for read_end, _ in idle)


async def test_a_cancelled_call_gives_its_pipe_back_only_after_its_body_ended(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    source = CancellationSource()
    outcome: list[BaseException] = []

    async def until_cancelled() -> None:
        try:
            await clr_tools["functions"]["UntilCancelled"].invoke({}, source.token)
        except OperationCancelledError as exc:
            outcome.append(exc)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(until_cancelled)
            while waiter.Started != 1:
                await anyio.sleep(0.01)
            source.cancel("stop")
    assert len(outcome) == 1 and waiter.Cancelled == 1  # the body saw its token fire and ended
    assert all(_empty(read_end) for read_end, _ in _idle_pipes())
    assert await clr_tools["functions"]["Add"].invoke({"a": 2, "b": 2}, CancellationToken.none()) == 4


async def test_a_token_cancelled_before_the_start_reaches_the_body_cancelled(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    source = CancellationSource()
    source.cancel("stopped before the start")
    with pytest.raises(OperationCancelledError):
        await clr_tools["functions"]["UntilCancelled"].invoke({}, source.token)
    assert waiter.Cancelled == waiter.Started  # if it started at all, its token had already fired
