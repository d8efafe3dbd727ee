"""OpenAI projections against the real ``openai`` SDK's types: tools (chat and responses, strict),
allowed_tools, calls read back from SDK response objects, and results."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletionAllowedToolChoiceParam,
    ChatCompletionFunctionTool,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from openai.types.responses import FunctionTool, FunctionToolParam, Response, ToolChoiceAllowed
from openai.types.responses.response_input_param import FunctionCallOutput

from tests.support import codes, run_batch
from tests.support.projection_tools import CONTEXT, sdk_checked, trip_registry
from tether_clr import ImagePart, TextPart, ToolExecutionOutcome
from tether_clr.projections import (
    OpenAITools,
    ProjectionReport,
    calls_from_openai,
    chat_tool_messages,
    openai_allowed_tools,
    to_openai_tools,
)
from tether_clr.testing import openai_chat_reply, openai_responses_reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def test_chat_tools_have_the_chat_completions_shape() -> None:
    tools = to_openai_tools(trip_registry().assemble(CONTEXT), api="chat")
    for tool in tools:
        assert sdk_checked(ChatCompletionFunctionToolParam, tool) == tool
        assert ChatCompletionFunctionTool.model_validate(tool).function.strict is True
    assert [t["function"]["name"] for t in tools] == ["plan_trip", "weather"]


def test_responses_tools_have_the_flat_shape() -> None:
    tools = to_openai_tools(trip_registry().assemble(CONTEXT), api="responses")
    for tool in tools:
        assert sdk_checked(FunctionToolParam, tool) == tool
        assert FunctionTool.model_validate(tool).strict is True
    assert [t["name"] for t in tools] == ["plan_trip", "weather"] and "function" not in tools[0]


def test_the_projected_list_carries_the_report() -> None:
    tools = to_openai_tools(trip_registry().assemble(CONTEXT))
    assert isinstance(tools, OpenAITools) and isinstance(tools, list) and isinstance(tools.report, ProjectionReport)
    assert {(n.tool, n.keyword, n.action) for n in tools.report.notes} == {("plan_trip", "default", "dropped")}
    assert tools.report.not_strict == ()


def test_a_tool_that_cannot_be_strict_is_projected_non_strict_and_the_report_says_why() -> None:
    registry = trip_registry()
    registry.register(_constrained())
    tools = to_openai_tools(registry.seal())
    projected = {t["function"]["name"]: t["function"] for t in tools}
    assert projected["code"]["strict"] is False
    assert projected["code"]["parameters"]["properties"]["value"]["minLength"] == 2  # the schema as it is
    assert tools.report.not_strict == ("code",)
    (note,) = tools.report.for_tool("code")
    assert (note.keyword, note.path, note.action) == ("minLength", "/properties/value/minLength", "not_strict")


def _constrained() -> Any:
    class Code:
        name = "code"
        description = "A code of at least two characters."
        json_schema = {"type": "object", "properties": {"value": {"type": "string", "minLength": 2}}, "required": ["value"]}

        async def invoke(self, arguments: Any, cancellation: Any = None) -> Any:
            return arguments["value"]

    return Code()


def test_strict_false_projects_each_schema_as_it_is() -> None:
    view = trip_registry().seal()
    tools = to_openai_tools(view, strict=False)
    assert [t["function"]["parameters"] for t in tools] == [d.parameters for d in view.get_declarations()]
    assert all(t["function"]["strict"] is False for t in tools) and not tools.report


def test_every_projection_follows_the_assembly_order_and_shows_only_what_it_shows() -> None:
    registry = trip_registry()
    assert [t["function"]["name"] for t in to_openai_tools(registry.assemble(CONTEXT))] == ["plan_trip", "weather"]
    assert [t["function"]["name"] for t in to_openai_tools(registry.seal())] == ["payroll", "plan_trip", "weather"]


def test_every_projection_is_a_fresh_detached_copy() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    first = to_openai_tools(assembly, strict=False)
    first[0]["function"]["parameters"]["properties"].clear()
    assert to_openai_tools(assembly, strict=False)[0]["function"]["parameters"]["properties"]
    assert assembly.definitions[0].parameters["properties"]


def test_an_unknown_api_is_refused() -> None:
    with pytest.raises(ValueError, match="api"):
        to_openai_tools(trip_registry().seal(), api="completions")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ToolAssembly"):
        to_openai_tools([{"name": "x"}])  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["auto", "required"])
def test_allowed_tools_is_each_apis_tool_choice(mode: str) -> None:
    chat = openai_allowed_tools(["weather", "plan_trip"], mode=mode, api="chat")  # type: ignore[arg-type]
    assert sdk_checked(ChatCompletionAllowedToolChoiceParam, chat) == chat
    assert chat["allowed_tools"]["tools"] == [{"type": "function", "function": {"name": "weather"}}, {"type": "function", "function": {"name": "plan_trip"}}]
    responses = openai_allowed_tools(trip_registry().assemble(CONTEXT).names, mode=mode, api="responses")  # type: ignore[arg-type]
    assert ToolChoiceAllowed.model_validate(responses).model_dump() == responses
    assert responses == {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": "plan_trip"}, {"type": "function", "name": "weather"}]}


def test_allowed_tools_refuses_a_bare_string_and_an_unknown_mode() -> None:
    with pytest.raises(TypeError):
        openai_allowed_tools("weather")
    with pytest.raises(ValueError, match="mode"):
        openai_allowed_tools(["weather"], mode="none")  # type: ignore[arg-type]


# ------------------------------------------------------------------ calls back

def test_calls_from_a_chat_completion_message_keep_the_raw_argument_text() -> None:
    raw = '{"city":  "Oslo" , "days": 2}'
    body = openai_chat_reply(("call_1", "plan_trip", raw), ("call_2", "weather", {"city": "Rome"}))
    message = ChatCompletionMessage.model_validate(body["choices"][0]["message"])
    for source in (message, body["choices"][0]["message"], body["choices"][0]["message"]["tool_calls"]):
        calls = calls_from_openai(source)
        assert [(c.call_id, c.name, c.arguments) for c in calls] == [("call_1", "plan_trip", raw), ("call_2", "weather", '{"city": "Rome"}')]
        assert all(c.argument_error is None for c in calls)


def test_calls_from_responses_output_items_keep_the_raw_argument_text() -> None:
    body = openai_responses_reply(("call_1", "weather", '{"city":"Oslo"}'), text="checking")
    parsed = Response.model_validate(body)
    for source in (parsed, parsed.output, body["output"]):
        calls = calls_from_openai(source)
        assert [(c.call_id, c.name, c.arguments) for c in calls] == [("call_1", "weather", '{"city":"Oslo"}')]


def test_calls_from_openai_skip_what_is_not_a_function_call() -> None:
    items = [
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "message", "role": "assistant", "content": []},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "grep", "input": "x"},
    ]
    assert [c.call_id for c in calls_from_openai(items)] == ["c1"]
    assert calls_from_openai({"role": "assistant", "content": "hello", "tool_calls": None}) == []
    message = {"role": "assistant", "tool_calls": [{"id": "x", "type": "custom", "custom": {"name": "grep", "input": "x"}}]}
    assert calls_from_openai(message) == []


@pytest.mark.anyio
async def test_a_malformed_openai_function_call_ends_invalid_args_and_the_others_run() -> None:
    items = [
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": {"city": "Oslo"}},  # not text
        {"type": "function_call", "name": "weather", "arguments": '{"city": "Oslo"}'},  # no call id
        {"type": "function_call", "call_id": "c3", "name": "weather", "arguments": '{"city": "Rome"}'},
        {"type": "function_call", "call_id": "c4", "name": "weather", "arguments": '{"city": '},  # broken JSON
    ]
    calls = calls_from_openai(items)
    assert [c.call_id for c in calls] == ["c1", "invalid_call_1", "c3", "c4"]
    assert "arguments are not text" in (calls[0].argument_error or "") and "no call id" in (calls[1].argument_error or "")
    outcomes = await run_batch(trip_registry(), *calls)
    assert codes(outcomes) == ["INVALID_ARGS", "INVALID_ARGS", None, "INVALID_ARGS"]
    assert outcomes[2].value == "sunny in Rome"


# ------------------------------------------------------------------ results

def test_a_chat_result_is_the_tool_message() -> None:
    message = ToolExecutionOutcome.success("call_1", "weather", "sunny").to_openai()
    assert message == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert sdk_checked(ChatCompletionToolMessageParam, message) == message
    structured = ToolExecutionOutcome.success("call_2", "plan_trip", {"planned": "Oslo"}).to_openai("chat")
    assert structured["content"] == '{"planned":"Oslo"}'
    failed = ToolExecutionOutcome.failed("call_3", "weather", "DENIED", "not allowed").to_openai("chat")
    assert failed == {"role": "tool", "tool_call_id": "call_3", "content": "Error [DENIED]: not allowed"}


def test_a_responses_result_is_the_function_call_output_item() -> None:
    item = ToolExecutionOutcome.success("call_1", "weather", "sunny").to_openai(api="responses")
    assert item == {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    assert sdk_checked(FunctionCallOutput, item) == item


def test_images_become_the_image_parts_each_openai_api_accepts() -> None:
    outcome = ToolExecutionOutcome.success("call_1", "chart", {"ok": True}).with_content((TextPart("the chart"), ImagePart(PNG, "image/png")))
    item = outcome.to_openai("responses")
    assert sdk_checked(FunctionCallOutput, item) == item
    assert item["output"][1] == {"type": "input_image", "image_url": "data:image/png;base64," + ImagePart(PNG, "image/png").base64, "detail": "auto"}
    tool_message, user_message = chat_tool_messages([outcome])
    assert sdk_checked(ChatCompletionToolMessageParam, tool_message) == tool_message  # chat tool messages carry text only
    assert "image 1: image/png" in tool_message["content"][1]["text"]
    assert sdk_checked(ChatCompletionUserMessageParam, user_message) == user_message
    assert user_message["content"][-1] == {"type": "image_url", "image_url": {"url": ImagePart(PNG, "image/png").data_url}}


def test_chat_tool_messages_answer_every_call_in_order() -> None:
    outcomes = [ToolExecutionOutcome.success(f"c{i}", "weather", f"r{i}") for i in range(3)]
    assert chat_tool_messages(outcomes) == [o.to_openai() for o in outcomes]
