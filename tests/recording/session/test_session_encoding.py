"""The session log's payload encoders: the fast paths write exactly the text the dict path writes.

``call_payload``, ``result_payload`` and ``proposal_text`` assemble the usual payloads from JSON strings
around fixed keys instead of building and dumping a dict per event; the log's bytes must not depend on
which path wrote them (what resume, repair and verify read back is the same text either way). Nor on how a
store sends them: PostgreSQL packs each column of a commit in one text, or sends arrays when a text holds
its separators.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.session_stores import new_session
from tether_clr.recording.session.encoding import (
    PendingEvent,
    call_payload,
    dumps,
    proposal_entry,
    proposal_text,
    result_payload,
)
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes

_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=12)  # any code point, lone surrogates too


def _dict_call_payload(position: int, call: ToolCall) -> str:
    return dumps({"index": position, "name": call.name, "arguments": call.arguments, "parent_call_id": call.parent_call_id})


@settings(max_examples=200, deadline=None)
@given(position=st.integers(0, 10_000), call_id=_TEXT, name=_TEXT, arguments=_TEXT, parent=st.none() | _TEXT)
def test_a_call_payload_is_the_dict_paths_text(position: int, call_id: str, name: str, arguments: str, parent: str | None) -> None:
    call = ToolCall(call_id, name, arguments, parent_call_id=parent)
    assert call_payload(position, call) == _dict_call_payload(position, call)


@settings(max_examples=100, deadline=None)
@given(calls=st.lists(st.tuples(_TEXT, _TEXT, _TEXT, st.none() | _TEXT), max_size=5))
def test_a_proposal_is_the_dict_paths_text(calls: list[tuple[str, str, str, str | None]]) -> None:
    proposed = [ToolCall(call_id, name, arguments, parent_call_id=parent) for call_id, name, arguments, parent in calls]
    proposed.append(ToolCall("bad", "echo", "{not json", argument_error="not JSON"))  # the dict path's own case
    expected = dumps({"calls": [proposal_entry(index, call) for index, call in enumerate(proposed)]})
    assert proposal_text(proposed) == expected


@settings(max_examples=100, deadline=None)
@given(position=st.integers(0, 10_000), name=_TEXT, value=st.none() | _TEXT | st.integers())
def test_a_successful_result_payload_is_the_dict_paths_text(position: int, name: str, value: object) -> None:
    outcome = ToolExecutionOutcome.success("call_0", name, value)
    expected = dumps({"index": position, "name": outcome.name, "ok": True})[:-1] + ',"value":' + outcome.value_json + "}"
    assert result_payload(position, outcome) == expected


def test_a_failed_or_retried_result_keeps_its_fields() -> None:
    failed = ToolExecutionOutcome.failed("call_0", "echo", ToolFailureCodes.TOOL_ERROR, "boom")
    assert result_payload(2, failed).startswith('{"index":2,"name":"echo","ok":false,"code":"TOOL_ERROR"')
    retried = ToolExecutionOutcome.success("call_0", "echo", 1).with_attempts(3)
    assert result_payload(2, retried) == '{"index":2,"name":"echo","ok":true,"attempts":3,"value":1}'


@pytest.mark.parametrize(
    "call_ids",
    [
        pytest.param(["c0", None, "", "c3"], id="plain-null-and-empty-ids"),
        pytest.param(["a\x1eb", "c\x1fd"], id="ids-holding-the-separators"),
        pytest.param([""], id="one-empty-id"),
        pytest.param([None], id="one-row-no-id"),
    ],
)
@pytest.mark.anyio
async def test_every_column_of_a_commit_reads_back_as_written_whatever_its_texts_hold(
    store: SqlSessionStore, call_ids: list[str | None]
) -> None:
    """PostgreSQL sends a commit's columns packed in one text each, or as arrays when a text holds a
    separator: either way each row, NULLs and empty texts included, is stored as written, in order."""
    session = new_session()
    turn = await store.begin_turn(session)
    rows = [
        PendingEvent(turn, None if index % 2 else 7, "tool/attempt", call_id, None if index % 3 else index, f'{{"n":{index}}}')
        for index, call_id in enumerate(call_ids)
    ]
    await store.append(session, "writer", rows, first=True, release=True)
    events = [event for event in await store.events(session) if event.kind == "tool/attempt"]
    assert [(e.turn, e.step, e.call_id, e.payload) for e in events] == [
        (row.turn, row.step, row.call_id, {"n": index}) for index, row in enumerate(rows)
    ]
    with store._write() as execute:  # the position column, which the unique indexes and the step checks read
        positions = execute("SELECT position FROM session_events WHERE session_id = ? AND kind = ? ORDER BY seq", (session, "tool/attempt"))
    assert [position for (position,) in positions] == [row.position for row in rows]
