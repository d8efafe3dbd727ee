"""Per-tool timeouts (issue 17 §1) with Python bodies: the deadline cancels the body's token, the call
ends ABORTED ``timeout``; a body that ignores its token is waited for ``timeout_grace`` more, then
abandoned (counted, warned about), and nothing later waits for it. The .NET bodies are in tests/clr."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import anyio
import pytest

from tether_clr import (
    CancellationSource,
    CancellationToken,
    PythonFunction,
    ToolRegistrationOptions,
    ToolRegistry,
)

from tests.support import call, codes, run_batch, run_one

pytestmark = pytest.mark.anyio


def timed(registry: ToolRegistry, fn: Any, name: str, timeout: float | None = None, parallel: bool | None = None) -> None:
    tool = PythonFunction.from_callable(fn, name=name)
    registry.register(tool, None, ToolRegistrationOptions(timeout=timeout, is_concurrency_safe=parallel))


def assert_timed_out(outcome: Any, seconds: str) -> None:
    assert outcome.code == "ABORTED"
    assert outcome.reason == "timeout"
    assert outcome.failure.message == f"timed out after {seconds} s"


async def test_an_async_body_past_its_timeout_is_interrupted_and_ends_aborted_timeout() -> None:
    registry = ToolRegistry(timeout_grace=5)
    reached: list[str] = []

    async def slow() -> str:
        try:
            await anyio.sleep(30)
        finally:
            reached.append("interrupted")
        return "late"

    timed(registry, slow, "slow", timeout=0.05)
    assert_timed_out(await run_one(registry, call("1", "slow")), "0.05")
    assert reached == ["interrupted"]
    assert registry.abandoned_bodies == 0


async def test_a_sync_body_sees_its_token_cancelled_at_the_deadline_and_is_not_abandoned() -> None:
    registry = ToolRegistry(timeout_grace=10)
    seen: list[str | None] = []

    def polite(cancellation: CancellationToken) -> str:
        while not cancellation.is_cancelled:
            time.sleep(0.002)
        seen.append(cancellation.reason)
        return "stopped"

    timed(registry, polite, "polite", timeout=0.05)
    assert_timed_out(await run_one(registry, call("1", "polite")), "0.05")
    assert seen == ["timed out after 0.05 s"]
    assert registry.abandoned_bodies == 0


async def test_a_sync_body_that_ignores_cancellation_is_abandoned_after_the_grace_counted_and_warned_about() -> None:
    registry = ToolRegistry(timeout_grace=0.05)
    gate, finished = threading.Event(), threading.Event()

    def stubborn() -> str:
        gate.wait(30)  # never looks at its token
        finished.set()
        return "late"

    timed(registry, stubborn, "stubborn", timeout=0.05)
    try:
        with pytest.warns(RuntimeWarning, match="'stubborn'.*abandoned"):
            outcome = await run_one(registry, call("1", "stubborn"))
        assert_timed_out(outcome, "0.05")
        assert registry.abandoned_bodies == 1
        assert not finished.is_set()  # the batch returned while the body still ran
    finally:
        gate.set()
    assert finished.wait(10)


async def test_later_calls_never_wait_for_an_abandoned_body_and_outcomes_keep_model_order() -> None:
    registry = ToolRegistry(timeout_grace=0.05)
    gate = threading.Event()

    def stubborn() -> str:
        gate.wait(30)
        return "late"

    async def echo(text: str) -> str:
        return text

    timed(registry, stubborn, "stubborn", timeout=0.05, parallel=True)
    timed(registry, echo, "echo", parallel=True)
    timed(registry, echo, "solo")
    try:
        with pytest.warns(RuntimeWarning):
            outcomes = await run_batch(
                registry, call("a", "stubborn"), call("b", "echo", {"text": "b"}), call("c", "solo", {"text": "c"}),
                call("d", "stubborn"),
            )
        assert [o.call_id for o in outcomes] == ["a", "b", "c", "d"]
        assert codes(outcomes) == ["ABORTED", None, None, "ABORTED"]
        assert [o.reason for o in outcomes] == ["timeout", None, None, "timeout"]
        assert registry.abandoned_bodies == 2
        # a batch after them runs as if they were not there
        assert (await run_one(registry, call("e", "echo", {"text": "e"}))).value == "e"
        assert not gate.is_set()
    finally:
        gate.set()


async def test_execute_listeners_see_the_timeout_because_it_is_enforced_around_the_body() -> None:
    registry = ToolRegistry()
    seen: list[tuple[str | None, str | None]] = []

    async def listener(dispatch: Any, next_: Any) -> Any:
        outcome = await next_()
        seen.append((outcome.code, outcome.reason))
        return outcome

    registry.register_execute_listener(None, listener)
    timed(registry, anyio.sleep, "sleep", timeout=0.05)
    assert_timed_out(await run_one(registry, call("1", "sleep", {"delay": 30})), "0.05")
    assert seen == [("ABORTED", "timeout")]


async def test_the_registry_default_applies_unless_a_tool_sets_its_own_or_opts_out_with_inf() -> None:
    registry = ToolRegistry(default_timeout=0.05)
    assert registry.default_timeout == 0.05 and registry.timeout_grace == 5.0

    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "rested"

    timed(registry, nap, "defaulted")
    timed(registry, nap, "patient", timeout=math.inf)
    timed(registry, nap, "own", timeout=10)
    outcomes = await run_batch(
        registry, call("1", "defaulted", {"seconds": 30}), call("2", "patient", {"seconds": 0.1}), call("3", "own", {"seconds": 0.1})
    )
    assert_timed_out(outcomes[0], "0.05")
    assert [o.value for o in outcomes[1:]] == ["rested", "rested"]


async def test_a_body_that_ends_in_time_is_untouched_and_its_failure_is_its_own() -> None:
    registry = ToolRegistry()

    def boom() -> str:
        raise RuntimeError("broken")

    timed(registry, boom, "boom", timeout=10)
    timed(registry, lambda: "fine", "fine", timeout=10)
    outcomes = await run_batch(registry, call("1", "boom"), call("2", "fine"))
    assert codes(outcomes) == ["TOOL_ERROR", None]
    assert outcomes[0].reason is None and outcomes[1].value == "fine"


async def test_a_caller_cancellation_still_drains_a_timed_sync_body_before_the_batch_returns() -> None:
    """The grace and abandonment are the timeout's only: a batch its caller cancels still waits for its bodies."""
    registry = ToolRegistry(timeout_grace=0.05)
    started, gate, finished = threading.Event(), threading.Event(), threading.Event()

    def stubborn() -> str:
        started.set()
        gate.wait(30)
        finished.set()
        return "late"

    timed(registry, stubborn, "stubborn", timeout=30)
    source = CancellationSource()
    outcomes: list[Any] = []

    async def batch() -> None:
        outcomes.extend(await run_batch(registry, call("1", "stubborn"), cancellation=source.token))

    async with anyio.create_task_group() as tg:
        tg.start_soon(batch)
        while not started.is_set():
            await anyio.sleep(0.005)
        source.cancel("host stopped")
        await anyio.sleep(0.1)  # twice the grace: an abandoning drain would have returned by now
        assert outcomes == []
        gate.set()
    assert finished.is_set()
    assert codes(outcomes) == ["ABORTED"] and outcomes[0].reason is None
    assert registry.abandoned_bodies == 0


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, "5"])
def test_a_timeout_must_be_a_positive_number_of_seconds(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        ToolRegistrationOptions(timeout=timeout)


@pytest.mark.parametrize("settings", [{"default_timeout": 0}, {"default_timeout": "1"}, {"timeout_grace": 0}, {"timeout_grace": None}])
def test_registry_timeout_settings_are_checked(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolRegistry(**settings)


async def test_an_abandonment_warning_turned_into_an_error_never_escapes_the_batch() -> None:
    import warnings

    registry = ToolRegistry(timeout_grace=0.05)
    gate = threading.Event()
    timed(registry, lambda: gate.wait(30), "stubborn", timeout=0.05)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outcome = await run_one(registry, call("1", "stubborn"))
        assert_timed_out(outcome, "0.05")
        assert registry.abandoned_bodies == 1
    finally:
        gate.set()
