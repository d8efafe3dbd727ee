"""The result helpers as each provider accepts them: no empty text block anywhere (Anthropic refuses one),
failures marked on the APIs without an error flag, and a batch's additional contexts after the results.

Every shape is checked with the SDKs' own request types; the round trips go
through the real clients to a scripted endpoint that refuses what the APIs
refuse (an empty text block, a context before a result). Under asyncio and trio.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam, ToolResultBlockParam
from mcp.types import CallToolResult
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam
from openai.types.responses import ResponseInputItemParam
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tests.support import BATCH_TIMEOUT
from tests.support.projection_tools import sdk_checked
from tether_clr.testing import ScriptedEndpoint, anthropic_reply, openai_chat_reply, openai_responses_reply
from tether_clr import (
    BatchOutcomes,
    ImagePart,
    PythonFunction,
    RequestContext,
    TextPart,
    ToolExecution,
    ToolExecutionOutcome,
    ToolPostDecision,
    ToolRegistry,
)
from tether_clr.projections import (
    calls_from_anthropic,
    calls_from_openai,
    chat_tool_messages,
    responses_input_items,
    to_anthropic_tools,
    to_call_tool_result,
    to_openai_tools,
    tool_results_message,
)

GIF = ImagePart(b"GIF89a", "image/gif")
EMPTY_RESULTS = [
    ToolExecutionOutcome.success("c1", "t", ""),
    ToolExecutionOutcome.success("c2", "t", "x").with_content((TextPart(""),)),
    ToolExecutionOutcome.success("c3", "t", "x").with_content((TextPart(""), TextPart("kept"), TextPart(""))),
    ToolExecutionOutcome.success("c4", "t", "x").with_content((TextPart(""), GIF)),
    ToolExecutionOutcome.failed("c5", "t", "TOOL_ERROR", ""),
]


def _text_blocks(value: Any) -> list[str]:
    """Every ``text`` of a block of type text or input_text under ``value``."""
    found: list[str] = []
    if isinstance(value, dict):
        if value.get("type") in ("text", "input_text") and "text" in value:
            found.append(value["text"])
        for item in value.values():
            found += _text_blocks(item)
    elif isinstance(value, list):
        for item in value:
            found += _text_blocks(item)
    return found


def _refuse_empty_text_blocks(body: dict[str, Any]) -> None:
    """What Anthropic answers 400 to: ``text content blocks must be non-empty``; and a failure's tool_result without content."""
    assert all(text for text in _text_blocks(body)), "text content blocks must be non-empty"
    for message in body.get("messages", ()):
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result" and block.get("is_error"):
                assert block.get("content"), "content cannot be empty if is_error is true"


# ------------------------------------------------------------------ item 2: no empty text blocks
@pytest.mark.parametrize("outcome", EMPTY_RESULTS, ids=[o.call_id for o in EMPTY_RESULTS])
def test_an_empty_result_has_no_empty_text_block_in_any_provider_form(outcome: ToolExecutionOutcome) -> None:
    anthropic = outcome.to_anthropic()
    assert sdk_checked(ToolResultBlockParam, anthropic) == anthropic
    assert all(_text_blocks(anthropic)) and (anthropic.get("content") or not outcome.is_error)
    chat = outcome.to_openai("chat")
    assert sdk_checked(ChatCompletionToolMessageParam, chat) == chat and all(_text_blocks(chat))
    responses = outcome.to_openai("responses")
    assert sdk_checked(FunctionCallOutput, responses) == responses and all(_text_blocks(responses))
    CallToolResult.model_validate(outcome.to_mcp())  # MCP's text content may be empty: kept as it is


def test_an_empty_success_is_a_tool_result_without_content_and_an_empty_string_for_openai() -> None:
    outcome = ToolExecutionOutcome.success("c1", "t", "")
    assert outcome.to_anthropic() == {"type": "tool_result", "tool_use_id": "c1"}
    assert outcome.to_openai() == {"role": "tool", "tool_call_id": "c1", "content": ""}
    assert outcome.to_openai("responses") == {"type": "function_call_output", "call_id": "c1", "output": ""}


def test_an_empty_failure_still_says_its_code_to_anthropic() -> None:
    block = ToolExecutionOutcome.failed("c5", "t", "TOOL_ERROR", "").to_anthropic()
    assert block == {"type": "tool_result", "tool_use_id": "c5", "content": [{"type": "text", "text": "Error [TOOL_ERROR]"}], "is_error": True}


def test_empty_text_parts_are_left_out_between_others() -> None:
    outcome = EMPTY_RESULTS[2]
    assert outcome.to_anthropic()["content"] == [{"type": "text", "text": "kept"}]
    assert outcome.to_openai()["content"] == "kept"
    assert outcome.to_openai("responses")["output"] == "kept"


