"""Round trips with the real ``openai`` and ``anthropic`` clients against a scripted endpoint on 127.0.0.1.

The client sends the projected tools and receives tool calls; the calls go
through ``execute_batch`` (a Python tool and C# tools); the results go back,
and the endpoint checks what it received. Under asyncio and trio.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from tests.support import BATCH_TIMEOUT, codes, registry_of
from tests.support.projection_tools import CONTEXT, PLANNED, trip_registry, weather
from tether_clr.testing import ScriptedEndpoint, anthropic_reply, openai_chat_reply, openai_responses_reply
from tether_clr import PythonFunction, ToolRegistry
from tether_clr.projections import (
    calls_from_anthropic,
    calls_from_openai,
    chat_tool_messages,
    openai_allowed_tools,
    to_anthropic_tools,
    to_openai_tools,
    tool_results_message,
)

pytestmark = pytest.mark.anyio


def _mixed_registry(clr_tools: dict[str, Any]) -> ToolRegistry:
    """``weather`` (Python) next to ``Add`` and ``Greet`` (C#)."""
    registry = registry_of(clr_tools["functions"]["Add"], clr_tools["functions"]["Greet"])
    registry.register(PythonFunction.from_callable(weather))
    return registry


async def test_openai_chat_round_trip_with_python_and_csharp_tools(clr_tools: dict[str, Any]) -> None:
    registry = _mixed_registry(clr_tools)
    assembly = registry.assemble(CONTEXT)
    tools = to_openai_tools(assembly)
    choice = openai_allowed_tools(["Add", "weather", "Greet"], mode="required")

    def first(body: dict[str, Any]) -> dict[str, Any]:
        assert body["tools"] == tools and body["tool_choice"] == choice
        assert [t["function"]["strict"] for t in body["tools"]] == [True, True, True]
        return openai_chat_reply(("call_1", "weather", '{"city": "Oslo"}'), ("call_2", "Add", '{"a": 2, "b": 3}'),
                               ("call_3", "Greet", '{"name": "Ada", "greeting": null}'))  # strict mode's null for an optional C# parameter

    def second(body: dict[str, Any]) -> dict[str, Any]:
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        assert tool_messages == [
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"},
            {"role": "tool", "tool_call_id": "call_2", "content": "5"},
            {"role": "tool", "tool_call_id": "call_3", "content": "Hello, Ada!"},
        ]
        assert body["messages"][1]["role"] == "assistant" and len(body["messages"][1]["tool_calls"]) == 3
        return openai_chat_reply(text="It is sunny in Oslo; 2 + 3 = 5.")

    with ScriptedEndpoint([first, second]) as endpoint, anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            messages: list[Any] = [{"role": "user", "content": "Weather in Oslo, and 2 + 3?"}]
            completion = await client.chat.completions.create(model="scripted", messages=messages, tools=tools, tool_choice=choice)
            message = completion.choices[0].message
            outcomes = await registry.execute_batch(calls_from_openai(message), assembly)
            assert isinstance(outcomes, list) and codes(outcomes) == [None, None, None]
            messages += [message.model_dump(exclude_none=True), *chat_tool_messages(outcomes)]
            final = await client.chat.completions.create(model="scripted", messages=messages, tools=tools)
    assert endpoint.failures == [] and endpoint.finished
    assert final.choices[0].message.content == "It is sunny in Oslo; 2 + 3 = 5."


async def test_anthropic_round_trip_with_python_and_csharp_tools(clr_tools: dict[str, Any]) -> None:
    registry = _mixed_registry(clr_tools)
    assembly = registry.assemble(CONTEXT)
    tools = to_anthropic_tools(assembly)

    def first(body: dict[str, Any]) -> dict[str, Any]:
        assert body["tools"] == tools
        return anthropic_reply(("toolu_1", "Add", {"a": 40, "b": 2}), ("toolu_2", "weather", {"city": "Rome"}),
                                 ("toolu_3", "Add", {"a": "x"}), text="Let me check.")

    def second(body: dict[str, Any]) -> dict[str, Any]:
        answer = body["messages"][-1]
        assert answer["role"] == "user"
        results = answer["content"]
        assert [(r["tool_use_id"], r["content"], r.get("is_error", False)) for r in results[:2]] == [
            ("toolu_1", [{"type": "text", "text": "42"}], False),
            ("toolu_2", [{"type": "text", "text": "sunny in Rome"}], False),
        ]
        assert results[2]["tool_use_id"] == "toolu_3" and results[2]["is_error"] is True
        return anthropic_reply(text="42, and sunny in Rome.")

    with ScriptedEndpoint([first, second]) as endpoint, anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncAnthropic(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            messages: list[Any] = [{"role": "user", "content": "What is 40 + 2, and the weather in Rome?"}]
            reply = await client.messages.create(model="scripted", max_tokens=256, messages=messages, tools=tools)  # type: ignore[arg-type]
            outcomes = await registry.execute_batch(calls_from_anthropic(reply), assembly)
            assert isinstance(outcomes, list) and codes(outcomes) == [None, None, "INVALID_ARGS"]
            messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}, tool_results_message(outcomes)]
            final = await client.messages.create(model="scripted", max_tokens=256, messages=messages, tools=tools)  # type: ignore[arg-type]
    assert endpoint.failures == [] and endpoint.finished
    assert final.content[0].type == "text"


