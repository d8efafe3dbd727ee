"""StepLoop: the model-tools loop as a library component (assemble, run a step, record, continue)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import Approver
from tether_clr import (
    ApprovalResult,
    PythonFunction,
    RequestContext,
    SqliteSessionStore,
    StepLoop,
    ToolCall,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)

pytestmark = pytest.mark.anyio

CTX = RequestContext("acme", "alice", frozenset())


def registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda text: text.upper(), name="shout"))
    registry.register(PythonFunction.from_callable(lambda path: f"deleted {path}", name="delete"), None,
                      ToolRegistrationOptions(requires_approval=True))
    registry.approval = Approver(ApprovalResult.DEFERRED)
    return registry


async def test_a_loop_numbers_and_records_each_step_of_a_turn_against_a_fresh_assembly(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        loop = StepLoop(registry(), store, "s1", CTX)
        assert [d.name for d in loop.assemble().definitions] == ["delete", "shout"]
        turn = await loop.begin_turn({"note": 1})
        first = await loop.run_step([ToolCall("c1", "shout", '{"text": "hi"}')])
        second = await loop.run_step([ToolCall("c1", "shout", '{"text": "yo"}'), ToolCall("c2", "ghost", "{}")])
        await loop.end_turn()
        assert (first.turn, first.step, [o.value for o in first.outcomes]) == (turn, 1, ["HI"])
        assert (second.step, second.outcomes[0].value, str(second.outcomes[1].failure.code)) == (2, "YO", "UNKNOWN_TOOL")
        events = await store.events("s1")
        assert log_violations(events) == []
        assert events[0].payload == {"note": 1}


async def test_a_suspended_step_stops_the_loop_until_it_is_resumed(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        loop = StepLoop(registry(), store, "s1", CTX)
        await loop.begin_turn()
        parked = await loop.run_step([ToolCall("c1", "shout", '{"text": "a"}'), ToolCall("c2", "delete", '{"path": "/x"}')])
        assert parked.suspended is not None and [p.call_id for p in parked.suspended.pending] == ["c2"]
        assert [o.value for o in parked.outcomes] == ["A"]
        with pytest.raises(RuntimeError, match="suspended"):
            await loop.run_step([ToolCall("c3", "shout", '{"text": "b"}')])
        with pytest.raises(ValueError):  # a decision for a call that is not parked: the loop stays suspended
            await loop.resume({"c9": ApprovalResult.APPROVED})
        assert loop.suspended is parked
        resumed = await loop.resume({"c2": ApprovalResult.APPROVED})
        assert (resumed.step, [o.value for o in resumed.outcomes], resumed.suspended) == (1, ["A", "deleted /x"], None)
        after = await loop.run_step([ToolCall("c3", "shout", '{"text": "b"}')])
        await loop.end_turn()
        assert after.step == 2 and log_violations(await store.events("s1")) == []


async def test_a_step_parked_by_one_loop_is_resumed_by_another_by_its_numbers(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        first = StepLoop(registry(), store, "s1", CTX)
        turn = await first.begin_turn()
        parked = await first.run_step([ToolCall("c1", "delete", '{"path": "/x"}')])
        second = StepLoop(registry(), store, "s1", CTX)
        with pytest.raises(RuntimeError, match="no step of this loop"):
            await second.resume({"c1": ApprovalResult.REJECTED})
        result = await second.resume({"c1": ApprovalResult.REJECTED}, suspended_at=(parked.turn, parked.step))
        assert str(result.outcomes[0].failure.code) == "DENIED"
        await second.end_turn()
        assert turn == parked.turn and log_violations(await store.events("s1")) == []


async def test_a_step_outside_a_turn_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        loop = StepLoop(registry(), store, "s1", CTX)
        with pytest.raises(RuntimeError, match="begin_turn"):
            await loop.run_step([ToolCall("c1", "shout", '{"text": "a"}')])
        assert await store.events("s1") == []
