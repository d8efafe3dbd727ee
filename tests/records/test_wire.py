"""An outcome's wire forms (tether_clr.records.wire), without any SDK: each provider's result shape,
built fresh on every call. The SDKs' own checks of the same shapes are in tests/projections/."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.support.json_strategies import json_values
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome

GIF = ImagePart(b"GIF89a", "image/gif")


def test_every_wire_form_of_a_success_shows_its_default_content() -> None:
    outcome = ToolExecutionOutcome.success("c1", "t", [1, 2])
    assert outcome.to_openai() == {"role": "tool", "tool_call_id": "c1", "content": "[1,2]"}
    assert outcome.to_openai("responses") == {"type": "function_call_output", "call_id": "c1", "output": "[1,2]"}
    assert outcome.to_anthropic() == {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "[1,2]"}]}
    assert outcome.to_mcp() == {"content": [{"type": "text", "text": "[1,2]"}], "structuredContent": {"result": [1, 2]}, "isError": False}


def test_every_wire_form_of_a_failure_says_it_failed() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "BLOCKED", "blocked by policy", "deny_rule")
    assert outcome.to_openai()["content"] == "Error [BLOCKED/deny_rule]: blocked by policy"
    assert outcome.to_openai("responses")["output"] == "Error [BLOCKED/deny_rule]: blocked by policy"
    plain = ToolExecutionOutcome.failed("c1", "t", "BLOCKED", "blocked by policy")
    assert plain.to_openai()["content"] == "Error [BLOCKED]: blocked by policy"  # no reason: the code alone
    assert outcome.to_anthropic()["is_error"] is True
    mcp = outcome.to_mcp()
    assert mcp["isError"] is True and mcp["structuredContent"] == {"code": "BLOCKED", "reason": "deny_rule", "message": "blocked by policy"}


def test_wire_forms_are_fresh_each_time() -> None:
    outcome = ToolExecutionOutcome.success("c1", "t", {"a": {"b": 1}}).with_content((TextPart("x"), GIF))
    for form in (outcome.to_openai, outcome.to_anthropic, outcome.to_mcp):
        first = form()
        first.clear()
        assert form() != first
    outcome.to_mcp()["structuredContent"]["a"]["b"] = 2
    assert outcome.value == {"a": {"b": 1}} and outcome.to_mcp()["structuredContent"] == {"a": {"b": 1}}


def test_only_chat_and_responses_are_openai_apis() -> None:
    with pytest.raises(ValueError, match="api"):
        ToolExecutionOutcome.success("c1", "t", 1).to_openai("assistants")  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_the_mcp_form_of_a_success_is_its_content_and_value_read_once(value: object) -> None:
    """``to_mcp`` reads a plain success's value once; what it answers is what the parts and the value say."""
    from tether_clr.records import wire

    try:
        outcome = ToolExecutionOutcome.success("c1", "t", value)
    except (TypeError, ValueError):
        return  # not a value an outcome holds
    try:
        expected = wire.mcp_call_tool_result(outcome.content, outcome.value, None)
    except ValueError:  # text no wire format carries: refused the same way
        with pytest.raises(ValueError):
            outcome.to_mcp()
        return
    assert outcome.to_mcp() == expected
