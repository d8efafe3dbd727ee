"""Governed retries (issue 17 §2): only an idempotent version may have a retry policy; ``retry_on``
picks body failures and timeouts, never refusals; each attempt is re-authorized against the live
catalog; the backoff ends with the batch's cancellation; the outcome, the audit record and the tool
log say how many attempts a call took."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import (
    CancellationSource,
    InMemoryToolLog,
    PythonFunction,
    RetryPolicy,
    SqliteToolLog,
    ToolArgumentError,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)

from tests.support import call, codes, run_batch, run_one

pytestmark = pytest.mark.anyio

IDEMPOTENT = ToolMetadata(idempotent=True)


class Flaky:
    """A body failing its first ``failures`` calls (``how``: "error", "hang" or "bad_args"), then answering ``ok``."""

    def __init__(self, failures: int, how: str = "error") -> None:
        self.failures = failures
        self.how = how
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            if self.how == "hang":
                await anyio.sleep(30)
            if self.how == "bad_args":
                raise ToolArgumentError("no such thing")
            raise RuntimeError(f"failure {self.calls}")
        return "ok"


def retrying(registry: ToolRegistry, body: Any, name: str = "flaky", **options: Any) -> None:
    options.setdefault("metadata", IDEMPOTENT)
    registry.register(PythonFunction.from_callable(body, name=name), None, ToolRegistrationOptions(**options))


def test_a_retry_policy_on_a_version_that_is_not_idempotent_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="idempotent=True"):
        ToolRegistrationOptions(retry=RetryPolicy())
    with pytest.raises(ValueError, match="idempotent=True"):
        ToolRegistrationOptions(retry=RetryPolicy(), metadata=ToolMetadata(idempotent=False))
    ToolRegistrationOptions(retry=RetryPolicy(), metadata=IDEMPOTENT)  # the catalog says it is safe to repeat


def test_a_version_with_a_retry_policy_cannot_stop_being_idempotent() -> None:
    registry = ToolRegistry()
    retrying(registry, Flaky(0), retry=RetryPolicy())
    with pytest.raises(ValueError, match="retry policy"):
        registry.update_metadata("flaky", "1.0.0", idempotent=False)
    registry.update_metadata("flaky", "1.0.0", risk_level="medium")  # anything else may still change


@pytest.mark.parametrize("retry_on", [{"DENIED"}, {"INVALID_ARGS"}, {"UNKNOWN_TOOL"}, {"UNAVAILABLE"}, {"BLOCKED"}, {"ABORTED"}])
def test_a_policy_naming_a_refusal_is_refused_because_refusals_are_never_retried(retry_on: set[str]) -> None:
    with pytest.raises(ValueError, match="never retried"):
        RetryPolicy(retry_on=retry_on)


@pytest.mark.parametrize("policy", [{"attempts": 0}, {"attempts": 2.5}, {"backoff": -1}, {"backoff": float("inf")}, {"retry_on": {"nope"}}])
def test_a_policy_is_checked_when_built(policy: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**policy)


async def test_a_body_failure_is_retried_until_it_succeeds_and_the_outcome_says_how_many_attempts() -> None:
    registry = ToolRegistry()
    flaky = Flaky(2)
    retrying(registry, flaky, retry=RetryPolicy(attempts=3, backoff=0))
    outcome = await run_one(registry, call("1", "flaky"))
    assert outcome.value == "ok" and outcome.attempts == 3 and flaky.calls == 3


async def test_attempts_run_out_and_the_last_failure_is_the_outcome() -> None:
    registry = ToolRegistry()
    flaky = Flaky(5)
    retrying(registry, flaky, retry=RetryPolicy(attempts=2, backoff=0))
    outcome = await run_one(registry, call("1", "flaky"))
    assert outcome.code == "TOOL_ERROR" and outcome.failure.message == "RuntimeError: failure 2"
    assert outcome.attempts == 2 and flaky.calls == 2


async def test_a_timeout_is_retried_by_default() -> None:
    registry = ToolRegistry(timeout_grace=5)
    flaky = Flaky(1, "hang")
    retrying(registry, flaky, retry=RetryPolicy(backoff=0), timeout=0.05)
    outcome = await run_one(registry, call("1", "flaky"))
    assert outcome.value == "ok" and outcome.attempts == 2


@pytest.mark.parametrize(
    ("retry_on", "how", "calls", "code"),
    [
        ({"timeout"}, "error", 1, "TOOL_ERROR"),  # a body failure is not selected
        ({"TOOL_ERROR"}, "hang", 1, "ABORTED"),  # a timeout is not selected
        ({"timeout"}, "hang", 2, None),
        (lambda outcome: "failure 1" in outcome.failure.message, "error", 2, None),
        (lambda outcome: "yes", "error", 1, "TOOL_ERROR"),  # only an exact True retries
        (lambda outcome: 1 / 0, "error", 1, "TOOL_ERROR"),  # a raising predicate does not (fail closed)
    ],
)
async def test_retry_on_selects_which_failures_are_retried(retry_on: Any, how: str, calls: int, code: str | None) -> None:
    registry = ToolRegistry()
    flaky = Flaky(1, how)
    retrying(registry, flaky, retry=RetryPolicy(attempts=3, backoff=0, retry_on=retry_on), timeout=0.05)
    outcome = await run_one(registry, call("1", "flaky"))
    assert outcome.code == code and flaky.calls == calls and outcome.attempts == calls


async def test_refusals_are_never_retried_whatever_the_predicate_says() -> None:
    registry = ToolRegistry()
    flaky = Flaky(1, "bad_args")
    retrying(registry, flaky, retry=RetryPolicy(attempts=5, backoff=0, retry_on=lambda outcome: True))
    registry.register_guard(None, lambda execution: "no" if execution.call_id == "3" else None)
    outcomes = await run_batch(registry, call("1", "flaky"), call("2", "flaky", {"extra": 1}), call("3", "flaky"))
    assert codes(outcomes) == ["INVALID_ARGS", "INVALID_ARGS", "DENIED"]  # by the body, the schema, a guard
    assert [o.attempts for o in outcomes] == [1, 1, 1] and flaky.calls == 1


async def test_each_attempt_is_reauthorized_so_a_tool_disabled_between_attempts_is_refused() -> None:
    registry = ToolRegistry()
    calls: list[int] = []

    async def fails_then_disables() -> str:
        calls.append(1)
        registry.set_status("flaky", "1.0.0", ToolStatus.DISABLED)  # the operator pulls the tool meanwhile
        raise RuntimeError("flaky")

    retrying(registry, fails_then_disables, retry=RetryPolicy(attempts=3, backoff=0))
    outcome = await run_one(registry, call("1", "flaky"))
    assert outcome.code == "DENIED" and outcome.reason == "tool_disabled"
    assert calls == [1] and outcome.attempts == 2


async def test_each_attempt_is_reauthorized_against_the_live_scopes_of_an_assembly() -> None:
    from tether_clr import RequestContext

    registry = ToolRegistry()
    granted = {"tools:flaky"}
    registry.authority = lambda context: set(granted)
    flaky = Flaky(5)

    async def body() -> str:
        granted.clear()  # the principal loses the scope after the first attempt
        return await flaky()

    retrying(registry, body, retry=RetryPolicy(backoff=0), metadata=ToolMetadata(idempotent=True, required_scopes={"tools:flaky"}))
    assembly = registry.assemble(RequestContext(tenant_id="t", principal_id="p", scopes=frozenset({"tools:flaky"})))
    with anyio.fail_after(30):
        [outcome] = await registry.execute_batch([call("1", "flaky")], assembly)
    assert outcome.code == "DENIED" and outcome.reason == "scope_revoked" and flaky.calls == 1


async def cancelled_during_backoff(registry: ToolRegistry, flaky: Flaky, *calls: Any) -> list[Any]:
    """The outcomes of a batch of ``calls`` cancelled ("host stopped") once ``flaky`` failed its first attempt."""
    source = CancellationSource()
    outcomes: list[Any] = []

    async def batch() -> None:
        outcomes.extend(await run_batch(registry, *calls, cancellation=source.token))

    with anyio.fail_after(10):  # a backoff that ignored the cancellation would sleep 30 s
        async with anyio.create_task_group() as tg:
            tg.start_soon(batch)
            while flaky.calls == 0:
                await anyio.sleep(0.005)
            await anyio.sleep(0.01)
            source.cancel("host stopped")
    return outcomes


async def test_the_backoff_ends_at_once_when_the_batch_is_cancelled_and_no_attempt_follows() -> None:
    registry = ToolRegistry()
    flaky = Flaky(5)
    retrying(registry, flaky, retry=RetryPolicy(attempts=3, backoff=30))
    outcomes = await cancelled_during_backoff(registry, flaky, call("1", "flaky"))
    assert codes(outcomes) == ["ABORTED"] and flaky.calls == 1 and outcomes[0].attempts == 1
    assert "host stopped" in outcomes[0].failure.message


async def test_the_backoff_of_a_parallel_call_ends_with_the_batch_too() -> None:
    registry = ToolRegistry()
    flaky = Flaky(5)
    retrying(registry, flaky, retry=RetryPolicy(attempts=3, backoff=30), is_concurrency_safe=True)
    retrying(registry, Flaky(0), "fine", is_concurrency_safe=True)
    outcomes = await cancelled_during_backoff(registry, flaky, call("1", "flaky"), call("2", "fine"))
    assert codes(outcomes) == ["ABORTED", None] and flaky.calls == 1 and outcomes[0].attempts == 1


async def test_a_backoff_callable_is_asked_with_the_failed_attempt_and_a_broken_one_stops_retrying() -> None:
    asked: list[int] = []
    registry = ToolRegistry()
    flaky = Flaky(5)
    retrying(registry, flaky, retry=RetryPolicy(attempts=4, backoff=lambda n: asked.append(n) or 0.0))
    assert (await run_one(registry, call("1", "flaky"))).attempts == 4
    assert asked == [1, 2, 3]
    broken = Flaky(5)
    retrying(registry, broken, "broken", retry=RetryPolicy(attempts=4, backoff=lambda n: -1))
    assert (await run_one(registry, call("1", "broken"))).attempts == 1 and broken.calls == 1


async def test_the_audit_record_and_the_tool_logs_carry_the_attempt_count(tmp_path: Any) -> None:
    registry = ToolRegistry()
    records: list[Any] = []
    registry.register_audit_listener(records.append)
    retrying(registry, Flaky(1), retry=RetryPolicy(backoff=0))
    memory = InMemoryToolLog()
    await run_batch(registry, call("1", "flaky"), sink=memory)
    assert [r.attempts for r in records] == [2] and records[0].as_json()["attempts"] == 2
    assert [o.attempts for o in memory.outcomes] == [2]
    with SqliteToolLog(tmp_path / "log.db") as log:
        retrying(registry, Flaky(2), "flakier", retry=RetryPolicy(backoff=0))
        await run_batch(registry, call("1", "flakier"), call("2", "flaky"), sink=log)
        assert [o.attempts for o in log.outcomes()] == [3, 1]


async def test_post_execute_listeners_see_the_attempts_and_a_replacement_keeps_the_count() -> None:
    from tether_clr import ToolPostDecision

    registry = ToolRegistry()
    seen: list[int] = []

    async def replace(execution: Any, outcome: Any, next_: Any) -> Any:
        seen.append(outcome.attempts)
        return ToolPostDecision.replace("replaced")

    registry.register_post_execute_listener(None, replace)
    retrying(registry, Flaky(1), retry=RetryPolicy(backoff=0))
    outcome = await run_one(registry, call("1", "flaky"))
    assert seen == [2] and outcome.value == "replaced" and outcome.attempts == 2
