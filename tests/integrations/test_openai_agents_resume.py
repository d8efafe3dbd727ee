"""governed_tools when the host resumes a RunState elsewhere: serialized with ``RunState.to_json`` and
restored with ``RunState.from_json`` on another tool list (what another process does, as the SDK
documents for human-in-the-loop across processes), and when the adapter's memory of asked approvals
is bounded. The rule: an approval runs a call only with the arguments the approver was shown (the
RunState's interruption item); what the adapter cannot bind fails closed with a truthful reason.

asyncio only (the SDK's runner is asyncio; see test_openai_agents.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.run_context import _ApprovalRecord
from agents.run_state import RunState
from agents.tool_context import ToolContext

from tether_clr import (
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)
from tether_clr.integrations import GovernedCalls
from tether_clr.integrations.openai_agents import GovernedAgentTools, governed_tools

from tests.integrations.scripted_agents import ScriptedModel, call
from tests.support.session_stores import open_store

pytestmark = pytest.mark.anyio

ACME = RequestContext("acme", "alice")
QUIET = RunConfig(tracing_disabled=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _registry(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry(instrumentation=None)

    def refund(order: str) -> str:
        """Refund an order."""
        ran.append(f"refund {order}")
        return f"refunded {order}"

    registry.register(PythonFunction.from_callable(refund, name="refund"), None,
                      ToolRegistrationOptions(requires_approval=True))
    return registry


async def _restored(saved: dict[str, Any], tools: list[Any], model: ScriptedModel) -> tuple[Agent[Any], RunState[Any, Any]]:
    agent = Agent(name="a", model=model, tools=tools)
    return agent, await RunState.from_json(agent, saved)


async def test_a_run_state_resumed_in_another_process_with_a_store_runs_the_approved_call_once_and_logs_it(
    session_store_kind: str, session_store_location: str,
) -> None:
    """Each process opens the store itself (SQLite file, or PostgreSQL with ``$TETHER_POSTGRES_DSN``)."""
    ran: list[str] = []
    model = ScriptedModel([call("refund", {"order": "A7"}, "c1")], "finished")
    with open_store(session_store_kind, session_store_location) as store:
        tools = governed_tools(_registry(ran), context=ACME, store=store, session_id="s1")
        first = await Runner.run(Agent(name="a", model=model, tools=tools), "refund", run_config=QUIET)
        saved = first.to_state().to_json()
    with open_store(session_store_kind, session_store_location) as store:  # another process: store, registry, tools
        tools = governed_tools(_registry(ran), context=ACME, store=store, session_id="s1")
        agent, state = await _restored(saved, tools, model)
        for item in state.get_interruptions():
            state.approve(item)
        second = await Runner.run(agent, state, run_config=QUIET)
        assert second.final_output == "finished"
        assert ran == ["refund A7"] and model.outputs()["c1"] == "refunded A7"
        events = await store.events("s1")
        assert log_violations(events) == []
        assert [e.call_id for e in events if e.kind == "approval/asked"] == ["c1"]
        assert [(e.call_id, e.payload["ok"]) for e in events if e.kind == "tool/result"] == [("c1", True)]


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
async def test_a_run_state_rejected_in_another_process_never_runs_the_body(logged: bool, tmp_path: Path) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    model = ScriptedModel([call("refund", {"order": "A7"}, "c1")], "finished")
    first = await Runner.run(Agent(name="a", model=model, tools=governed_tools(_registry(ran), context=ACME, **options)),
                             "refund", run_config=QUIET)
    agent, state = await _restored(first.to_state().to_json(), governed_tools(_registry(ran), context=ACME, **options),
                                   model)
    for item in state.get_interruptions():
        state.reject(item, rejection_message="not today")
    second = await Runner.run(agent, state, run_config=QUIET)
    assert second.final_output == "finished" and ran == [] and model.outputs()["c1"] == "not today"
    if store is not None:
        assert log_violations(await store.events("s1")) == []
        store.close()


async def test_a_sticky_approval_given_in_another_process_runs_nothing_and_says_the_approval_cannot_be_bound() -> None:
    """``always_approve=True`` approves the tool, not a call: a tool list that did not ask cannot tell
    which call the approver saw, so nothing the pipeline asks approval for runs (approval_unknown)."""
    ran: list[str] = []
    model = ScriptedModel([call("refund", {"order": "A7"}, "c1")], "finished")
    first = await Runner.run(Agent(name="a", model=model, tools=governed_tools(_registry(ran), context=ACME)), "refund",
                             run_config=QUIET)
    agent, state = await _restored(first.to_state().to_json(), governed_tools(_registry(ran), context=ACME), model)
    state.approve(state.get_interruptions()[0], always_approve=True)
    await Runner.run(agent, state, run_config=QUIET)
    assert ran == []
    assert model.outputs()["c1"].startswith("Error [DENIED/approval_unknown]")


async def test_a_call_reported_approved_without_the_arguments_the_approver_saw_is_denied_approval_unknown() -> None:
    """The SDK says approved, but gives no record of the call's arguments (no ``tool_call``): the
    adapter cannot bind the approval, so the call fails closed, and says so (not approval_mismatch)."""
    ran: list[str] = []
    (tool,) = governed_tools(_registry(ran), context=ACME)
    context: ToolContext[Any] = ToolContext(context=None, tool_name="refund", tool_call_id="c9",
                                            tool_arguments='{"order": "A7"}')
    context._approvals["refund"] = _ApprovalRecord(approved=["c9"])
    assert context.is_tool_approved("refund", "c9") is True
    output = await tool.on_invoke_tool(context, '{"order": "A7"}')
    assert output.startswith("Error [DENIED/approval_unknown]") and ran == []


@pytest.mark.parametrize("logged", [False, True], ids=["no store", "session store"])
async def test_the_asked_approvals_kept_are_bounded_and_an_evicted_one_is_bound_again_never_approved_by_default(
    logged: bool, tmp_path: Path,
) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "log.sqlite3") if logged else None
    options: dict[str, Any] = {"store": store, "session_id": "s1"} if logged else {}
    adapter = GovernedAgentTools(GovernedCalls(_registry(ran), context=ACME, **options), "conversation-1")
    adapter.max_asked = 1
    model = ScriptedModel([call("refund", {"order": o}, f"c{o}") for o in ("A7", "B9", "C3")], "finished")
    agent = Agent(name="a", model=model, tools=list[Any](adapter.build(None)))
    first = await Runner.run(agent, "refund", run_config=QUIET)
    assert len(first.interruptions) == 3 and list(adapter.asked) == ["cC3"]  # the two oldest evicted
    state = first.to_state()
    for item in first.interruptions:
        if item.raw_item.call_id == "cB9":  # type: ignore[union-attr]
            state.reject(item, rejection_message="no")
        else:
            state.approve(item)
    await Runner.run(agent, state, run_config=QUIET)
    assert sorted(ran) == ["refund A7", "refund C3"] and adapter.asked == {}
    assert model.outputs()["cB9"] == "no"
    if store is not None:
        assert log_violations(await store.events("s1")) == []
        store.close()
