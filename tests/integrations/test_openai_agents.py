"""governed_tools in the OpenAI Agents SDK's own agent loop (Runner.run), scripted with a Model subclass.

asyncio only: the SDK runs every tool call as an ``asyncio`` task (``asyncio.create_task`` in
``run_internal/tool_execution.py``) and its runner uses asyncio primitives throughout, so a run
cannot happen under trio. The SDK's own tracing is disabled (``RunConfig(tracing_disabled=True)``):
it would try to export to OpenAI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, ModelBehaviorError, RunConfig, Runner, RunResult, ToolCallOutputItem

from tether_clr import (
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)
from tether_clr.integrations import IdentityError
from tether_clr.integrations.openai_agents import governed_tools

from tests.integrations.tools import add_and_refund
from tests.integrations.scripted_agents import ScriptedModel, call

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")
QUIET = RunConfig(tracing_disabled=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _run(model: ScriptedModel, tools: list[Any], context: Any = None, **config: Any) -> RunResult:
    agent = Agent(name="agent", model=model, tools=tools)
    return await Runner.run(agent, "go", context=context, run_config=RunConfig(tracing_disabled=True, **config))


async def test_a_python_tool_runs_through_the_pipeline_and_its_result_reaches_the_model() -> None:
    ran: list[str] = []
    model = ScriptedModel([call("add", {"a": 2, "b": 3}, "c1")], "done")
    result = await _run(model, governed_tools(add_and_refund(ran), context=ACME))
    assert result.final_output == "done" and ran == ["add 2 3"]
    assert model.outputs()["c1"] == "5"
    assert model.offered[0] == ["add", "refund"]


async def test_a_csharp_tool_is_offered_and_runs_like_a_python_one(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry(instrumentation=None)
    registry.register(clr_tools["functions"]["Add"])
    model = ScriptedModel([call("Add", {"a": 20, "b": 22}, "c1")], "done")
    await _run(model, governed_tools(registry, context=ACME))
    assert "Add" in model.offered[0]
    assert model.outputs()["c1"] == "42"


async def test_a_guard_denial_reaches_the_model_as_the_tool_output_starting_with_its_code() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no adding on Sundays" if execution.name == "add" else None)
    model = ScriptedModel([call("add", {"a": 1, "b": 1}, "c1")], "done")
    result = await _run(model, governed_tools(registry, context=ACME))
    assert model.outputs()["c1"] == "Error [DENIED]: no adding on Sundays"
    assert ran == []
    (item,) = [item for item in result.new_items if isinstance(item, ToolCallOutputItem)]
    assert item.custom_data == {"tether_clr": {"code": "DENIED", "reason": None, "message": "no adding on Sundays"}}


async def test_invalid_arguments_reach_the_model_and_its_corrected_call_runs_next_turn() -> None:
    ran: list[str] = []
    model = ScriptedModel([call("add", {"a": "two", "b": 3}, "c1")], [call("add", {"a": 2, "b": 3}, "c2")], "done")
    await _run(model, governed_tools(add_and_refund(ran), context=ACME))
    assert model.outputs(1)["c1"].startswith("Error [INVALID_ARGS")
    assert model.outputs(2)["c2"] == "5" and ran == ["add 2 3"]


async def test_arguments_that_are_not_json_are_refused_invalid_args_without_running_anything() -> None:
    ran: list[str] = []
    model = ScriptedModel([call("add", "{not json", "c1")], "done")
    await _run(model, governed_tools(add_and_refund(ran), context=ACME))
    assert model.outputs()["c1"].startswith("Error [INVALID_ARGS") and ran == []


async def test_an_unknown_tool_is_refused_by_the_sdk_and_nothing_runs() -> None:
    ran: list[str] = []
    tools = governed_tools(add_and_refund(ran), context=ACME)
    with pytest.raises(ModelBehaviorError):  # the SDK's default: a tool name not in its list fails the run
        await _run(ScriptedModel([call("launch_rockets", {}, "c1")], "done"), tools)
    model = ScriptedModel([call("launch_rockets", {}, "c1")], "done")
    await _run(model, tools, tool_not_found_behavior="return_error_to_model")
    assert "launch_rockets" in model.outputs()["c1"] and ran == []


async def test_a_tenant_that_cannot_see_a_tool_is_never_offered_it() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def secret() -> str:
        ran.append("secret")
        return "s"

    registry.register(PythonFunction.from_callable(secret, name="secret"), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(tenants=frozenset({"globex"}))))

    def context_for(tenant: str) -> RequestContext:
        return RequestContext(tenant, "alice")

    acme = governed_tools(registry, context_for=context_for, run_context="acme")
    assert "secret" not in [tool.name for tool in acme]
    model = ScriptedModel("done")
    await _run(model, acme, context="acme")
    assert "secret" not in model.offered[0]
    globex = governed_tools(registry, context_for=context_for, run_context="globex")
    model = ScriptedModel("done")
    await _run(model, globex, context="globex")
    assert "secret" in model.offered[0]
    # A list built for globex, run for acme: each step asks acme's assembly, so the tool is not offered
    # (and a call of it is a name the SDK does not know).
    model = ScriptedModel([call("secret", {}, "c1")], "done")
    with pytest.raises(ModelBehaviorError):
        await _run(model, globex, context="acme")
    assert "secret" not in model.offered[0] and ran == []


async def test_a_tool_hidden_after_the_offer_is_no_longer_offered() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    tools = governed_tools(registry, context=ACME)
    registry.update_metadata("add", "1.0.0", tenants=frozenset({"globex"}))
    model = ScriptedModel("done")
    await _run(model, tools)
    assert model.offered[0] == ["refund"]


async def test_identity_comes_from_the_host_exactly_once_and_a_failing_context_for_fails_closed() -> None:
    registry = add_and_refund()
    with pytest.raises(TypeError):
        governed_tools(registry)
    with pytest.raises(TypeError):
        governed_tools(registry, context=ACME, context_for=lambda run_context: ACME)
    with pytest.raises(TypeError):  # the list is built from the caller's assembly: it needs the run context
        governed_tools(registry, context_for=lambda run_context: ACME)
    with pytest.raises(IdentityError):
        governed_tools(registry, context_for=lambda run_context: run_context["tenant"], run_context={})
    tools = governed_tools(registry, context_for=lambda run_context: RequestContext(run_context["tenant"], "alice"),
                           run_context={"tenant": "acme"})
    with pytest.raises(IdentityError):  # each step asks again: a run whose context says nobody fails
        await _run(ScriptedModel("done"), tools, context={})


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
@pytest.mark.parametrize("answer", ["approved", "rejected"])
async def test_an_approval_gated_call_runs_only_when_approved_through_run_state(
    logged: bool, answer: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    model = ScriptedModel([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2")], "finished")
    agent = Agent(name="agent", model=model, tools=governed_tools(add_and_refund(ran), context=ACME, **options))
    first = await Runner.run(agent, "refund", run_config=QUIET)
    assert [item.raw_item.call_id for item in first.interruptions] == ["c2"]  # type: ignore[union-attr]
    assert ran == ["add 1 2"]
    state = first.to_state()
    for item in first.interruptions:
        if answer == "approved":
            state.approve(item)
        else:
            state.reject(item, rejection_message="not today")
    second = await Runner.run(agent, state, run_config=QUIET)
    assert second.final_output == "finished"
    shown = model.outputs()
    if answer == "approved":
        assert ran == ["add 1 2", "refund A7"] and shown["c2"] == "refunded A7"
    else:
        assert ran == ["add 1 2"] and shown["c2"] == "not today"
    if store is not None:
        events = await store.events("s1")
        assert log_violations(events) == []
        results = {e.call_id: e.payload for e in events if e.kind == "tool/result"}
        assert set(results) == {"c1", "c2"}  # the rejected call too: recorded DENIED, its body never ran
        assert results["c2"]["ok"] is (answer == "approved")
        if answer == "rejected":
            assert results["c2"]["code"] == "DENIED"
        assert [e.call_id for e in events if e.kind == "approval/asked"] == ["c2"]
        store.close()


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
async def test_an_approval_given_for_other_arguments_does_not_apply(logged: bool, tmp_path: Path) -> None:
    """A sticky approval (``always_approve=True``) covers the tool's later calls in the SDK, but the
    pipeline's approval is bound to the arguments it asked about: a later call with others is DENIED."""
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    model = ScriptedModel([call("refund", {"order": "A7"}, "c1")], [call("refund", {"order": "B9"}, "c2")], "finished")
    agent = Agent(name="agent", model=model, tools=governed_tools(add_and_refund(ran), context=ACME, **options))
    first = await Runner.run(agent, "refund", run_config=QUIET)
    state = first.to_state()
    state.approve(first.interruptions[0], always_approve=True)
    second = await Runner.run(agent, state, run_config=QUIET)
    assert second.final_output == "finished" and not second.interruptions
    assert ran == ["refund A7"]
    assert model.outputs()["c2"].startswith("Error [DENIED/approval_mismatch]")
    if store is not None:
        events = await store.events("s1")
        assert log_violations(events) == []
        results = {e.call_id: e.payload for e in events if e.kind == "tool/result"}
        assert results["c1"]["ok"] is True and results["c2"]["code"] == "DENIED"
        store.close()


