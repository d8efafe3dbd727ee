"""GovernedToolset in pydantic-ai's own agent loop, scripted with FunctionModel.

asyncio only: pydantic-ai runs a model turn's tool calls as ``asyncio`` tasks
(``asyncio.create_task`` in ``_tool_execution``), so an agent run cannot run under trio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

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
from tether_clr.integrations.pydantic_ai import GovernedToolset

from tests.integrations.tools import add_and_refund
from tests.integrations.scripted import Script, call

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _agent(script: Script, toolset: GovernedToolset) -> Agent[Any, Any]:
    return Agent(script.model, toolsets=[toolset], output_type=[str, DeferredToolRequests])


async def test_a_python_tool_runs_through_the_pipeline_and_its_result_reaches_the_model() -> None:
    ran: list[str] = []
    script = Script([call("add", {"a": 2, "b": 3}, "c1")], "done")
    result = await _agent(script, GovernedToolset(add_and_refund(ran), context=ACME)).run("add")
    assert result.output == "done" and ran == ["add 2 3"]
    assert script.returns()["c1"].content == "5"


async def test_a_csharp_tool_is_offered_and_runs_like_a_python_one(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry(instrumentation=None)
    registry.register(clr_tools["functions"]["Add"])
    script = Script([call("Add", {"a": 20, "b": 22}, "c1")], "done")
    await _agent(script, GovernedToolset(registry, context=ACME)).run("add")
    assert "Add" in script.offered[0]
    assert script.returns()["c1"].content == "42"


async def test_a_guard_denial_reaches_the_model_as_a_failed_return_starting_with_its_code() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no adding on Sundays" if execution.name == "add" else None)
    script = Script([call("add", {"a": 1, "b": 1}, "c1")], "done")
    await _agent(script, GovernedToolset(registry, context=ACME)).run("add")
    part = script.returns()["c1"]
    assert part.outcome == "failed" and part.content == "Error [DENIED]: no adding on Sundays"
    assert ran == []


async def test_invalid_arguments_become_model_retry_and_the_retried_call_runs() -> None:
    ran: list[str] = []
    script = Script([call("add", {"a": "two", "b": 3}, "c1")], [call("add", {"a": 2, "b": 3}, "c2")], "done")
    await _agent(script, GovernedToolset(add_and_refund(ran), context=ACME)).run("add")
    retried = script.returns(1)["c1"]
    assert retried.outcome == "retried" and "Error [INVALID_ARGS" in str(retried.content)
    assert script.returns(2)["c2"].content == "5" and ran == ["add 2 3"]


async def test_an_unknown_tool_is_refused_before_any_body_and_the_model_is_told() -> None:
    ran: list[str] = []
    script = Script([call("launch_rockets", {}, "c1")], "done")
    await _agent(script, GovernedToolset(add_and_refund(ran), context=ACME)).run("go")
    part = script.returns()["c1"]
    assert part.outcome == "retried" and "launch_rockets" in str(part.content) and ran == []


async def test_a_tenant_that_cannot_see_a_tool_is_never_offered_it_nor_can_call_it() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def secret() -> str:
        ran.append("secret")
        return "s"

    registry.register(PythonFunction.from_callable(secret, name="secret"), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(tenants=frozenset({"globex"}))))
    script = Script([call("secret", {}, "c1")], "done")
    toolset = GovernedToolset(registry, context_for=lambda deps: RequestContext(deps, "alice"))
    await Agent(script.model, toolsets=[toolset], deps_type=str).run("go", deps="acme")
    assert "secret" not in script.offered[0] and ran == []
    globex = Script("done")
    await Agent(globex.model, toolsets=[toolset], deps_type=str).run("go", deps="globex")
    assert "secret" in globex.offered[0]


async def test_identity_comes_from_the_host_exactly_once_and_a_failing_context_for_fails_closed() -> None:
    registry = add_and_refund()
    with pytest.raises(TypeError):
        GovernedToolset(registry)
    with pytest.raises(TypeError):
        GovernedToolset(registry, context=ACME, context_for=lambda deps: ACME)

    def broken(deps: Any) -> RequestContext:
        raise KeyError("tenant")

    for context_for in (broken, lambda deps: "acme"):
        with pytest.raises(IdentityError):
            await _agent(Script("done"), GovernedToolset(registry, context_for=context_for)).run("go")


async def test_one_model_turn_is_one_batch_run_in_model_order() -> None:
    order: list[str] = []
    registry = ToolRegistry(instrumentation=None)

    async def step(name: str) -> str:
        order.append(name)
        return name

    registry.register(PythonFunction.from_callable(step, name="step"))
    script = Script([call("step", {"name": n}, f"c{n}") for n in "abcd"], "done")
    await _agent(script, GovernedToolset(registry, context=ACME)).run("go")
    assert order == list("abcd")  # not concurrency-safe: one batch runs them one by one, in the model's order
    assert [script.returns()[f"c{n}"].content for n in "abcd"] == list("abcd")


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
@pytest.mark.parametrize("answer", ["approved", "denied"])
async def test_an_approval_gated_call_runs_only_when_approved_through_deferred_tool_results(
    logged: bool, answer: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    toolset = GovernedToolset(add_and_refund(ran), context=ACME, **options)
    script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2")], "finished")
    agent = _agent(script, toolset)
    first = await agent.run("refund")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [c.tool_call_id for c in requests.approvals] == ["c2"]
    asked = requests.metadata["c2"]
    assert asked["fingerprint"].startswith("sha256:") and asked["arguments"] == '{"order":"A7"}'
    assert "requires approval" in asked["reason"]
    assert ran == ["add 1 2"]
    decision: Any = True if answer == "approved" else ToolDenied("not today")
    second = await agent.run(message_history=first.all_messages(),
                             deferred_tool_results=DeferredToolResults(approvals={"c2": decision}))
    assert second.output == "finished"
    shown = script.returns()["c2"]
    if answer == "approved":
        assert ran == ["add 1 2", "refund A7"] and shown.content == "refunded A7"
    else:
        assert ran == ["add 1 2"] and shown.outcome == "denied" and shown.content == "not today"
    if store is not None:
        events = await store.events("s1")
        assert log_violations(events) == []
        results = {e.call_id: e.payload for e in events if e.kind == "tool/result"}
        assert set(results) == {"c1", "c2"}
        store.close()


async def test_an_approval_given_for_other_arguments_does_not_apply() -> None:
    ran: list[str] = []
    script = Script([call("refund", {"order": "A7"}, "c1")], "finished")
    agent = _agent(script, GovernedToolset(add_and_refund(ran), context=ACME))
    first = await agent.run("refund")
    assert isinstance(first.output, DeferredToolRequests)
    override = ToolApproved(override_args={"order": "B9"})
    await agent.run(message_history=first.all_messages(),
                    deferred_tool_results=DeferredToolResults(approvals={"c1": override}))
    shown = script.returns()["c1"]
    assert ran == [] and shown.content.startswith("Error [DENIED/approval_mismatch]")


async def test_a_deferred_tool_found_through_the_search_is_offered_next_step_and_runs() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def archive(order: str) -> str:
        ran.append(f"archive {order}")
        return "archived"

    registry.register(PythonFunction.from_callable(archive, name="archive_order"), None, ToolRegistrationOptions(
        metadata=ToolMetadata(deferred=True, search_hint="store old orders away")))
    registry.enable_tool_search()
    script = Script([call("tool_search", {"query": "archive old orders", "limit": 3}, "c1")],
                    [call("archive_order", {"order": "A7"}, "c2")], "done")
    await _agent(script, GovernedToolset(registry, context=ACME)).run("archive")
    assert "archive_order" not in script.offered[0] and "tool_search" in script.offered[0]
    assert "archive_order" in script.offered[1]
    assert ran == ["archive A7"] and script.returns()["c2"].content == "archived"


async def test_with_a_session_store_the_log_holds_every_call_and_has_no_violations(tmp_path: Path) -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no" if execution.arguments.get("a") == 0 else None)
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(registry, context=ACME, store=store, session_id="s1")
        script = Script([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 0, "b": 2}, "c2")],
                        [call("add", {"a": "x", "b": 2}, "c3")], [call("add", {"a": 5, "b": 5}, "c4")], "done")
        await _agent(script, toolset).run("go")
        events = await store.events("s1")
        assert log_violations(events) == []
        assert [e.call_id for e in events if e.kind == "tool/call"] == ["c1", "c2", "c3", "c4"]
        assert [e.call_id for e in events if e.kind == "tool/result"] == ["c1", "c2", "c3", "c4"]
        assert len([e for e in events if e.kind == "turn/start"]) == 3  # one turn per model turn's batch
        assert ran == ["add 1 2", "add 5 5"]


async def test_with_a_store_a_call_after_a_parked_one_waits_and_runs_when_the_step_resumes(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("add", {"a": 1, "b": 2}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        requests = first.output
        assert isinstance(requests, DeferredToolRequests)
        assert [c.tool_call_id for c in requests.approvals] == ["c1", "c2"]
        assert requests.metadata["c2"]["waiting_for"] == ["c1"] and ran == []
        answers = DeferredToolResults(approvals={"c1": True, "c2": True})
        await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert ran == ["refund A7", "add 1 2"]  # in the model's order, as one step
        assert {k: v.content for k, v in script.returns().items()} == {"c1": "refunded A7", "c2": "3"}
        events = await store.events("s1")
        assert log_violations(events) == []
        assert [e.call_id for e in events if e.kind == "tool/result"] == ["c1", "c2"]


async def test_with_a_store_denying_a_parked_call_and_the_one_waiting_behind_it_runs_neither(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("add", {"a": 1, "b": 2}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        answers = DeferredToolResults(approvals={"c1": ToolDenied("no"), "c2": ToolDenied("no")})
        await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert ran == []
        events = await store.events("s1")
        assert log_violations(events) == []
        assert [e.call_id for e in events if e.kind == "tool/result"] == ["c1", "c2"]


async def test_no_store_an_approval_carried_back_in_the_results_metadata_runs_in_a_new_toolset() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    script = Script([call("refund", {"order": "A7"}, "c1")], "finished", [call("refund", {"order": "B9"}, "c2")], "end")
    first = await _agent(script, GovernedToolset(registry, context=ACME)).run("refund")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    other = _agent(script, GovernedToolset(registry, context=ACME))  # another process: it asked nothing
    answers = DeferredToolResults(approvals={"c1": True}, metadata=dict(requests.metadata))
    result = await other.run(message_history=first.all_messages(), deferred_tool_results=answers)
    assert result.output == "finished" and ran == ["refund A7"]
    second = await other.run("again", message_history=result.all_messages())
    assert isinstance(second.output, DeferredToolRequests)
    third = _agent(script, GovernedToolset(registry, context=ACME))  # neither asked it nor given its metadata
    await third.run(message_history=second.all_messages(), deferred_tool_results=DeferredToolResults(approvals={"c2": True}))
    assert ran == ["refund A7"]
    assert script.returns()["c2"].content.startswith("Error [DENIED/approval_unknown]")


async def test_with_a_store_an_approval_with_other_arguments_is_denied_as_a_mismatch(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("refund", {"order": "B9"}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        assert first.output.metadata["c2"]["arguments"] == '{"order":"B9"}'  # its own request, its own fingerprint
        answers = DeferredToolResults(approvals={"c1": ToolApproved(override_args={"order": "X1"}), "c2": True})
        await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert ran == ["refund B9"]
        assert script.returns()["c1"].content.startswith("Error [DENIED/approval_mismatch]")
        assert log_violations(await store.events("s1")) == []


async def test_with_a_store_a_new_toolset_settles_a_step_whose_every_call_was_denied(tmp_path: Path) -> None:
    ran: list[str] = []
    path = tmp_path / "log.sqlite3"
    script = Script([call("refund", {"order": "A7"}, "c1"), call("add", {"a": 1, "b": 2}, "c2")], "finished",
                    [call("add", {"a": 2, "b": 2}, "c3")], "end")
    with SqliteSessionStore(path) as store:
        first = await _agent(script, GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")).run("r")
    with SqliteSessionStore(path) as store:
        agent = _agent(script, GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1"))
        answers = DeferredToolResults(approvals={"c1": ToolDenied("no"), "c2": ToolDenied("no")})
        second = await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        await agent.run("more", message_history=second.all_messages())
        assert ran == ["add 2 2"]
        events = await store.events("s1")
        assert log_violations(events) == []
        results = {e.call_id: (e.payload.get("code"), e.payload.get("reason")) for e in events if e.kind == "tool/result"}
        assert results == {"c1": ("DENIED", None), "c2": ("DENIED", "withdrawn"), "c3": (None, None)}
