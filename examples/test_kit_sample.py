"""A sample of the test kit (tether_clr.testing): every fixture and helper, under asyncio and trio.

Run it with ``pytest examples/test_kit_sample.py`` wherever ``tether_clr[testing]`` is installed:
the fixtures come from the kit's pytest plugin, nothing from a conftest. docs/testing.md walks
through it; tests/testing/test_kit_loading.py runs it in CI and counts its passes, and the wheel
smoke test (./tasks.sh test) runs it from an installed ``tether_clr[testing]`` wheel.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from examples.echo_tools import TOOLS
from tether_clr import ApprovalResult, CancellationSource, RequestContext, SessionStore, StepLoop
from tether_clr.testing import (
    KitRegistry,
    ProbeTool,
    RecordingSink,
    ScriptedApprovals,
    assert_body_not_run,
    assert_log_sound,
    assert_model_order,
    assert_outcomes,
    events,
    replay,
    tool_call,
)

pytestmark = pytest.mark.anyio

ECHO_SCRIPT = Path(__file__).with_name("echo.json")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_rejected_call_never_runs_and_the_sink_hears_everything_in_model_order(
    tether_registry: KitRegistry, recording_sink: RecordingSink, scripted_approvals: ScriptedApprovals
) -> None:
    read = ProbeTool("read", safe=True)
    delete = ProbeTool("delete", requires_approval=True)
    tether_registry.add(read)
    tether_registry.add(delete)
    tether_registry.registry.approval = scripted_approvals.script({"delete": "rejected"})

    calls = [tool_call("c1", "read", {"path": "a.txt"}), tool_call("c2", "delete", {"path": "a.txt"})]
    outcomes = await tether_registry.run(calls, sink=recording_sink)

    assert_outcomes(outcomes, {"c1": None, "c2": "DENIED"}, log=recording_sink)
    assert_body_not_run(delete, log=recording_sink)
    assert_model_order(calls, recording_sink)
    assert read.arguments == [{"path": "a.txt"}]
    assert scripted_approvals.asked == ["c2"]
    assert recording_sink.lines("batch_started", "call_declared", "approval_asked", "approval_decided",
                                "outcome_ready", "batch_finished") == [
        "batch_started c1 c2",
        "call_declared c1",
        "outcome_ready c1 ok",
        "call_declared c2",
        "approval_asked c2",
        "approval_decided c2 rejected",
        "outcome_ready c2 DENIED",
        "batch_finished",
    ]


async def test_a_gate_holds_a_body_until_the_batch_is_cancelled(tether_registry: KitRegistry) -> None:
    slow = ProbeTool("slow", gated=True)
    tether_registry.add(slow)
    source = CancellationSource()
    done: list[object] = []

    async def run() -> None:
        done.append(await tether_registry.run([tool_call("c1", "slow"), tool_call("c2", "slow")], cancellation=source.token))

    with anyio.fail_after(10):  # a body that never starts fails the test instead of hanging it
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await slow.wait_started(1)  # c1's body is inside, held by the gate
            source.cancel()

    assert_outcomes(done[0], {"c1": "ABORTED", "c2": "ABORTED_BEFORE_DISPATCH"})
    assert slow.ran == 1 and slow.calls[0].cancelled


async def test_a_deferred_approval_parks_the_call_in_the_log_and_runs_it_once_approved(
    tether_registry: KitRegistry, session_store: SessionStore, scripted_approvals: ScriptedApprovals
) -> None:
    delete = ProbeTool("delete", requires_approval=True)
    tether_registry.add(delete)
    tether_registry.registry.approval = scripted_approvals.script(["deferred"])
    context = RequestContext("acme", "alice")
    loop = StepLoop(tether_registry.registry, session_store, "s1", context, scope=tether_registry.scope)

    await loop.begin_turn()
    step = await loop.run_step([tool_call("c1", "delete", {"path": "a.txt"})])
    assert step.suspended is not None and step.suspended.pending[0].call_id == "c1"
    assert_body_not_run(delete)

    step = await loop.resume({"c1": ApprovalResult.APPROVED})
    await loop.end_turn()

    assert_outcomes(step, {"c1": None})
    assert delete.arguments == [{"path": "a.txt"}]
    logged = await assert_log_sound(session_store, "s1")
    assert_model_order(["c1"], logged)
    decided = await events(session_store, "s1", kind="approval/decided", call_id="c1")
    assert [event.payload["decision"] for event in decided] == ["deferred", "approved"]


async def test_a_script_replays_through_the_run_command_into_the_store(session_store: SessionStore) -> None:
    run = await replay(ECHO_SCRIPT, tools=TOOLS, store=session_store, approve="deny")

    assert_outcomes(run, {"c1": None, "c2": None})
    assert [outcome.value for outcome in run.outcomes] == ["ping", "PONG"]
    assert "model: done" in run.output
    await assert_log_sound(session_store, run.session_id)
    assert len(await events(session_store, run.session_id, kind="tool/result")) == 2
