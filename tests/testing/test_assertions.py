"""The kit's assertions pass on what is right, and fail on what is wrong with a message that shows the log."""

from __future__ import annotations

import pytest

from tether_clr import SessionStore, ToolExecutionOutcome
from tether_clr.testing import (
    KitRegistry,
    ProbeTool,
    RecordingSink,
    assert_body_not_run,
    assert_log_sound,
    assert_model_order,
    assert_outcomes,
    events,
    replay,
    tool_call,
)

pytestmark = pytest.mark.anyio

ROWS = [
    {"kind": "tool", "callId": "c1", "name": "echo", "arguments": {"text": "hi"}},
    {"kind": "tool", "callId": "c2", "name": "missing", "arguments": {}},
    {"kind": "text", "text": "done"},
]


def echo(text: str) -> str:
    return text


async def test_assert_outcomes_accepts_codes_reasons_and_success() -> None:
    outcomes = [
        ToolExecutionOutcome.success("c1", "t", 1),
        ToolExecutionOutcome.failed("c2", "t", "UNAVAILABLE", "deferred", reason="approval_deferred"),
    ]
    assert_outcomes(outcomes, {"c1": None, "c2": "UNAVAILABLE"})
    assert_outcomes(outcomes, {"c1": None, "c2": "UNAVAILABLE/approval_deferred"})
    assert_outcomes(outcomes, {"c1": None, "c2": ("UNAVAILABLE", "approval_deferred")})
    with pytest.raises(AssertionError, match=r"✗ c2: expected UNAVAILABLE \[timeout\], got UNAVAILABLE \[approval_deferred\]"):
        assert_outcomes(outcomes, {"c1": None, "c2": ("UNAVAILABLE", "timeout")})


async def test_assert_outcomes_fails_on_a_missing_or_an_unexpected_call_and_shows_the_log(session_store: SessionStore) -> None:
    run = await replay(ROWS, tools=[echo], store=session_store)
    with pytest.raises(AssertionError) as failure:
        assert_outcomes(run, {"c1": None, "c3": None})
    message = str(failure.value)
    assert "✗ c3: expected ok, got (no outcome)" in message
    assert "✗ c2: expected (no outcome expected), got UNKNOWN_TOOL" in message
    assert "the session log:" in message and "tool/result" in message and "┃ seq" in message  # the log show table


async def test_assert_outcomes_refuses_repeated_call_ids() -> None:
    twice = [ToolExecutionOutcome.success("c1", "t", 1), ToolExecutionOutcome.success("c1", "t", 2)]
    with pytest.raises(AssertionError, match="several outcomes"):
        assert_outcomes(twice, {"c1": None})


async def test_assert_log_sound_passes_a_closed_log_and_fails_an_open_turn_showing_it(session_store: SessionStore) -> None:
    run = await replay(ROWS, tools=[echo], store=session_store)
    found = await assert_log_sound(session_store, run.session_id)
    assert [e.kind for e in found][-1] == "turn/end"
    await session_store.begin_turn("open")
    await assert_log_sound(session_store, "open", open_ok=True)
    with pytest.raises(AssertionError, match=r"(?s)is not sound.*turn 1 .*the session log:.*turn/start"):
        await assert_log_sound(session_store, "open")
    with pytest.raises(AssertionError, match="no events"):
        await assert_log_sound(session_store, "nobody")


async def test_events_filters_by_kind_and_call_id_and_refuses_an_unknown_kind(session_store: SessionStore) -> None:
    run = await replay(ROWS, tools=[echo], store=session_store)
    results = await events(session_store, run.session_id, kind="tool/result")
    assert [(e.call_id, e.payload["ok"]) for e in results] == [("c1", True), ("c2", False)]
    assert [e.kind for e in await events(session_store, run.session_id, call_id="c2")] == ["tool/call", "tool/result"]
    assert len(await events(session_store, run.session_id, kind=("turn/start", "turn/end"))) == 2
    with pytest.raises(ValueError, match="unknown event kind"):
        await events(session_store, run.session_id, kind="tool/results")


async def test_assert_body_not_run_names_the_calls_that_ran(tether_registry: KitRegistry, recording_sink: RecordingSink) -> None:
    probe = ProbeTool("delete")
    assert_body_not_run(probe)
    tether_registry.add(probe)
    await tether_registry.run([tool_call("c1", "delete", {"path": "/"})], sink=recording_sink)
    with pytest.raises(AssertionError, match=r"(?s)ran 1 time\(s\), expected never:\n  #0 \{'path': '/'\} \(returned\).*timeline.*call_declared c1"):
        assert_body_not_run(probe, log=recording_sink)


async def test_assert_model_order_reads_a_sink_a_log_or_outcomes(
    tether_registry: KitRegistry, recording_sink: RecordingSink, session_store: SessionStore
) -> None:
    tether_registry.add(ProbeTool("echo", safe=True))
    calls = [tool_call("c1", "echo"), tool_call("c2", "echo")]
    outcomes = await tether_registry.run(calls, sink=recording_sink)
    assert_model_order(calls, recording_sink)
    assert_model_order(["c1", "c2"], outcomes)
    with pytest.raises(AssertionError, match=r"(?s)not in the model's order \['c2', 'c1'\].*declared: \['c1', 'c2'\].*timeline"):
        assert_model_order(["c2", "c1"], recording_sink)
    run = await replay(ROWS, tools=[echo], store=session_store)
    assert_model_order(["c1", "c2"], run)
    with pytest.raises(AssertionError, match=r"(?s)tool/call: \['c1', 'c2'\].*the session log"):
        assert_model_order(["c1"], run.events)