# ------------------------------------------------------------------ item 8: failures marked as failures
def test_a_failure_on_chat_and_responses_starts_with_its_code() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "DENIED", "not allowed")
    assert outcome.to_openai()["content"] == "Error [DENIED]: not allowed"
    assert outcome.to_openai("responses")["output"] == "Error [DENIED]: not allowed"
    assert outcome.to_anthropic()["content"] == [{"type": "text", "text": "not allowed"}] and outcome.to_anthropic()["is_error"] is True
    mcp = outcome.to_mcp()
    assert mcp["isError"] is True and mcp["structuredContent"] == {"code": "DENIED", "reason": None, "message": "not allowed"}
    assert mcp["content"] == [{"type": "text", "text": "not allowed"}]
    sdk = to_call_tool_result(outcome)
    assert sdk.is_error is True and sdk.structured_content == {"code": "DENIED", "reason": None, "message": "not allowed"}
    assert CallToolResult.model_validate(mcp) == sdk


def test_a_failure_whose_content_a_hook_set_still_leads_with_the_marker() -> None:
    texts = ToolExecutionOutcome.failed("c1", "t", "TOOL_ERROR", "boom").with_content((TextPart("redacted"), GIF))
    assert texts.to_openai()["content"][0] == {"type": "text", "text": "Error [TOOL_ERROR]: redacted"}
    assert texts.to_openai("responses")["output"][0] == {"type": "input_text", "text": "Error [TOOL_ERROR]: redacted"}
    image_first = ToolExecutionOutcome.failed("c2", "t", "BLOCKED", "no").with_content((GIF,))
    assert image_first.to_openai()["content"] == [{"type": "text", "text": "Error [BLOCKED]"}, {"type": "text", "text": "[image 1: image/gif, in the user message that follows]"}]
    assert image_first.to_openai("responses")["output"][0] == {"type": "input_text", "text": "Error [BLOCKED]"}


def test_a_marked_text_is_not_marked_twice_and_a_success_is_never_marked() -> None:
    already = ToolExecutionOutcome.failed("c1", "t", "DENIED", "x").with_content((TextPart("Error [DENIED]: x"),))
    assert already.to_openai()["content"] == "Error [DENIED]: x"
    assert ToolExecutionOutcome.success("c2", "t", "Error [DENIED]: lookalike").to_openai()["content"] == "Error [DENIED]: lookalike"


# ------------------------------------------------------------------ item 3: additional contexts after the results
BATCH = BatchOutcomes(
    [ToolExecutionOutcome.success("c1", "t", "one"), ToolExecutionOutcome.success("c2", "t", "x").with_content((TextPart("two"), GIF))],
    ["the file changed", "the plan is stale"],
)


def test_chat_tool_messages_end_with_a_user_message_carrying_the_contexts() -> None:
    messages = chat_tool_messages(BATCH)
    assert [m["role"] for m in messages] == ["tool", "tool", "user", "user"]  # tool messages, the images, then the contexts
    assert messages[-1] == {"role": "user", "content": [{"type": "text", "text": "the file changed"}, {"type": "text", "text": "the plan is stale"}]}
    for message in messages:
        assert sdk_checked(ChatCompletionMessageParam, message) == message


