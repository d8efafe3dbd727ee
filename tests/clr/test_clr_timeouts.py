"""Timeouts and retries with real .NET bodies (issue 17 §1, §2): at the deadline a .NET body's
``CancellationToken`` fires; one that honours it ends the call ABORTED ``timeout``; one that never
checks it is abandoned after the grace, counted and warned about, while later calls go on, and its
call is finished and its pipe reused once it ends. A .NET body failure is retried like a Python one."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import RetryPolicy, ToolMetadata, ToolRegistrationOptions, ToolRegistry

from tests.support import call, codes, run_batch, run_one

pytestmark = pytest.mark.anyio


def _registry(clr_tools: dict[str, Any], grace: float = 5.0, **tools: ToolRegistrationOptions) -> ToolRegistry:
    registry = ToolRegistry(timeout_grace=grace)
    for name, options in tools.items():
        registry.register(clr_tools["functions"][name], None, options)
    return registry


def _idle_pipes() -> int:
    from tether_clr.clr.tasks import _pipes

    return len(_pipes._idle)


async def test_a_dotnet_body_sees_its_token_fire_at_the_deadline_and_the_call_ends_aborted_timeout(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    registry = _registry(clr_tools, UntilCancelled=ToolRegistrationOptions(timeout=0.1))
    with anyio.fail_after(30):
        outcome = await run_one(registry, call("1", "UntilCancelled"))
    assert outcome.code == "ABORTED" and outcome.reason == "timeout" and outcome.failure.message == "timed out after 0.1 s"
    assert int(waiter.Cancelled) == 1  # the body's OperationCanceledException: it saw the token fire
    assert registry.abandoned_bodies == 0


async def test_a_dotnet_body_that_never_checks_its_token_is_abandoned_and_reaped_once_it_ends(clr_tools: dict[str, Any]) -> None:
    from Tether.Fixtures import Deaf  # type: ignore[import-not-found]

    Deaf.Reset()
    registry = _registry(
        clr_tools, grace=0.1, IgnoreToken=ToolRegistrationOptions(timeout=0.1), Add=ToolRegistrationOptions()
    )
    try:
        with anyio.fail_after(30):
            with pytest.warns(RuntimeWarning, match="'IgnoreToken'.*abandoned"):
                outcomes = await run_batch(registry, call("1", "IgnoreToken"), call("2", "Add", {"a": 1, "b": 2}))
            assert codes(outcomes) == ["ABORTED", None] and outcomes[0].reason == "timeout" and outcomes[1].value == 3
            assert registry.abandoned_bodies == 1
            assert int(Deaf.Started) == 1 and int(Deaf.Finished) == 0  # still running on the .NET side
            assert (await run_one(registry, call("3", "Add", {"a": 2, "b": 2}))).value == 4  # nothing waits for it
            idle = _idle_pipes()
    finally:
        Deaf.Release()
    with anyio.fail_after(30):
        while int(Deaf.Finished) == 0 or _idle_pipes() <= idle:  # the reaper finished the call, gave its pipe back
            await anyio.sleep(0.01)


async def test_a_dotnet_timeout_is_retried_and_each_attempt_sees_its_token_fire(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    options = ToolRegistrationOptions(
        timeout=0.05, retry=RetryPolicy(attempts=2, backoff=0), metadata=ToolMetadata(idempotent=True)
    )
    registry = _registry(clr_tools, UntilCancelled=options)
    with anyio.fail_after(30):
        outcome = await run_one(registry, call("1", "UntilCancelled"))
    assert outcome.reason == "timeout" and outcome.attempts == 2
    assert int(waiter.Started) == 2 and int(waiter.Cancelled) == 2


async def test_a_dotnet_body_failure_is_retried_and_a_refused_retry_policy_never_runs(clr_tools: dict[str, Any]) -> None:
    retried = ToolRegistrationOptions(retry=RetryPolicy(attempts=3, backoff=0), metadata=ToolMetadata(idempotent=True))
    registry = _registry(clr_tools, Fail=retried)
    with anyio.fail_after(30):
        outcome = await run_one(registry, call("1", "Fail", {"message": "nope"}))
    assert outcome.code == "TOOL_ERROR" and outcome.attempts == 3
    assert outcome.failure.message == "System.InvalidOperationException: nope"
    with pytest.raises(ValueError, match="idempotent"):
        ToolRegistrationOptions(retry=RetryPolicy(), metadata=ToolMetadata())
