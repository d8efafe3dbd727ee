"""langchain-core's own GenericFakeChatModel, scripted, in a real LangGraph loop (agent node + ToolNode).

:class:`ScriptedChat` answers each model turn with the next scripted ``AIMessage`` and records what
it was offered (``bind_tools``, once per step) and what it was shown (``seen``). :func:`agent_graph`
is the loop a host writes to offer the request's tools per step: the agent node binds
``adapter.tools(config, messages)``, the tools node is a ``ToolNode`` of ``adapter.runnable_tools(config)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from tether_clr.integrations.langchain import GovernedTools


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChat(GenericFakeChatModel):
    """Each turn: a list of tool calls, or a final text. ``offered[i]``: the tool names bound at step i."""

    offered: list[list[str]] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @classmethod
    def of(cls, *turns: list[dict[str, Any]] | str) -> ScriptedChat:
        messages = [AIMessage(turn) if isinstance(turn, str) else AIMessage("", tool_calls=turn) for turn in turns]
        return cls(messages=iter(messages))

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.offered.append([convert_to_openai_tool(tool)["function"]["name"] for tool in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def results(self, turn: int = -1) -> dict[str, ToolMessage]:
        """The tool messages the model was shown before its ``turn``-th answer (default: the last), by call id."""
        return {m.tool_call_id: m for m in self.seen[turn] if isinstance(m, ToolMessage)}


def agent_graph(chat: ScriptedChat, adapter: GovernedTools) -> CompiledStateGraph[Any, Any, Any, Any]:
    async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        model = chat.bind_tools(adapter.tools(config, state["messages"]))
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    async def tools(state: MessagesState, config: RunnableConfig) -> Any:
        return await ToolNode(adapter.runnable_tools(config)).ainvoke(state, config)

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def thread(thread_id: str = "t1", **configurable: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, **configurable}}
