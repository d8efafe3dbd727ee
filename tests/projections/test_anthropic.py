"""Anthropic projections against the real ``anthropic`` SDK's types: tools, tool_use blocks read back, tool_result blocks."""

from __future__ import annotations

import pytest
from anthropic.types import ImageBlockParam, Message, TextBlockParam, ToolParam, ToolUseBlock

from tests.support import codes, run_batch
from tests.support.projection_tools import CONTEXT, sdk_checked, trip_registry
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome, canonical_json
from tether_clr.projections import calls_from_anthropic, to_anthropic_tools, tool_results_message
from tether_clr.testing import anthropic_reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 8


def test_anthropic_tools_have_the_tool_param_shape_in_assembly_order() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    tools = to_anthropic_tools(assembly)
    for tool in tools:
        assert sdk_checked(ToolParam, tool) == tool
    assert [t["name"] for t in tools] == ["plan_trip", "weather"]
    assert [t["input_schema"] for t in tools] == [d.parameters for d in assembly.definitions]
    tools[0]["input_schema"].clear()
    assert to_anthropic_tools(assembly)[0]["input_schema"]  # fresh copies


def test_calls_from_anthropic_read_tool_use_blocks_of_a_real_message() -> None:
    body = anthropic_reply(("toolu_1", "weather", {"city": "Oslo"}), ("toolu_2", "plan_trip", {"days": 2, "city": "Rome"}), text="Let me look.")
    message = Message.model_validate(body)
    assert isinstance(message.content[1], ToolUseBlock)
    for source in (message, message.content, body["content"], body):
        calls = calls_from_anthropic(source)
        assert [(c.call_id, c.name) for c in calls] == [("toolu_1", "weather"), ("toolu_2", "plan_trip")]
        assert calls[1].arguments == canonical_json({"days": 2, "city": "Rome"}) == '{"city":"Rome","days":2}'


@pytest.mark.anyio
async def test_a_malformed_tool_use_block_ends_invalid_args_and_the_others_run() -> None:
    blocks = [
        {"type": "tool_use", "id": "t1", "name": "weather", "input": "Oslo"},  # input not an object
        {"type": "text", "text": "and"},
        {"type": "tool_use", "id": "t2", "name": "weather", "input": {"city": "Rome"}},
        {"type": "tool_use", "name": "weather", "input": {"city": "Oslo"}},  # no id
    ]
    calls = calls_from_anthropic(blocks)
    assert [c.call_id for c in calls] == ["t1", "t2", "invalid_call_2"]
    outcomes = await run_batch(trip_registry(), *calls)
    assert codes(outcomes) == ["INVALID_ARGS", None, "INVALID_ARGS"]


def _check_tool_result(block: dict[str, object]) -> None:
    """The tool_result block checked with the SDK's block types. TypeAdapter(ToolResultBlockParam) over list
    content is known to crash pydantic-core, so each content block is checked with its own param type."""
    assert set(block) <= {"type", "tool_use_id", "content", "is_error"} and block["type"] == "tool_result"
    assert isinstance(block["tool_use_id"], str) and isinstance(block["content"], list)
    for part in block["content"]:
        kind = TextBlockParam if part["type"] == "text" else ImageBlockParam
        assert sdk_checked(kind, part) == part


def test_an_anthropic_result_is_a_tool_result_block_with_text_and_images() -> None:
    outcome = ToolExecutionOutcome.success("toolu_1", "chart", 3).with_content((TextPart("a chart"), ImagePart(PNG, "image/png")))
    block = outcome.to_anthropic()
    _check_tool_result(block)
    assert block == {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
        {"type": "text", "text": "a chart"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ImagePart(PNG, "image/png").base64}},
    ]}


def test_an_anthropic_failure_has_is_error() -> None:
    block = ToolExecutionOutcome.failed("toolu_1", "weather", "TOOL_ERROR", "ValueError: no city").to_anthropic()
    _check_tool_result(block)
    assert block["is_error"] is True and block["content"] == [{"type": "text", "text": "ValueError: no city"}]
    assert "is_error" not in ToolExecutionOutcome.success("toolu_2", "weather", "ok").to_anthropic()


def test_tool_results_message_answers_every_call_in_order() -> None:
    outcomes = [ToolExecutionOutcome.success("t1", "weather", "a"), ToolExecutionOutcome.failed("t2", "weather", "DENIED", "no")]
    message = tool_results_message(outcomes)
    assert message["role"] == "user" and [b["tool_use_id"] for b in message["content"]] == ["t1", "t2"]
