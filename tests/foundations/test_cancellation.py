"""Cancellation callbacks: like .NET's ``Cancel()``, every callback runs even when one
raises; unlike it, ``cancel()`` contains and logs each failure instead of raising."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from tests.support import Unprintable, add, call
from tether_clr import (
    CancellationSource,
    CancellationToken,
    ToolFailureCodes,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


def test_cancel_runs_every_callback_even_when_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    source = CancellationSource()
    ran: list[str] = []

    def broken() -> None:
        ran.append("broken")
        raise RuntimeError("callback failed")

    source.token.register(lambda: ran.append("first"))
    source.token.register(broken)
    source.token.register(lambda: ran.append("last"))
    with caplog.at_level(logging.ERROR, logger="tether_clr"):
        source.cancel("stop")
    assert ran == ["first", "broken", "last"]
    assert source.is_cancelled and source.reason == "stop"
    assert "callback failed" in caplog.text


def test_cancel_contains_a_callback_whose_exception_cannot_be_printed() -> None:
    source = CancellationSource()
    ran: list[str] = []

    def broken() -> None:
        raise Unprintable()

    source.token.register(broken)
    source.token.register(lambda: ran.append("after"))
    source.cancel()
    assert ran == ["after"]


def test_a_raising_callback_does_not_stop_linked_sources() -> None:
    parent = CancellationSource()
    parent.token.register(lambda: 1 / 0)
    child = CancellationSource(parent.token)
    parent.cancel("parent stopped")
    assert child.is_cancelled and child.reason == "parent stopped"


async def test_parallel_sibling_is_still_cancelled_when_a_callback_raises() -> None:
    registry = ToolRegistry()
    started = {"a": anyio.Event(), "b": anyio.Event()}

    async def waits(tag: str, cancellation: CancellationToken) -> str:
        if tag == "a":  # a tool that hooks a broken callback onto its token
            cancellation.register(lambda: (_ for _ in ()).throw(RuntimeError("broken callback")))
        started[tag].set()
        await anyio.sleep_forever()
        return "never"

    add(registry, waits, "waits", parallel=True)
    source = CancellationSource()
    outcomes: list[Any] = []

    async def run() -> None:
        outcomes.extend(
            await registry.execute_batch(
                [call("a", "waits", {"tag": "a"}), call("b", "waits", {"tag": "b"})],
                registry.seal(),
                cancellation=source.token,
            )
        )

    with anyio.fail_after(30):  # a hang guard only: a hang is the bug this test is about
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started["a"].wait()
            await started["b"].wait()
            source.cancel("user pressed stop")
    assert [o.code for o in outcomes] == [ToolFailureCodes.ABORTED, ToolFailureCodes.ABORTED]
