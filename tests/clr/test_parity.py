"""Parity with Microsoft.Extensions.AI's own FunctionInvokingChatClient (issue 19 §3), against the real
MEAI 10.0.1 assemblies (TETHER_MEAI_DIR; CI runs this file on Mono and on CoreCLR). Each test is a
rule the parity report keeps: every difference is reported, the deliberate ones are labelled, an
unexpected one fails ``assert_parity`` with the report as its message.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_strategies import json_values
from tether_clr.cli import ScriptError, parse_script
from tether_clr.testing.parity import (
    DELIBERATE_DIFFERENCES,
    ParityCall,
    ParityCallsError,
    ParityReport,
    assert_parity,
    parse_parity_calls,
    run_parity,
)

SUCCESSES = [
    {"call_id": "m", "name": "Multiply", "arguments": {"a": 6, "b": 7}},
    {"call_id": "s", "name": "Shout", "arguments": {"text": "hi"}},
    {"call_id": "f", "name": "Forecast", "arguments": {"city": "Paris"}},
    {"call_id": "e", "name": "Echo", "arguments": {}},
    {"call_id": "d", "name": "Schedule", "arguments": {"when": "2031-05-06T07:08:09Z"}},
    {"call_id": "p", "name": "Peek", "arguments": {"key": 4}},
    {"call_id": "b", "name": "Brochure", "arguments": {"name": "x"}},
]


def _functions(meai: dict[str, Any], *names: str) -> list[Any]:
    return [meai["functions"][name] for name in names]


def _only(report: ParityReport) -> Any:
    (comparison,) = report.comparisons
    return comparison


def test_the_fixtures_functions_answer_exactly_as_under_function_invoking_chat_client(meai: dict[str, Any]) -> None:
    names = [c["name"] for c in SUCCESSES]
    report = assert_parity(_functions(meai, *names), SUCCESSES)
    assert [(c.call.call_id, c.status) for c in report.comparisons] == [(c["call_id"], "same") for c in SUCCESSES]
    assert report.comparisons[0].meai.result == 42 and report.comparisons[0].tether.result == 42


def test_a_throwing_function_differs_only_in_its_failure_text(meai: dict[str, Any]) -> None:
    report = assert_parity(_functions(meai, "Refuse"), [{"call_id": "r", "name": "Refuse", "arguments": {"text": "x"}}])
    comparison = _only(report)
    assert comparison.category == "failure_text" and comparison.fields == ("result",)
    assert comparison.meai.result == "Error: Function failed."
    assert comparison.meai.exception == "System.InvalidOperationException: no x"
    assert comparison.tether.exception == "TOOL_ERROR: System.InvalidOperationException: no x"


def test_an_approval_required_function_fails_closed_and_is_labelled_approval(meai: dict[str, Any]) -> None:
    before = int(meai["MeaiTools"].DangerousRuns)
    report = assert_parity(_functions(meai, "Dangerous"), [{"call_id": "x", "name": "Dangerous", "arguments": {"target": "db"}}])
    comparison = _only(report)
    assert comparison.status == "deliberate: approval" and comparison.fields == ("call_id",)
    assert not comparison.meai.present and "FunctionApprovalRequestContent" in str(comparison.meai.note)
    assert str(comparison.tether.exception).startswith("DENIED: ")
    assert int(meai["MeaiTools"].DangerousRuns) == before  # neither side ran it


def test_malformed_arguments_are_a_parse_error_tether_never_runs(meai: dict[str, Any]) -> None:
    before = int(meai["Weather"].ForecastRuns)
    report = assert_parity(_functions(meai, "Forecast"), [{"call_id": "bad", "name": "Forecast", "arguments": '{"city": "Par'}])
    comparison = _only(report)
    assert comparison.category == "parse_error"
    assert str(comparison.tether.exception).startswith("INVALID_ARGS: arguments are not valid JSON")
    assert comparison.meai.exception is not None  # MEAI invoked it without arguments; binding failed
    assert int(meai["Weather"].ForecastRuns) == before


def test_unknown_argument_names_are_refused_where_meai_drops_them(meai: dict[str, Any]) -> None:
    report = assert_parity(_functions(meai, "Multiply"), [{"call_id": "u", "name": "Multiply", "arguments": {"a": 2, "b": 3, "c": 4}}])
    comparison = _only(report)
    assert comparison.category == "unknown_arguments" and comparison.meai.result == 6
    assert str(comparison.tether.exception).startswith("INVALID_ARGS: ")


def test_a_cancelled_call_gets_an_outcome_where_meai_still_invokes_the_function(meai: dict[str, Any]) -> None:
    report = assert_parity(_functions(meai, "Multiply"), [{"call_id": "c", "name": "Multiply", "arguments": {"a": 2, "b": 3}, "cancelled": True}])
    comparison = _only(report)
    assert comparison.category == "cancellation"
    assert comparison.meai.result == 6  # FunctionInvokingChatClient ran it under the cancelled token
    assert str(comparison.tether.exception).startswith("ABORTED_BEFORE_DISPATCH: ")


def test_an_unknown_tool_is_a_failure_text_difference(meai: dict[str, Any]) -> None:
    comparison = _only(assert_parity(_functions(meai, "Multiply"), [{"call_id": "n", "name": "Nope"}]))
    assert comparison.category == "failure_text" and comparison.fields == ("result", "exception")
    assert comparison.meai.result == 'Error: Requested function "Nope" not found.' and comparison.meai.exception is None
    assert str(comparison.tether.exception).startswith("UNKNOWN_TOOL: ")


CONTENT_CALL = {"call_id": "cap", "name": "Caption", "arguments": {"text": "t"}}


def test_an_unexpected_difference_fails_with_the_report_as_the_message(meai: dict[str, Any]) -> None:
    """A single TextContent result: MEAI sends the content object, tether_clr a list of parts (a real difference)."""
    with pytest.raises(AssertionError) as raised:
        assert_parity(_functions(meai, "Caption", "Multiply"), [CONTENT_CALL, SUCCESSES[0]])
    message = str(raised.value)
    assert "- cap Caption: UNEXPECTED (result)" in message and "- m Multiply: same" in message
    assert '{"$type":"text","text":"caption: t"}' in message
    assert "2 call(s), 1 differ, 1 unexpected" in message


def test_expected_differences_accept_the_named_calls_and_a_stale_expectation_fails(meai: dict[str, Any]) -> None:
    accepted = assert_parity(_functions(meai, "Caption"), [CONTENT_CALL], expected_differences={"cap": "content is a list of parts"})
    assert _only(accepted).status == "accepted"
    with pytest.raises(AssertionError, match="expected differences that did not happen: m"):
        assert_parity(_functions(meai, "Multiply"), [SUCCESSES[0]], expected_differences=["m"])
    with pytest.raises(AssertionError, match="did not happen: r"):  # a deliberate difference needs no expectation
        assert_parity(_functions(meai, "Refuse"), [{"call_id": "r", "name": "Refuse", "arguments": {"text": "x"}}], ["r"])


@pytest.mark.anyio
async def test_assert_parity_works_from_an_async_test_and_run_parity_awaits(meai: dict[str, Any]) -> None:
    report = assert_parity(_functions(meai, "Shout"), [SUCCESSES[1]])
    assert _only(report).status == "same"
    awaited = await run_parity(_functions(meai, "Shout"), [ParityCall("s", "Shout", '{"text": "hi"}')])
    assert _only(awaited).meai.result == "HI" and awaited.ok


def test_a_tools_assembly_path_is_discovered_and_its_methods_become_aifunctions(meai: dict[str, Any]) -> None:
    from tether_clr.clr import build_fixtures

    calls = [{"call_id": "a", "name": "Add", "arguments": {"a": 1, "b": 2}},
             {"call_id": "d", "name": "Delay", "arguments": {"milliseconds": 1, "label": "x"}},
             {"call_id": "u", "name": "UntilCancelled", "cancelled": True}]
    report = assert_parity(build_fixtures(), calls)
    assert [c.status for c in report.comparisons] == ["same", "same", "deliberate: cancellation"]
    waited = report.comparisons[2]  # a body that observes its token: MEAI's whole request throws
    assert not waited.meai.present and "the request threw" in str(waited.meai.note)


def test_every_deliberate_category_has_its_reason() -> None:
    assert sorted(DELIBERATE_DIFFERENCES) == ["approval", "cancellation", "failure_text", "parse_error", "unknown_arguments"]


def test_calls_keep_the_argument_text_as_the_model_wrote_it() -> None:
    calls = parse_parity_calls([{"call_id": "a", "name": "f", "arguments": {"b": 1, "a": 2}}, {"call_id": "b", "name": "f", "arguments": "{oops"},
                                {"call_id": "c", "name": "f", "cancelled": True}])
    assert calls == [ParityCall("a", "f", '{"a":2,"b":1}'), ParityCall("b", "f", "{oops"), ParityCall("c", "f", "{}", True)]


@pytest.mark.parametrize("data, message", [
    ({"call_id": "a"}, "must be a JSON list"),
    ([{"call_id": "a", "name": "f"}, {"call_id": "a", "name": "g"}], "used twice"),
    ([{"call_id": "a", "name": "f", "arguments": 3}], "arguments must be an object"),
    ([{"call_id": "a", "name": "f", "extra": 1}], "unknown keys"),
    ([{"name": "f"}], "call_id must be"),
    ([{"call_id": "a", "name": "f", "cancelled": "yes"}], "cancelled must be"),
])
def test_a_malformed_calls_list_is_refused_naming_the_entry(data: Any, message: str) -> None:
    with pytest.raises(ParityCallsError, match=message):
        parse_parity_calls(data)


@settings(max_examples=200, deadline=None)
@given(st.one_of(json_values, st.lists(st.dictionaries(st.sampled_from(["call_id", "name", "arguments", "cancelled", "x"]), json_values))))
def test_any_json_is_either_calls_or_a_parity_calls_error(data: Any) -> None:
    try:
        calls = parse_parity_calls(json.loads(json.dumps(data)))
    except ParityCallsError:
        return
    assert len({c.call_id for c in calls}) == len(calls)


def test_a_deliberate_trait_explains_only_the_outcome_its_rule_gives(meai: dict[str, Any]) -> None:
    """An approval-required call that tether_clr did not DENY, or a cancelled call it ran, is unexpected."""
    from tether_clr.clr.parity import SideResult, _compare

    asked = SideResult(False, note="FunctionApprovalRequestContent returned to the caller")
    gated = ParityCall("g", "Dangerous", '{"target": "db"}')
    denied = SideResult(True, {"message": "no"}, "DENIED: no", code="DENIED")
    failed = SideResult(True, {"message": "boom"}, "TOOL_ERROR: boom", code="TOOL_ERROR")
    dangerous = meai["functions"]["Dangerous"]
    assert _compare(gated, dangerous, asked, denied).category == "approval"
    assert _compare(gated, dangerous, asked, failed).status == "UNEXPECTED"
    cancelled = ParityCall("c", "Multiply", '{"a": 1, "b": 2}', cancelled=True)
    assert _compare(cancelled, None, SideResult(True, 2), SideResult(True, 3)).status == "UNEXPECTED"
    malformed = ParityCall("m", "Multiply", "{oops")
    assert _compare(malformed, None, SideResult(True, "Error: Function failed.", "x"), failed).status == "UNEXPECTED"


def test_an_unknown_tool_with_malformed_argument_text_is_a_failure_text_not_a_parse_error() -> None:
    """Both sides refuse the name before they read the arguments (examples/mixed.json's last call does this)."""
    from tether_clr.clr.parity import SideResult, _compare

    unknown = SideResult(True, {"message": "no tool named 'echo'"}, "UNKNOWN_TOOL: no tool named 'echo'", code="UNKNOWN_TOOL")
    not_found = SideResult(True, 'Error: Requested function "echo" not found.')
    assert _compare(ParityCall("c4", "echo", '{"text": '), None, not_found, unknown).category == "failure_text"


# ------------------------------------------------------------------------- a tether-clr run script's rows
def _as_script(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``calls`` as `tether-clr run` records them (docs/cli.md): tool rows with ``callId`` and the argument text,
    a text row (the model's answer) after every second call."""
    rows: list[dict[str, Any]] = []
    for number, call in enumerate(calls, 1):
        rows.append({"kind": "tool", "callId": call["call_id"], "name": call["name"], "arguments": json.dumps(call.get("arguments", {}))})
        if number % 2 == 0:
            rows.append({"kind": "text", "text": f"answer {number}"})
    return rows


def _verdicts(report: ParityReport) -> list[tuple[Any, ...]]:
    return [(c.call.call_id, c.call.name, c.fields, c.status, c.meai.result, c.meai.exception, c.tether.result, c.tether.exception)
            for c in report.comparisons]


def test_assert_parity_takes_a_run_scripts_rows_and_gives_the_comparison_of_the_equivalent_parity_calls(meai: dict[str, Any]) -> None:
    calls = [*SUCCESSES, {"call_id": "r", "name": "Refuse", "arguments": {"text": "x"}}, {"call_id": "n", "name": "Nope"}]
    functions = _functions(meai, *(c["name"] for c in calls if c["name"] != "Nope"))
    rows = _as_script(calls)
    assert any(row["kind"] == "text" for row in rows)
    expected = _verdicts(assert_parity(functions, calls))
    assert _verdicts(assert_parity(functions, rows)) == expected
    assert _verdicts(assert_parity(functions, parse_script(rows))) == expected  # a parsed Script is taken too
    assert [v[3] for v in expected[-2:]] == ["deliberate: failure_text", "deliberate: failure_text"]


def test_a_run_scripts_tool_rows_are_the_calls_and_its_text_rows_are_ignored() -> None:
    rows = [{"kind": "text", "text": "thinking aloud"},
            {"kind": "tool", "callId": "a", "name": "f", "arguments": "{\"x\": 1}"},
            {"kind": "tool", "callId": "b", "name": "g", "arguments": {"y": 2}},
            {"kind": "text", "text": "done"},
            {"kind": "tool", "callId": "a", "name": "h", "arguments": "{oops"}]  # an id may come back in a later step, as in run
    assert parse_parity_calls(rows) == [ParityCall("a", "f", '{"x": 1}'), ParityCall("b", "g", '{"y":2}'), ParityCall("a", "h", "{oops")]
    assert parse_parity_calls([{"kind": "tool", "callId": "c", "name": "f"}]) == [ParityCall("c", "f", "{}")]


@pytest.mark.parametrize("rows, message", [
    ([{"kind": "tool", "callId": "a", "name": "f"}, "text"], "row 2: a row is a JSON object"),
    ([{"kind": "tool", "callId": "a", "name": "f"}, {"kind": "tool", "name": "f"}], "row 2: 'callId' must be"),
    ([{"kind": "tool", "callId": "a"}], "row 1: 'name' must be"),
    ([{"kind": "tool", "callId": "a", "name": "f", "arguments": 3}], "row 1: 'arguments' must be"),
    ([{"kind": "text", "text": 3}, {"kind": "tool", "callId": "a", "name": "f"}], "row 1: 'text' must be"),
    ([{"kind": "tool", "callId": "a", "name": "f"}, {"kind": "approval", "callId": "a"}], "row 2: 'kind' must be 'tool' or 'text'"),
    ([{"kind": "tool", "callId": "a", "name": "f"}, {"kind": "tool", "callId": "a", "name": "g"}], "row 2: call id 'a' is used twice in one step"),
    ([{"kind": "tool", "callId": "a", "name": "f", "cancelled": True}], "row 1 (calls[0]): 'cancelled' is a key of the parity calls format"),
])
def test_a_malformed_run_script_row_is_refused_naming_the_row(rows: Any, message: str) -> None:
    with pytest.raises(ParityCallsError, match=re.escape(message)):
        parse_parity_calls(rows)


def test_a_list_mixing_script_rows_and_parity_calls_is_refused_naming_the_first_odd_row() -> None:
    for rows in ([{"call_id": "a", "name": "f"}, {"kind": "tool", "callId": "b", "name": "f"}],
                 [{"kind": "tool", "callId": "a", "name": "f"}, {"kind": "text", "text": "x"}, {"call_id": "b", "name": "f"}]):
        with pytest.raises(ParityCallsError, match=r"has no 'kind' while row \d is a tether-clr run script row") as raised:
            parse_parity_calls(rows)
        odd = next(i for i, row in enumerate(rows) if "kind" not in row)
        assert f"row {odd + 1} (calls[{odd}])" in str(raised.value)


def test_a_run_script_without_tool_rows_is_refused_not_an_empty_comparison() -> None:
    with pytest.raises(ParityCallsError, match="no tool rows"):
        parse_parity_calls([{"kind": "text", "text": "no calls at all"}])
    with pytest.raises(ParityCallsError, match="no tool rows"):
        assert_parity([], parse_script([{"kind": "text", "text": "no calls at all"}]))
    assert parse_parity_calls([]) == []  # parity's own format: an empty list is still no calls


_script_rows = st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["kind", "callId", "name", "arguments", "text", "call_id"]), json_values),
    st.fixed_dictionaries({"kind": st.sampled_from(["tool", "text"]), "callId": st.sampled_from(["a", "b", ""]),
                           "name": st.sampled_from(["f", ""]), "text": st.text(max_size=3)}),
    json_values,
), max_size=5)


@settings(max_examples=200, deadline=None)
@given(_script_rows)
def test_rows_with_kind_are_read_exactly_as_tether_clr_run_reads_them(rows: list[Any]) -> None:
    """Parity takes a script precisely when ``run`` does (and it has a tool row), with the same calls, in order."""
    rows = json.loads(json.dumps(rows))
    try:
        calls = parse_parity_calls(rows)
    except ParityCallsError:
        calls = None
    if not any(isinstance(row, dict) and "kind" in row for row in rows):
        return  # parity's own format, checked above
    try:
        script = parse_script(rows)
    except ScriptError:
        assert calls is None
        return
    mixed = any(isinstance(row, dict) and ("kind" not in row or "cancelled" in row) for row in rows)
    if mixed or not script.calls:
        assert calls is None
    else:
        assert calls == [ParityCall(c.call_id, c.name, c.arguments) for c in script.calls]
