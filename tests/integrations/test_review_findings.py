"""Review findings on the three framework adapters (issue 30 review): each test states the rule it checks
and fails on the code under review, marked ``xfail(strict=True)`` so the suite stays green and a fix
flips it (strict: an unexpected pass fails until the marker is removed).

asyncio only: the frameworks' loops run their tool calls as ``asyncio`` tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent as SdkAgent
from agents import RunConfig, Runner
from agents.run_state import RunState
from langgraph.types import Command
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

from tether_clr import (
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    log_violations,
)
from tether_clr.integrations.langchain import GovernedTools, approve
from tether_clr.integrations.openai_agents import governed_tools
from tether_clr.integrations.pydantic_ai import GovernedToolset

from tests.integrations.tools import add_and_refund
from tests.integrations.lc_scripted import ScriptedChat, agent_graph, thread
from tests.integrations.lc_scripted import call as lc_call
from tests.integrations.scripted import Script, call
from tests.integrations.scripted_agents import ScriptedModel
from tests.integrations.scripted_agents import call as sdk_call

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")
QUIET = RunConfig(tracing_disabled=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _agent(script: Script, toolset: GovernedToolset) -> Agent[Any, Any]:
    return Agent(script.model, toolsets=[toolset], output_type=[str, DeferredToolRequests])


# ----------------------------------------------------------------------------------------------- pydantic-ai
async def test_pydantic_ai_logged_a_waiting_call_the_host_denied_never_runs(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("add", {"a": 1, "b": 2}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        answers = DeferredToolResults(approvals={"c1": True, "c2": ToolDenied("do not add")})
        await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert script.returns()["c2"].outcome == "denied"
        assert ran == ["refund A7"]  


async def test_pydantic_ai_logged_approved_calls_reaching_call_tool_one_by_one_complete_the_run(
    tmp_path: Path
) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("add", {"a": 1, "b": 2}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        answers = DeferredToolResults(approvals={"c1": True, "c2": True})
        with ToolManager.parallel_execution_mode("sequential"):
            second = await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert second.output == "finished" and ran == ["refund A7", "add 1 2"]
        assert {k: v.content for k, v in script.returns().items()} == {"c1": "refunded A7", "c2": "3"}


async def test_pydantic_ai_logged_two_approval_gated_calls_both_approved_both_run(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")
        script = Script([call("refund", {"order": "A7"}, "c1"), call("refund", {"order": "B9"}, "c2")], "finished")
        agent = _agent(script, toolset)
        first = await agent.run("refund")
        answers = DeferredToolResults(approvals={"c1": True, "c2": True})
        await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
        assert ran == ["refund A7", "refund B9"]


async def test_pydantic_ai_no_store_an_approval_applies_only_to_the_arguments_the_host_was_shown() -> None:
    ran: list[str] = []
    script = Script([call("refund", {"order": "A7"}, "c1")], "finished")
    agent = _agent(script, GovernedToolset(add_and_refund(ran), context=ACME))
    first = await agent.run("refund")
    assert first.output.metadata["c1"]["arguments"] == '{"order":"A7"}'  # what the approver is shown
    history = first.all_messages()
    for message in history:  # the history comes back from the host's storage (e.g. a browser) with other args
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == "c1":
                    part.args = {"order": "B9"}
    await agent.run(message_history=history, deferred_tool_results=DeferredToolResults(approvals={"c1": True}))
    assert ran == []


async def test_pydantic_ai_logged_a_parked_step_resumes_from_the_log_in_a_new_toolset(tmp_path: Path) -> None:
    ran: list[str] = []
    path = tmp_path / "log.sqlite3"
    script = Script([call("refund", {"order": "A7"}, "c1")], "finished")
    with SqliteSessionStore(path) as store:
        first = await _agent(script, GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1")).run("r")
    with SqliteSessionStore(path) as store:  # another process: a new store and toolset on the same log
        agent = _agent(script, GovernedToolset(add_and_refund(ran), context=ACME, store=store, session_id="s1"))
        await agent.run(message_history=first.all_messages(),
                        deferred_tool_results=DeferredToolResults(approvals={"c1": True}))
        assert ran == ["refund A7"]
        assert log_violations(await store.events("s1")) == []


async def test_pydantic_ai_logged_a_batch_cancelled_by_the_framework_leaves_no_log_violations(tmp_path: Path) -> None:
    registry = add_and_refund([])
    started = anyio.Event()

    async def slow(x: int) -> int:
        started.set()
        await anyio.sleep(3600)
        return x

    async def boom() -> str:
        await started.wait()
        raise KeyError("a host tool crashed")

    registry.register(PythonFunction.from_callable(slow, name="slow"))
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(registry, context=ACME, store=store, session_id="s1")
        script = Script([call("slow", {"x": 1}, "c1"), call("boom", {}, "c2")], "finished")
        with pytest.raises(KeyError):
            await Agent(script.model, toolsets=[toolset, FunctionToolset([boom])]).run("go")
        assert log_violations(await store.events("s1")) == []


async def test_pydantic_ai_calls_run_with_the_request_context_of_their_own_run(tmp_path: Path) -> None:
    seen: list[str | None] = []
    registry = add_and_refund([])
    registry.register_guard(None, lambda execution: seen.append(execution.context.request_id if execution.context else None))
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        toolset = GovernedToolset(registry, context_for=lambda deps: RequestContext("acme", "alice", request_id=deps),
                                  store=store, session_id="s1")
        for request_id in ("r1", "r2"):
            script = Script([call("add", {"a": 1, "b": 2}, f"c-{request_id}")], "done")
            await Agent(script.model, toolsets=[toolset], deps_type=str).run("go", deps=request_id)
    assert seen == ["r1", "r2"]


# ------------------------------------------------------------------------------------------ LangChain / LangGraph
async def test_langgraph_a_resume_in_another_process_never_runs_a_sibling_body_twice() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    chat = ScriptedChat.of([lc_call("add", {"a": 1, "b": 2}, "c1"), lc_call("refund", {"order": "A7"}, "c2")], "done")
    current = {"adapter": GovernedTools(registry, context=ACME)}

    class Process(GovernedTools):  # stands for "whichever process runs the graph now"
        def __getattribute__(self, name: str) -> Any:
            return getattr(current["adapter"], name)

    graph = agent_graph(chat, Process(registry, context=ACME))
    first = await graph.ainvoke({"messages": [("user", "go")]}, thread())
    request = first["__interrupt__"][0].value
    current["adapter"] = GovernedTools(registry, context=ACME)  # a new process, the same checkpoint
    await graph.ainvoke(Command(resume=approve(request)), thread())
    assert ran == ["add 1 2", "refund A7"]  # today: ["add 1 2", "add 1 2", "refund A7"]


# ---------------------------------------------------------------------------------------------- OpenAI Agents SDK
async def test_agents_a_run_state_resumed_in_another_process_runs_the_approved_call() -> None:
    ran: list[str] = []
    registry = add_and_refund(ran)
    model = ScriptedModel([sdk_call("refund", {"order": "A7"}, "c1")], "finished")
    first = await Runner.run(SdkAgent(name="a", model=model, tools=list(governed_tools(registry, context=ACME))), "refund",
                             run_config=QUIET)
    saved = first.to_state().to_json()
    other = SdkAgent(name="a", model=model, tools=list(governed_tools(registry, context=ACME)))  # another process
    state = await RunState.from_json(other, saved)
    for item in state.get_interruptions():
        state.approve(item)
    await Runner.run(other, state, run_config=QUIET)
    assert ran == ["refund A7"]  # today: [], c1 "Error [DENIED/approval_mismatch]"
