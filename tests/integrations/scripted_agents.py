"""A scripted ``Model`` for the OpenAI Agents SDK: each model turn is a list of tool calls, or a final text.

:class:`ScriptedModel` answers model turn N with ``turns[N]`` and keeps what every request carried:
``inputs`` (the Responses input items the model received) and ``offered`` (the names of the tools it
was offered), so a test reads what the model was shown of each call's result (:meth:`outputs`).
Offline: no client, no network.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Model, ModelResponse, Usage
from agents.models.interface import ModelTracing
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def call(name: str, args: dict[str, Any] | str, call_id: str) -> ResponseFunctionToolCall:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return ResponseFunctionToolCall(type="function_call", id=f"fc_{call_id}", call_id=call_id, name=name,
                                    arguments=arguments)


def text(value: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(type="message", id="msg", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=value, annotations=[])])


class ScriptedModel(Model):
    def __init__(self, *turns: list[ResponseFunctionToolCall] | str) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []
        self.offered: list[list[str]] = []

    async def get_response(self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: ModelTracing, *, previous_response_id: Any,
                           conversation_id: Any, prompt: Any) -> ModelResponse:
        self.inputs.append(copy.deepcopy([input] if isinstance(input, str) else list(input)))
        self.offered.append([tool.name for tool in tools])
        turn = self.turns.pop(0) if self.turns else "done"
        output: list[Any] = [text(turn)] if isinstance(turn, str) else list(turn)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("scripted: non-streaming runs only")

    def outputs(self, turn: int = -1) -> dict[str, Any]:
        """The tool outputs the model was shown in its ``turn``-th request (default: the last), by call id."""
        found: dict[str, Any] = {}
        for item in self.inputs[turn]:
            item = item if isinstance(item, dict) else getattr(item, "model_dump", lambda: {})()
            if item.get("type") == "function_call_output":
                found[item["call_id"]] = item["output"]
        return found