async def test_strict_round_trip_with_nulls_for_the_optional_properties_succeeds() -> None:
    registry = trip_registry()
    assembly = registry.assemble(CONTEXT)
    tools = to_openai_tools(assembly, api="responses")
    plan = next(t for t in tools if t["name"] == "plan_trip")
    assert plan["strict"] is True and set(plan["parameters"]["required"]) == {"city", "units", "stops", "where", "days"}
    # what a strict model sends: every property, null for each optional one, at every depth
    raw = json.dumps({"city": "Oslo", "units": None, "days": None, "where": {"lat": 59.9, "lon": 10.7, "label": None},
                      "stops": [{"name": "Museum", "minutes": None}, {"name": "Harbour", "minutes": 30}]})

    def first(body: dict[str, Any]) -> dict[str, Any]:
        assert body["tools"] == tools
        return openai_responses_reply(("call_1", "plan_trip", raw))

    def second(body: dict[str, Any]) -> dict[str, Any]:
        (output,) = [item for item in body["input"] if item.get("type") == "function_call_output"]
        assert output == {"type": "function_call_output", "call_id": "call_1", "output": '{"days":1,"planned":"Oslo","stops":2}'}
        return openai_responses_reply(text="Planned.")

    with ScriptedEndpoint([first, second]) as endpoint, anyio.fail_after(BATCH_TIMEOUT):
        async with AsyncOpenAI(base_url=endpoint.url, api_key="test", max_retries=0) as client:
            items: list[Any] = [{"role": "user", "content": "Plan Oslo"}]
            reply = await client.responses.create(model="scripted", input=items, tools=tools)  # type: ignore[arg-type]
            calls = calls_from_openai(reply)
            assert [c.arguments for c in calls] == [raw]  # the raw text, untouched
            outcomes = await registry.execute_batch(calls, assembly)
            assert isinstance(outcomes, list) and codes(outcomes) == [None]
            items += [item.model_dump(exclude_none=True) for item in reply.output] + [o.to_openai("responses") for o in outcomes]
            await client.responses.create(model="scripted", input=items, tools=tools)  # type: ignore[arg-type]
    assert endpoint.failures == [] and endpoint.finished
    assert PLANNED == [{"city": "Oslo", "units": "metric", "days": 1, "where": {"lat": 59.9, "lon": 10.7, "label": ""},
                        "stops": [{"name": "Museum", "minutes": None}, {"name": "Harbour", "minutes": 30}]}]
