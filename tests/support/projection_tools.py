"""The tools and provider replies the projection tests share.

``trip_registry`` holds Python tools whose schemas exercise strict mode
(optional, nested, enum and array properties) and one tool the test principal may
not see; ``chat_completion``, ``response`` and ``anthropic_message`` build the JSON
a provider answers with.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from tether_clr import PythonFunction, RequestContext, ToolMetadata, ToolRegistrationOptions, ToolRegistry

CONTEXT = RequestContext("acme", "alice", scopes=frozenset({"trips:read"}))
"""The principal the assemblies are made for: it holds ``trips:read``, not ``payroll:read``."""


class Stop(BaseModel):
    name: str
    minutes: int | None = None


class Where(BaseModel):
    lat: float
    lon: float
    label: str = ""


PLANNED: list[dict[str, Any]] = []
"""What ``plan_trip`` was called with, in order (cleared by ``trip_registry``)."""


def plan_trip(
    city: str,
    units: Literal["metric", "imperial"] = "metric",
    stops: list[Stop] | None = None,
    where: Where | None = None,
    days: int = 1,
) -> dict[str, Any]:
    """Plan a trip: a city, optional units, stops and a place to start from."""
    call = {"city": city, "units": units, "stops": None if stops is None else [s.model_dump() for s in stops],
            "where": None if where is None else where.model_dump(), "days": days}
    PLANNED.append(call)
    return {"planned": city, "stops": len(stops or ()), "days": days}


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def payroll(employee: str) -> str:
    """Someone's salary."""
    return "secret"


def trip_registry() -> ToolRegistry:
    """``plan_trip`` (title "Plan a trip", idempotent), ``weather`` (read-only) and ``payroll`` (needs ``payroll:read``)."""
    PLANNED.clear()
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(weather), None, ToolRegistrationOptions(
        metadata=ToolMetadata(read_only=True, required_scopes={"trips:read"})))
    registry.register(PythonFunction.from_callable(plan_trip), None, ToolRegistrationOptions(
        metadata=ToolMetadata(title="Plan a trip", idempotent=True)))
    registry.register(PythonFunction.from_callable(payroll), None, ToolRegistrationOptions(
        metadata=ToolMetadata(required_scopes={"payroll:read"})))
    return registry


def chat_completion(*tool_calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
    """A Chat Completions response: an assistant message with ``(id, name, arguments)`` tool calls
    (arguments given as text are sent as they are), or just ``text``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for id_, name, args in tool_calls
        ]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message, "logprobs": None}]}


def response(*function_calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
    """A Responses API response: ``function_call`` output items, or a message with ``text``."""
    output: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "status": "completed",
         "arguments": args if isinstance(args, str) else json.dumps(args)}
        for call_id, name, args in function_calls
    ]
    if text is not None:
        output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "scripted", "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def anthropic_message(*tool_uses: tuple[str, str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A Messages API response: ``tool_use`` blocks ``(id, name, input)``, after an optional text block."""
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    content += [{"type": "tool_use", "id": id_, "name": name, "input": input_} for id_, name, input_ in tool_uses]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": content,
            "stop_reason": "tool_use" if tool_uses else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def sdk_checked(kind: Any, value: Any) -> Any:
    """``value`` validated by the SDK's own type ``kind`` (a request TypedDict, through pydantic), as plain data.

    A TypedDict drops keys it does not know, so ``sdk_checked(T, v) == v`` says
    that ``v`` has the SDK's shape and nothing else.
    """
    adapter = TypeAdapter(kind)  # alive while _plain walks pydantic's lazy iterables (they use its definitions)
    return _plain(adapter.validate_python(value))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return [_plain(v) for v in value]  # lists, tuples and pydantic's lazily validated iterables