async def test_a_deferred_tool_found_through_the_search_is_offered_next_step_and_runs() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def archive(order: str) -> str:
        ran.append(f"archive {order}")
        return "archived"

    registry.register(PythonFunction.from_callable(archive, name="archive_order"), None, ToolRegistrationOptions(
        metadata=ToolMetadata(deferred=True, search_hint="store old orders away")))
    registry.enable_tool_search()
    tools = governed_tools(registry, context=ACME)
    assert "archive_order" in [tool.name for tool in tools]  # built, disabled until a search loads it
    model = ScriptedModel([call("tool_search", {"query": "archive old orders", "limit": 3}, "c1")],
                          [call("archive_order", {"order": "A7"}, "c2")], "done")
    await _run(model, tools)
    assert "archive_order" not in model.offered[0] and "tool_search" in model.offered[0]
    assert "archive_order" in model.offered[1]
    assert ran == ["archive A7"] and model.outputs()["c2"] == "archived"


async def test_each_call_is_a_one_call_batch_in_the_order_the_sdk_runs_them() -> None:
    order: list[str] = []
    registry = ToolRegistry(instrumentation=None)

    async def step(name: str) -> str:
        order.append(name)
        return name

    registry.register(PythonFunction.from_callable(step, name="step"))
    model = ScriptedModel([call("step", {"name": n}, f"c{n}") for n in "abc"], "done")
    await _run(model, governed_tools(registry, context=ACME))
    assert sorted(order) == list("abc")  # each ran once; the SDK, not a batch, decides the order
    assert [model.outputs()[f"c{n}"] for n in "abc"] == list("abc")