def test_responses_input_items_end_with_an_input_text_message_carrying_the_contexts() -> None:
    items = responses_input_items(BATCH)
    assert [i["type"] for i in items] == ["function_call_output", "function_call_output", "message"]
    assert items[-1] == {"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "the file changed"}, {"type": "input_text", "text": "the plan is stale"}]}
    for item in items:
        assert sdk_checked(ResponseInputItemParam, item) == item


def test_tool_results_message_puts_the_contexts_after_the_tool_results() -> None:
    message = tool_results_message(BATCH)
    assert [b["type"] for b in message["content"]] == ["tool_result", "tool_result", "text", "text"]  # type: ignore[index]
    assert list(message["content"])[2:] == [{"type": "text", "text": "the file changed"}, {"type": "text", "text": "the plan is stale"}]
    assert sdk_checked(MessageParam, message) == message


def test_a_plain_list_of_outcomes_adds_nothing() -> None:
    plain = list(BATCH)
    assert chat_tool_messages(plain) == chat_tool_messages(BATCH)[:3]
    assert responses_input_items(plain) == responses_input_items(BATCH)[:2]
    assert list(tool_results_message(plain)["content"]) == list(tool_results_message(BATCH)["content"])[:2]
    assert chat_tool_messages(BatchOutcomes(plain)) == chat_tool_messages(plain)


# ------------------------------------------------------------------ round trips with the real clients
def _registry() -> ToolRegistry:
    """``blank`` returns ``""``; every call gets the context ``"checked <call id>"``."""

    def blank(path: str) -> str:
        """Read nothing."""
        return ""

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(blank))

    async def note(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return (await next_()).with_context(f"checked {execution.call_id}")  # type: ignore[no-any-return]

    registry.register_post_execute_listener(None, note)
    return registry


CONTEXT = RequestContext("acme", "alice")
pytestmark = pytest.mark.anyio


async def test_anthropic_accepts_an_empty_result_and_sees_the_context_after_it() -> None:
    registry = _registry()
    assembly = registry.assemble(CONTEXT)
    tools = to_anthropic_tools(assembly)

    def second(body: dict[str, Any]) -> dict[str, Any]:
        _refuse_empty_text_blocks(body)
        empty, unknown, context = body["messages"][-1]["content"]
        assert empty == {"type": "tool_result", "tool_use_id": "toolu_1"}  # the empty result: no content
        assert unknown["tool_use_id"] == "toolu_2" and unknown["is_error"] is True
        assert context == {"type": "text", "text": "checked toolu_1"}  # after the tool_result blocks
        return anthropic_reply(text="Nothing there.")

    with ScriptedEndpoint([anthropic_reply(("toolu_1", "blank", {"path": "a"}), ("toolu_2", "missing", {})), second]) as endpoint, \
            anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncAnthropic(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            messages: list[MessageParam] = [{"role": "user", "content": "Read a"}]
            reply = await client.messages.create(model="scripted", max_tokens=64, messages=messages, tools=tools)
            outcomes = await registry.execute_batch(calls_from_anthropic(reply), assembly)
            assert isinstance(outcomes, BatchOutcomes) and outcomes.additional_contexts == ("checked toolu_1",)
            messages += [{"role": "assistant", "content": reply.content}, tool_results_message(outcomes)]
            await client.messages.create(model="scripted", max_tokens=64, messages=messages, tools=tools)
    assert endpoint.failures == [] and endpoint.finished


async def test_chat_completions_gets_an_empty_result_a_marked_failure_and_then_the_context() -> None:
    registry = _registry()
    assembly = registry.assemble(CONTEXT)
    tools = to_openai_tools(assembly)

    def second(body: dict[str, Any]) -> dict[str, Any]:
        assert body["messages"][-3:] == [
            {"role": "tool", "tool_call_id": "call_1", "content": ""},
            {"role": "tool", "tool_call_id": "call_2", "content": body["messages"][-2]["content"]},
            {"role": "user", "content": [{"type": "text", "text": "checked call_1"}]},
        ]
        assert body["messages"][-2]["content"].startswith("Error [UNKNOWN_TOOL]: ")
        return openai_chat_reply(text="Nothing there.")

    with ScriptedEndpoint([openai_chat_reply(("call_1", "blank", {"path": "a"}), ("call_2", "missing", {})), second]) as endpoint, \
            anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            completion = await client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "Read a"}], tools=tools)
            outcomes = await registry.execute_batch(calls_from_openai(completion), assembly)
            assert isinstance(outcomes, BatchOutcomes)
            messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Read a"}]
            messages += [completion.choices[0].message.model_dump(exclude_none=True), *chat_tool_messages(outcomes)]  # type: ignore[list-item]
            await client.chat.completions.create(model="scripted", messages=messages, tools=tools)
    assert endpoint.failures == [] and endpoint.finished


async def test_responses_gets_the_outputs_then_the_context_as_input_text() -> None:
    registry = _registry()
    assembly = registry.assemble(CONTEXT)
    tools = to_openai_tools(assembly, api="responses")

    def second(body: dict[str, Any]) -> dict[str, Any]:
        assert body["input"][-2:] == [
            {"type": "function_call_output", "call_id": "call_1", "output": ""},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "checked call_1"}]},
        ]
        return openai_responses_reply(text="Nothing there.")

    with ScriptedEndpoint([openai_responses_reply(("call_1", "blank", {"path": "a"})), second]) as endpoint, anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            reply = await client.responses.create(model="scripted", input="Read a", tools=tools)
            outcomes = await registry.execute_batch(calls_from_openai(reply), assembly)
            assert isinstance(outcomes, BatchOutcomes)
            items: list[ResponseInputItemParam] = [{"role": "user", "content": "Read a"}]
            items += [item.model_dump(exclude_none=True) for item in reply.output]  # type: ignore[misc]
            items += responses_input_items(outcomes)
            await client.responses.create(model="scripted", input=items, tools=tools)
    assert endpoint.failures == [] and endpoint.finished
