"""GovernedTools in LangGraph's own loop (an agent node and ToolNode, and create_react_agent), scripted with
langchain-core's GenericFakeChatModel.

asyncio only: LangGraph runs nodes and a ToolNode's calls as asyncio tasks (``asyncio.gather`` in
``ToolNode._afunc``, the Pregel runner's ``asyncio`` futures), so a graph cannot run under trio.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

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
from tether_clr.integrations.langchain import ASKED_REASON, GovernedTools, approve, failure_from, governed_tools, reject
from tether_clr.records.outcomes import ToolFailureCodes
from tether_clr.records.suspension import call_fingerprint
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.steps import read_steps

from tests.integrations.tools import add_and_refund
from tests.integrations.lc_scripted import ScriptedChat, agent_graph, call, thread

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _run(chat: ScriptedChat, adapter: GovernedTools, config: Any = None) -> dict[str, Any]:
    graph = agent_graph(chat, adapter)
    return await graph.ainvoke({"messages": [("user", "go")]}, config or thread())


async def test_a_python_tool_runs_through_the_pipeline_and_its_result_reaches_the_model() -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("add", {"a": 2, "b": 3}, "c1")], "done")
    result = await _run(chat, GovernedTools(add_and_refund(ran), context=ACME))
    assert result["messages"][-1].content == "done" and ran == ["add 2 3"]
    shown = chat.results()["c1"]
    assert shown.content == "5" and shown.status == "success" and shown.name == "add"
    assert chat.offered[0] == ["add", "refund"]


async def test_a_csharp_tool_is_offered_and_runs_like_a_python_one(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry(instrumentation=None)
    registry.register(clr_tools["functions"]["Add"])
    chat = ScriptedChat.of([call("Add", {"a": 20, "b": 22}, "c1")], "done")
    await _run(chat, GovernedTools(registry, context=ACME))
    assert "Add" in chat.offered[0]
    assert chat.results()["c1"].content == "42"


async def test_a_guard_denial_reaches_the_model_as_an_error_tool_message_starting_with_its_code() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no adding on Sundays" if execution.name == "add" else None)
    chat = ScriptedChat.of([call("add", {"a": 1, "b": 1}, "c1")], "done")
    await _run(chat, GovernedTools(registry, context=ACME))
    shown = chat.results()["c1"]
    assert shown.status == "error" and shown.content == "Error [DENIED]: no adding on Sundays"
    failure = failure_from(shown)
    assert failure is not None and failure.code is ToolFailureCodes.DENIED and failure.call_id == "c1"
    assert failure.text == shown.content and ran == []


async def test_invalid_arguments_reach_the_model_and_its_corrected_call_runs() -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("add", {"a": "two", "b": 3}, "c1")], [call("add", {"a": 2, "b": 3}, "c2")], "done")
    await _run(chat, GovernedTools(add_and_refund(ran), context=ACME))
    refused = chat.results(1)["c1"]
    assert refused.status == "error" and str(refused.content).startswith("Error [INVALID_ARGS")
    failure = failure_from(refused)
    assert failure is not None and failure.code is ToolFailureCodes.INVALID_ARGS
    assert chat.results(2)["c2"].content == "5" and ran == ["add 2 3"]


async def test_an_unknown_tool_name_is_refused_by_tool_node_and_the_library_runs_nothing() -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("launch_rockets", {}, "c1")], "done")
    await _run(chat, GovernedTools(add_and_refund(ran), context=ACME))
    shown = chat.results()["c1"]
    assert shown.status == "error" and "launch_rockets is not a valid tool" in str(shown.content)
    assert failure_from(shown) is None and ran == []  # ToolNode's own refusal: it never reached the library


async def test_a_tenant_that_cannot_see_a_tool_is_never_offered_it_nor_can_call_it() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def secret() -> str:
        ran.append("secret")
        return "s"

    registry.register(PythonFunction.from_callable(secret, name="secret"), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(tenants=frozenset({"globex"}))))
    adapter = GovernedTools(registry, context_for=lambda config: RequestContext(config["configurable"]["tenant"], "u"))
    assert [t.name for t in adapter.tools(thread(tenant="acme"))] == ["add", "refund"]
    assert "secret" in [t.name for t in adapter.tools(thread(tenant="globex"))]
    assert "secret" not in [t.name for t in governed_tools(registry, context=ACME)]
    # acme's model names it anyway, and the tool node holds it (built for globex): identity is read at call time
    globex_tool = next(t for t in adapter.tools(thread(tenant="globex")) if t.name == "secret")
    message = await globex_tool.ainvoke(call("secret", {}, "c1"), thread(tenant="acme"))
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert str(message.content).startswith("Error [UNKNOWN_TOOL") and ran == []
    chat = ScriptedChat.of([call("secret", {}, "c2")], "done")
    await _run(chat, adapter, thread(tenant="acme"))
    assert all("secret" not in offered for offered in chat.offered) and ran == []


async def test_identity_comes_from_the_host_exactly_once_and_a_failing_context_for_fails_closed() -> None:
    registry = add_and_refund()
    with pytest.raises(TypeError):
        GovernedTools(registry)
    with pytest.raises(TypeError):
        GovernedTools(registry, context=ACME, context_for=lambda config: ACME)

    def broken(config: Any) -> RequestContext:
        raise KeyError("tenant")

    not_a_context: Any = lambda config: "acme"
    for context_for in (broken, not_a_context):
        with pytest.raises(IdentityError):
            await _run(ScriptedChat.of("done"), GovernedTools(registry, context_for=context_for))


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
@pytest.mark.parametrize("answer", ["approved", "rejected"])
async def test_an_approval_gated_call_runs_only_when_approved_through_interrupt_and_command_resume(
    logged: bool, answer: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    adapter = GovernedTools(add_and_refund(ran), context=ACME, **options)
    chat = ScriptedChat.of([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2")], "finished")
    graph = agent_graph(chat, adapter)
    first = await graph.ainvoke({"messages": [("user", "refund")]}, thread())
    (asked,) = first["__interrupt__"]
    request = asked.value
    assert request["call_id"] == "c2" and request["name"] == "refund" and request["arguments"] == '{"order":"A7"}'
    assert request["fingerprint"] == call_fingerprint("refund", '{"order":"A7"}')
    assert "requires approval" in request["reason"]
    assert ran == ["add 1 2"]  # the interrupt waited for the call beside it to end
    resume = approve(request) if answer == "approved" else reject(request)
    second = await graph.ainvoke(Command(resume=resume), thread())
    assert second["messages"][-1].content == "finished"
    shown = chat.results()
    assert shown["c1"].content == "3"  # the resumed ToolNode ran c1 again: answered from its result, not run twice
    if answer == "approved":
        assert ran == ["add 1 2", "refund A7"] and shown["c2"].content == "refunded A7"
    else:
        assert ran == ["add 1 2"] and shown["c2"].status == "error"
        assert str(shown["c2"].content).startswith("Error [DENIED]: approval rejected")
    if store is not None:
        events = await store.events("s1")
        assert log_violations(events) == []
        results = [e for e in events if e.kind == "tool/result"]
        # the ask is recorded when asked, and its step closed at once; the answer ran as a turn of its own
        assert [e.call_id for e in results] == ["c1", "c2", "c2"]
        assert results[1].payload["code"] == "ABORTED_BEFORE_DISPATCH" and ASKED_REASON in results[1].payload["message"]
        assert [e.call_id for e in events if e.kind == "approval/asked"][:1] == ["c2"]
        assert read_steps(events).suspended() == [] and all(read_steps(events).turns.values())
        store.close()


@pytest.mark.parametrize("resume", ["other arguments", "a bare True", "nothing usable"])
async def test_an_approval_for_other_arguments_or_without_a_fingerprint_does_not_apply(resume: str) -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("refund", {"order": "A7"}, "c1")], "finished")
    graph = agent_graph(chat, GovernedTools(add_and_refund(ran), context=ACME))
    first = await graph.ainvoke({"messages": [("user", "refund")]}, thread())
    request = first["__interrupt__"][0].value
    answers: dict[str, Any] = {
        "other arguments": approve({"call_id": "c1", "fingerprint": call_fingerprint("refund", '{"order":"B9"}')}),
        "a bare True": True,
        "nothing usable": {"approved": "yes"},
    }
    assert request["fingerprint"] != answers["other arguments"]["fingerprint"]
    await graph.ainvoke(Command(resume=answers[resume]), thread())
    shown = chat.results()["c1"]
    assert ran == [] and shown.status == "error"
    if resume == "other arguments":
        assert str(shown.content).startswith("Error [DENIED/approval_mismatch]")
    else:
        assert str(shown.content).startswith("Error [DENIED]")


async def test_a_deferred_tool_found_through_the_search_is_offered_next_step_and_runs() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)

    def archive(order: str) -> str:
        ran.append(f"archive {order}")
        return "archived"

    registry.register(PythonFunction.from_callable(archive, name="archive_order"), None, ToolRegistrationOptions(
        metadata=ToolMetadata(deferred=True, search_hint="store old orders away")))
    registry.enable_tool_search()
    chat = ScriptedChat.of([call("tool_search", {"query": "archive old orders", "limit": 3}, "c1")],
                           [call("archive_order", {"order": "A7"}, "c2")], "done")
    adapter = GovernedTools(registry, context=ACME)
    await _run(chat, adapter)
    assert "archive_order" not in chat.offered[0] and "tool_search" in chat.offered[0]
    assert "archive_order" in chat.offered[1]
    assert chat.results(1)["c1"].artifact == {"tether_clr": {"loaded": ["archive_order"]}}
    assert ran == ["archive A7"] and chat.results()["c2"].content == "archived"
    # another conversation has loaded nothing; one rebuilt from its messages (a new process) has
    assert "archive_order" not in [t.name for t in adapter.tools(thread("t2"))]
    fresh = GovernedTools(registry, context=ACME)
    assert "archive_order" in [t.name for t in fresh.tools(thread("t3"), chat.seen[1])]


async def test_a_deferred_tool_called_before_the_search_loaded_it_is_refused_and_never_runs() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register(PythonFunction.from_callable(lambda order: ran.append(order), name="archive_order"), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(deferred=True)))
    registry.enable_tool_search()
    chat = ScriptedChat.of([call("archive_order", {"order": "A7"}, "c1")], "done")
    await _run(chat, GovernedTools(registry, context=ACME))
    shown = chat.results()["c1"]
    assert shown.status == "error" and ran == []
    failure = failure_from(shown)
    assert failure is not None and failure.reason == "schema_not_loaded"


async def test_with_a_session_store_the_log_holds_every_call_and_has_no_violations(
    session_store: SqlSessionStore,
) -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    registry.register_guard(None, lambda execution: "no" if execution.arguments.get("a") == 0 else None)
    adapter = GovernedTools(registry, context=ACME, store=session_store, session_id="s1")
    chat = ScriptedChat.of([call("add", {"a": 1, "b": 2}, "c1"), call("add", {"a": 0, "b": 2}, "c2")],
                           [call("add", {"a": "x", "b": 2}, "c3")], [call("refund", {"order": "A7"}, "c4")], "done")
    graph = agent_graph(chat, adapter)
    first = await graph.ainvoke({"messages": [("user", "go")]}, thread())
    await graph.ainvoke(Command(resume=approve(first["__interrupt__"][0].value)), thread())
    events = await session_store.events("s1")
    assert log_violations(events) == []
    # c4 twice: the turn that recorded its ask (closed at once), then the turn that ran it approved
    assert sorted(str(e.call_id) for e in events if e.kind == "tool/call") == ["c1", "c2", "c3", "c4", "c4"]
    assert sorted(str(e.call_id) for e in events if e.kind == "tool/result") == ["c1", "c2", "c3", "c4", "c4"]
    assert len([e for e in events if e.kind == "turn/start"]) == 5  # each call its own one-call batch, one turn each
    assert ran == ["add 1 2", "refund A7"]


async def test_create_react_agent_runs_governed_tools_and_their_approvals() -> None:
    ran: list[str] = []
    from langgraph.prebuilt import create_react_agent

    chat = ScriptedChat.of([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2")], "finished")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent (not installed here)
        agent = create_react_agent(chat, governed_tools(add_and_refund(ran), context=ACME), checkpointer=InMemorySaver())
    first = await agent.ainvoke({"messages": [("user", "go")]}, thread())
    assert ran == ["add 1 2"]
    await agent.ainvoke(Command(resume=approve(first["__interrupt__"][0].value)), thread())
    assert ran == ["add 1 2", "refund A7"] and chat.offered == [["add", "refund"]]
    assert {k: m.content for k, m in chat.results().items()} == {"c1": "3", "c2": "refunded A7"}


async def test_a_governed_tool_invoked_synchronously_refuses_clearly_and_runs_nothing() -> None:
    ran: list[str] = []
    (add, _) = governed_tools(add_and_refund(ran), context=ACME)
    with pytest.raises(NotImplementedError, match="ainvoke"):
        add.invoke(call("add", {"a": 1, "b": 2}, "c1"))
    assert ran == []


async def test_a_governed_tool_invoked_without_a_tool_call_returns_its_value_or_raises_its_failure() -> None:
    from tether_clr.integrations import GovernedToolError

    (add, _) = governed_tools(add_and_refund(), context=ACME)
    assert await add.ainvoke({"a": 1, "b": 2}) == "3"
    with pytest.raises(GovernedToolError, match=r"Error \[INVALID_ARGS"):
        await add.ainvoke({"a": "x", "b": 2})


async def test_two_approvals_in_one_tool_node_are_asked_one_resume_at_a_time_and_each_body_runs_once() -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("refund", {"order": "A7"}, "c1"), call("refund", {"order": "B9"}, "c2")], "finished")
    graph = agent_graph(chat, GovernedTools(add_and_refund(ran), context=ACME))
    first = await graph.ainvoke({"messages": [("user", "refund")]}, thread())
    asked = first["__interrupt__"][0].value
    second = await graph.ainvoke(Command(resume=approve(asked)), thread())
    other = second["__interrupt__"][0].value
    assert {asked["call_id"], other["call_id"]} == {"c1", "c2"}
    await graph.ainvoke(Command(resume=reject(other)), thread())
    approved = "refund A7" if asked["call_id"] == "c1" else "refund B9"
    assert ran == [approved]
    shown = chat.results()
    assert shown[asked["call_id"]].status == "success" and shown[other["call_id"]].status == "error"


@pytest.mark.parametrize("logged", [False, True], ids=["no store: the checkpoint", "session store: the log"])
async def test_a_node_resumed_by_a_new_adapter_never_runs_a_finished_call_or_an_answered_approval_twice(
    logged: bool, tmp_path: Path
) -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    current = {"adapter": GovernedTools(registry, context=ACME, **options)}

    class Process(GovernedTools):  # whichever process runs the graph now: each resume is a new adapter
        def __getattribute__(self, name: str) -> Any:
            return getattr(current["adapter"], name)

    chat = ScriptedChat.of([call("add", {"a": 1, "b": 2}, "c1"), call("refund", {"order": "A7"}, "c2"),
                            call("refund", {"order": "B9"}, "c3")], "finished")
    graph = agent_graph(chat, Process(registry, context=ACME))
    first = await graph.ainvoke({"messages": [("user", "go")]}, thread())
    asked = first["__interrupt__"][0].value
    current["adapter"] = GovernedTools(registry, context=ACME, **options)
    second = await graph.ainvoke(Command(resume=approve(asked)), thread())
    other = second["__interrupt__"][0].value
    current["adapter"] = GovernedTools(registry, context=ACME, **options)
    third = await graph.ainvoke(Command(resume=approve(other)), thread())
    assert third["messages"][-1].content == "finished"
    assert sorted(ran) == ["add 1 2", "refund A7", "refund B9"]  # each body once, across three adapters
    shown = chat.results()
    assert [shown[c].content for c in ("c1", "c2", "c3")] == ["3", "refunded A7", "refunded B9"]
    if store is not None:
        events = await store.events("s1")
        assert log_violations(events) == [] and read_steps(events).suspended() == []
        assert sorted(str(e.call_id) for e in events if e.kind == "approval/asked") == ["c2", "c2", "c3", "c3"]
        store.close()


async def test_an_answer_given_for_another_call_fails_closed() -> None:
    ran: list[str] = []
    chat = ScriptedChat.of([call("refund", {"order": "A7"}, "c1")], "finished")
    graph = agent_graph(chat, GovernedTools(add_and_refund(ran), context=ACME))
    first = await graph.ainvoke({"messages": [("user", "refund")]}, thread())
    request = first["__interrupt__"][0].value
    await graph.ainvoke(Command(resume=approve({**request, "call_id": "c9"})), thread())  # same arguments, other call
    shown = chat.results()["c1"]
    assert ran == [] and shown.status == "error" and str(shown.content).startswith("Error [DENIED]")


async def test_a_remembered_result_answers_only_the_identity_that_made_the_call() -> None:
    ran: list[str] = []
    adapter = GovernedTools(add_and_refund(ran), context_for=lambda config: config["configurable"]["who"])
    bob = RequestContext("acme", "bob")
    tool_call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1", "type": "tool_call"}
    for who in (ACME, ACME, bob):
        config = thread(who=who)
        (tool,) = [t for t in adapter.runnable_tools(config) if t.name == "add"]
        await tool.ainvoke(tool_call, config)
    assert ran == ["add 1 2", "add 1 2"]  # alice's repeat is answered from her result; bob's call is his own
