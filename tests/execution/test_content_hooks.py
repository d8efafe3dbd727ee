"""Content hooks: project_content after the body, finalize_content last; failures are TOOL_ERROR naming the hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import Approver, call, codes, run_one, session_scope
from tether_clr import (
    ApprovalResult,
    ImagePart,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    SqliteToolLog,
    TextPart,
    ToolCall,
    ToolExecutionOutcome,
    ToolMetadata,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG-chart"


def register(registry: ToolRegistry, fn: Any, name: str, **options: Any) -> None:
    registry.register(PythonFunction.from_callable(fn, name=name), None, ToolRegistrationOptions(**options))


def chart(outcome: ToolExecutionOutcome) -> list[Any]:
    return [TextPart(f"{outcome.value['points']} points"), ImagePart(PNG, "image/png")]


def truncate(outcome: ToolExecutionOutcome) -> TextPart:
    return TextPart("".join(p.text for p in outcome.content if isinstance(p, TextPart))[:8])


async def test_project_content_runs_after_the_body_and_the_post_execute_waterfall_sees_it() -> None:
    registry = ToolRegistry()
    register(registry, lambda: {"points": 3}, "plot", project_content=chart)
    seen: list[Any] = []

    async def post(execution: Any, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        seen.append(outcome.content)
        return await next_()

    registry.register_post_execute_listener(None, post)
    outcome = await run_one(registry, call("c1", "plot"))
    assert outcome.value == {"points": 3}
    assert outcome.content == seen[0] == (TextPart("3 points"), ImagePart(PNG, "image/png"))


async def test_project_content_does_not_run_on_a_failed_body() -> None:
    registry = ToolRegistry()

    def boom() -> None:
        raise RuntimeError("no data")

    register(registry, boom, "plot", project_content=chart)
    outcome = await run_one(registry, call("c1", "plot"))
    assert codes([outcome]) == ["TOOL_ERROR"] and outcome.content == (TextPart(outcome.failure.message),)


async def test_finalize_content_runs_last_after_a_post_execute_replacement() -> None:
    registry = ToolRegistry()
    register(registry, lambda: "a long secret answer", "ask", finalize_content=truncate)

    async def replace(execution: Any, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return ToolPostDecision.replace("replaced by policy")

    registry.register_post_execute_listener(None, replace)
    outcome = await run_one(registry, call("c1", "ask"))
    assert outcome.value == "replaced by policy" and outcome.content == (TextPart("replaced"),)


@pytest.mark.parametrize("arguments, code", [({"n": "x"}, "INVALID_ARGS"), ({"n": 1}, "DENIED")])
async def test_finalize_content_runs_on_failures_and_cannot_change_value_code_or_call_id(arguments: Any, code: str) -> None:
    registry = ToolRegistry()
    def num(n: int) -> int:
        return n

    register(registry, num, "num", finalize_content=lambda o: TextPart(f"[{o.code}] hidden"))
    registry.register_guard(None, lambda execution: "never")
    outcome = await run_one(registry, call("c1", "num", arguments))
    assert (outcome.call_id, codes([outcome])) == ("c1", [code])
    assert outcome.value == {"message": outcome.failure.message}
    assert outcome.content == (TextPart(f"[{code}] hidden"),)


async def test_an_unknown_tool_has_no_hook_to_finalize_it() -> None:
    registry = ToolRegistry()
    register(registry, lambda: 1, "known", finalize_content=lambda o: TextPart("x"))
    outcome = await run_one(registry, call("c1", "ghost"))
    assert codes([outcome]) == ["UNKNOWN_TOOL"] and outcome.content == (TextPart(outcome.failure.message),)


async def _coroutine_hook(outcome: ToolExecutionOutcome) -> TextPart:
    return TextPart("never awaited")


def _raises(outcome: ToolExecutionOutcome) -> Any:
    raise KeyError("missing")


@pytest.mark.parametrize("hook_name", ["project_content", "finalize_content"])
@pytest.mark.parametrize("hook", [_raises, lambda o: "plain text", lambda o: {"type": "text"}, lambda o: [TextPart("a"), 1], _coroutine_hook])
async def test_a_content_hook_that_raises_or_returns_no_parts_is_a_tool_error_naming_the_hook(hook_name: str, hook: Any) -> None:
    registry = ToolRegistry()
    register(registry, lambda: "fine", "t", **{hook_name: hook})
    outcome = await run_one(registry, call("c1", "t"))
    assert codes([outcome]) == ["TOOL_ERROR"] and outcome.reason == "content_hook"
    assert outcome.failure.message.startswith(f"{hook_name} of 't' failed:")


async def test_result_listeners_and_sinks_see_the_final_content() -> None:
    registry = ToolRegistry()
    register(registry, lambda: {"points": 2}, "plot", project_content=chart, finalize_content=lambda o: o.content[1:])
    heard: list[Any] = []
    registry.register_result_listener(None, lambda outcome: heard.append(outcome.content))
    log = InMemoryToolLog()
    outcome = await run_one(registry, call("c1", "plot"), sink=log)
    assert outcome.content == heard[0] == log.outcomes[0].content == (ImagePart(PNG, "image/png"),)


async def test_finalize_content_is_pinned_with_the_version_in_the_snapshot() -> None:
    registry = ToolRegistry()
    context = RequestContext("acme", "alice", frozenset())
    tool = PythonFunction.from_callable(lambda: "v", name="t")
    registry.register(tool, None, ToolRegistrationOptions(metadata=ToolMetadata(version="1.0.0"),
                                                          finalize_content=lambda o: TextPart("one")))
    assembly = registry.assemble(context)
    registry.register(tool, None, ToolRegistrationOptions(metadata=ToolMetadata(version="1.1.0"),
                                                          finalize_content=lambda o: TextPart("two")))
    old = await registry.execute_batch([ToolCall("c1", "t", "{}")], assembly)
    new = await registry.execute_batch([ToolCall("c1", "t", "{}")], registry.assemble(context))
    assert (old[0].content, new[0].content) == ((TextPart("one"),), (TextPart("two"),))


async def test_the_logs_record_set_content_with_images_as_base64_and_read_it_back(tmp_path: Path) -> None:
    registry = ToolRegistry()
    register(registry, lambda: {"points": 1}, "plot", project_content=chart)
    register(registry, lambda: "plain", "plain")
    calls = [call("c1", "plot"), call("c2", "plain")]
    with SqliteToolLog(tmp_path / "tools.sqlite3") as log:
        outcomes = await registry.execute_batch(calls, registry.seal(), sink=log)
        assert log.outcomes() == outcomes
    with SqliteSessionStore(tmp_path / "session.sqlite3") as store:
        turn = await store.begin_turn("s")
        await registry.execute_batch(calls, registry.seal(), sink=store.sink("s", turn, 1))
        results = [e.payload for e in await store.events("s") if e.kind == "tool/result"]
    assert results[0]["content"] == [{"type": "text", "text": "1 points"},
                                     {"type": "image", "mime_type": "image/png", "data": "iVBORy1jaGFydA=="}]
    assert "content" not in results[1]  # the default content is the value's text: not written twice


async def test_a_resumed_step_returns_the_recorded_content_of_the_calls_delivered_before_it_parked(tmp_path: Path) -> None:
    registry = ToolRegistry()
    register(registry, lambda: {"points": 5}, "plot", project_content=chart)
    register(registry, lambda: "done", "gated", requires_approval=True)
    registry.approval = Approver(ApprovalResult.DEFERRED)
    scope = session_scope()
    calls = [ToolCall("c1", "plot", "{}", scope=scope), ToolCall("c2", "gated", "{}", scope=scope)]
    with SqliteSessionStore(tmp_path / "session.sqlite3") as store:
        turn = await store.begin_turn(str(scope.session_id))
        parked = await registry.execute_batch(calls, registry.seal(scope), sink=store.sink(str(scope.session_id), turn, 1))
        resumed = await registry.resume(store, str(scope.session_id), {"c2": ApprovalResult.APPROVED}, registry.seal(scope))
    assert resumed[0] == parked.delivered[0] and resumed[0].content[1] == ImagePart(PNG, "image/png")
    assert json.loads(resumed[1].value_json) == "done"
