"""pydantic-ai's own FunctionModel, scripted: each model turn is a list of tool calls, or a final text.

:class:`Script` answers model turn N with ``turns[N]`` and keeps every request the model received
(``seen``), so a test reads what the model was shown of each result (content, outcome).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def call(name: str, args: dict[str, Any] | str, call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, call_id)


class Script:
    def __init__(self, *turns: list[ToolCallPart] | str) -> None:
        self.turns = list(turns)
        self.seen: list[list[ModelMessage]] = []
        self.offered: list[list[str]] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.offered.append([tool.name for tool in info.function_tools])
        turn = self.turns.pop(0) if self.turns else "done"
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)])
        return ModelResponse(parts=list(turn))

    def returns(self, turn: int = -1) -> dict[str, ToolReturnPart]:
        """The tool returns the model was shown in its ``turn``-th request (default: the last), by call id."""
        request = self.seen[turn][-1]
        assert isinstance(request, ModelRequest)
        return {part.tool_call_id: part for part in request.parts if isinstance(part, ToolReturnPart)}
