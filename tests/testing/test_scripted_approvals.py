"""Scripted approvals: answers by call id, by tool name, or in order; every question recorded; fail closed otherwise."""

from __future__ import annotations

import pytest

from tether_clr import ApprovalGrant, ApprovalResult, GrantScope, RequestContext, SessionStore, StepLoop
from tether_clr.testing import ANSWER_WORDS, KitRegistry, ProbeTool, ScriptedApprovals, assert_body_not_run, assert_outcomes, events, tool_call

pytestmark = pytest.mark.anyio


def _gated_tools(kit: KitRegistry) -> tuple[ProbeTool, ProbeTool]:
    delete, send = ProbeTool("delete", requires_approval=True), ProbeTool("send", requires_approval=True)
    kit.add(delete)
    kit.add(send)
    return delete, send


async def test_a_call_id_answer_wins_over_the_tool_name_and_every_question_is_recorded(
    tether_registry: KitRegistry, scripted_approvals: ScriptedApprovals
) -> None:
    delete, _ = _gated_tools(tether_registry)
    tether_registry.registry.approval = scripted_approvals.script({"c2": "approved", "delete": "rejected", "send": "unavailable"})
    calls = [tool_call("c1", "delete", {"p": 1}), tool_call("c2", "delete", {"p": 2}), tool_call("c3", "send", {})]
    outcomes = await tether_registry.run(calls)
    assert_outcomes(outcomes, {"c1": "DENIED", "c2": None, "c3": "UNAVAILABLE"})
    assert delete.arguments == [{"p": 2}]
    assert scripted_approvals.asked == ["c1", "c2", "c3"]
    first = scripted_approvals.questions[0]
    assert (first.name, first.arguments, first.answer, first.scripted) == ("delete", {"p": 1}, ApprovalResult.REJECTED, True)
    assert first.reason == "tool 'delete' requires approval"


async def test_a_sequence_answers_in_order_and_an_unscripted_question_is_rejected(tether_registry: KitRegistry) -> None:
    delete, _ = _gated_tools(tether_registry)
    approvals = ScriptedApprovals(["approved"])
    tether_registry.registry.approval = approvals
    outcomes = await tether_registry.run([tool_call("c1", "delete"), tool_call("c2", "delete")])
    assert_outcomes(outcomes, {"c1": None, "c2": "DENIED"})
    assert [q.call_id for q in approvals.unscripted()] == ["c2"] and approvals.remaining == 0
    assert delete.ran == 1


async def test_deferred_without_a_session_sink_fails_closed(tether_registry: KitRegistry) -> None:
    delete, _ = _gated_tools(tether_registry)
    tether_registry.registry.approval = ScriptedApprovals({"delete": "deferred"})
    outcomes = await tether_registry.run([tool_call("c1", "delete")])
    assert_outcomes(outcomes, {"c1": "UNAVAILABLE/approval_deferred"})
    assert_body_not_run(delete)


async def test_always_is_remembered_in_the_session_store_so_the_next_call_is_not_asked(
    tether_registry: KitRegistry, session_store: SessionStore, scripted_approvals: ScriptedApprovals
) -> None:
    delete, _ = _gated_tools(tether_registry)
    tether_registry.registry.approval = scripted_approvals.script(["always"])
    loop = StepLoop(tether_registry.registry, session_store, "s1", RequestContext("acme", "alice"), scope=tether_registry.scope)
    await loop.begin_turn()
    first = await loop.run_step([tool_call("c1", "delete", {"p": 1})])
    second = await loop.run_step([tool_call("c2", "delete", {"p": 2})])
    await loop.end_turn()
    assert_outcomes(first, {"c1": None})
    assert_outcomes(second, {"c2": None})
    assert scripted_approvals.asked == ["c1"] and delete.ran == 2
    assert len(await events(session_store, "s1", kind="approval/grant")) == 1


def test_the_words_and_grants_a_script_may_use() -> None:
    assert ANSWER_WORDS["always"] is ApprovalResult.APPROVED_ALWAYS
    assert ANSWER_WORDS["never"] is ApprovalResult.REJECTED_ALWAYS
    assert ANSWER_WORDS["always_for_principal"] == ApprovalGrant.approve(GrantScope.PRINCIPAL)
    assert ANSWER_WORDS["never_for_principal"] == ApprovalGrant.reject(GrantScope.PRINCIPAL)
    ScriptedApprovals({"c1": ApprovalGrant.reject(GrantScope.PRINCIPAL), "c2": ApprovalResult.APPROVED})  # accepted as they are
    with pytest.raises(ValueError, match="not an approval answer"):
        ScriptedApprovals({"c1": "maybe"})
    with pytest.raises(TypeError):
        ScriptedApprovals("approved")
