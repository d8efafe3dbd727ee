"""How the benchmarks drive each agent framework's own tool-invocation path (shared by peers.py and integrations.py).

Every driver takes the framework's tool object (a plain function tool, or a
governed adapter's tool) and returns a zero-argument coroutine function that
makes ONE call of the no-op ``echo`` tool with the raw arguments ``RAW``,
through the same entry the framework's agent loop uses:

* OpenAI Agents SDK: ``FunctionTool.on_invoke_tool(ToolContext, raw)``;
* LangGraph: ``ToolNode.ainvoke`` with an ``AIMessage`` holding the tool call;
* pydantic-ai: ``ToolManager.handle_call(ToolCallPart)`` of a manager built for
  the run step (``for_run_step``), with the model response holding the call in
  the run context's messages, as the agent graph has it.

The per-step offer drivers time what a framework does once per model request:
the Agents SDK's ``Agent.get_all_tools`` (every tool's ``is_enabled``), and
pydantic-ai's ``ToolManager.for_run_step`` (the toolset's ``get_tools``).
Importing this module imports no framework: each driver imports its own.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

RAW = '{"text": "hi"}'
CALL_ID = "c1"

Invoke = Callable[[], Awaitable[object]]


async def echo(text: str) -> str:
    """Echo the text."""
    return text


# ------------------------------------------------------------ OpenAI Agents SDK
def openai_invoker(tool: Any, context: Any = None, raw: str = RAW) -> Invoke:
    """One ``on_invoke_tool`` call of the SDK ``FunctionTool`` ``tool``, as the SDK's run loop makes it."""
    from agents.tool_context import ToolContext

    tool_context = ToolContext(context=context, tool_name=tool.name, tool_call_id=CALL_ID, tool_arguments=raw)

    async def one() -> object:
        return await tool.on_invoke_tool(tool_context, raw)

    return one


def openai_offer(tools: list[Any], context: Any = None) -> Invoke:
    """One step's offer: ``Agent.get_all_tools`` (the SDK evaluates every tool's ``is_enabled``)."""
    from agents import Agent, RunContextWrapper

    agent: Any = Agent(name="bench", tools=tools)
    run_context: Any = RunContextWrapper(context=context)

    async def step() -> object:
        return await agent.get_all_tools(run_context)

    return step


# -------------------------------------------------------------------- LangGraph
def langgraph_invoker(tools: list[Any], name: str = "echo", raw: str = RAW, configurable: dict[str, Any] | None = None) -> Invoke:
    """One ``ToolNode.ainvoke`` of an ``AIMessage`` holding one call of ``name`` (args parsed, as a model gives them)."""
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import ToolNode
    from langgraph.runtime import Runtime

    node = ToolNode(tools)
    state = {"messages": [AIMessage(content="", tool_calls=[{"name": name, "args": json.loads(raw), "id": CALL_ID}])]}
    # What a graph would inject: ToolNode reads its Runtime from the config (the key is langgraph's CONFIG_KEY_RUNTIME).
    config: Any = {"configurable": {"__pregel_runtime": Runtime(), **(configurable or {})}}

    async def one() -> object:
        return await node.ainvoke(state, config)

    return one


# ------------------------------------------------------------------ pydantic-ai
def pydantic_ai_context(deps: Any = None, name: str = "echo", raw: str = RAW) -> Any:
    """A run context of one step whose last message is the model response holding the call (as the agent graph has it)."""
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    part = ToolCallPart(name, raw, tool_call_id=CALL_ID)
    messages: list[Any] = [ModelRequest(parts=[UserPromptPart("go")]), ModelResponse(parts=[part])]
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage(), messages=messages, run_id="bench-run", run_step=1)


def pydantic_ai_invoker(toolset: Any, deps: Any = None, name: str = "echo", raw: str = RAW) -> Invoke:
    """One ``ToolManager.handle_call`` of the step's manager over ``toolset`` (built once, in the event loop)."""
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tool_manager import ToolManager

    manager: Any = None
    part = ToolCallPart(name, raw, tool_call_id=CALL_ID)

    async def one() -> object:
        nonlocal manager
        if manager is None:  # built inside the event loop, once
            manager = await ToolManager(toolset=toolset).for_run_step(pydantic_ai_context(deps, name, raw))
        return await manager.handle_call(part)

    return one


def pydantic_ai_offer(toolset: Any, deps: Any = None) -> Invoke:
    """One step's offer: a fresh ``ToolManager.for_run_step`` over ``toolset`` (it calls ``get_tools``)."""
    from pydantic_ai.tool_manager import ToolManager

    context: Any = None

    async def step() -> object:
        nonlocal context
        if context is None:
            context = pydantic_ai_context(deps)
        return await ToolManager(toolset=toolset).for_run_step(context)

    return step