async def test_with_a_session_store_the_log_holds_every_call_and_has_no_violations(tmp_path: Path) -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no" if execution.arguments.get("a") == 0 else None)
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        tools = governed_tools(registry, context=ACME, store=store, session_id="s1")
        model = ScriptedModel([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 0, "b": 2}, "c2")],
                              [call("add", {"a": "x", "b": 2}, "c3")], [call("add", {"a": 5, "b": 5}, "c4")], "done")
        await _run(model, tools)
        events = await store.events("s1")
        assert log_violations(events) == []
        assert sorted(e.call_id for e in events if e.kind == "tool/call") == ["c1", "c2", "c3", "c4"]
        assert sorted(e.call_id for e in events if e.kind == "tool/result") == ["c1", "c2", "c3", "c4"]
        assert len([e for e in events if e.kind == "turn/start"]) == 4  # one turn per call: one-call batches
        assert ran == ["add 1 2", "add 5 5"]


async def test_with_a_store_approved_calls_of_one_turn_resumed_together_each_run_once(tmp_path: Path) -> None:
    """The SDK invokes a resumed turn's approved calls concurrently; each parks and resumes as its own
    turn of the log, one after the other (the log has one writer)."""
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        tools = governed_tools(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        model = ScriptedModel([call("refund", {"order": o}, f"c{o}") for o in ("A7", "B9", "C3")], "finished")
        agent = Agent(name="agent", model=model, tools=tools)
        first = await Runner.run(agent, "refund", run_config=QUIET)
        assert len(first.interruptions) == 3 and ran == []
        state = first.to_state()
        for item in first.interruptions:
            state.approve(item)
        await Runner.run(agent, state, run_config=QUIET)
        assert sorted(ran) == ["refund A7", "refund B9", "refund C3"]
        assert model.outputs() == {"cA7": "refunded A7", "cB9": "refunded B9", "cC3": "refunded C3"}
        events = await store.events("s1")
        assert log_violations(events) == []
        assert len([e for e in events if e.kind == "turn/start"]) == 3


async def test_asking_whether_a_call_needs_approval_never_runs_its_body_even_when_a_listener_allows_it() -> None:
    """With a pre-execute listener registered, every tool may need approval, so needs_approval asks the
    pipeline; a listener that allows must not let that question run the body: it runs once, when invoked."""
    ran: list[str] = []
    registry = add_and_refund(ran)

    async def allow(execution: Any, next_: Any) -> Any:
        return await next_()

    registry.register_pre_execute_listener(None, allow)
    model = ScriptedModel([call("add", {"a": 2, "b": 3}, "c1")], "done")
    result = await _run(model, governed_tools(registry, context=ACME))
    assert result.final_output == "done" and model.outputs()["c1"] == "5"
    assert ran == ["add 2 3"]
