"""Deferred tools in the projections: native deferral for OpenAI Responses and Anthropic, checked with the
SDKs' own types; Chat Completions, MCP and MEAI use the library's tool search (issue 16, section 1)."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param, ToolUnionParam
from anthropic.types.tool_search_tool_regex_20251119_param import ToolSearchToolRegex20251119Param
from mcp.types import Tool as McpTool
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionTool, FunctionToolParam, ToolParam as ResponsesToolParam
from openai.types.responses.tool import Tool as ResponsesTool
from openai.types.responses.tool_search_tool import ToolSearchTool
from openai.types.responses.tool_search_tool_param import ToolSearchToolParam
from pydantic import TypeAdapter

from tests.support.deferred_tools import ACME, GLOBEX, deferred_registry
from tests.support.projection_tools import sdk_checked
from tether_clr.projections import mcp_tool_dicts, to_anthropic_tools, to_meai_declarations, to_openai_tools

DEFERRED_FOR_ACME = ["acme_payroll", "archive_order", "refund_order"]


def _by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in tools if "name" in tool}


def test_a_snapshot_projects_deferred_tools_nowhere_and_lists_the_library_search_tool() -> None:
    assembly = deferred_registry().assemble(ACME)
    chat = to_openai_tools(assembly, api="chat")
    assert [t["function"]["name"] for t in chat] == ["lookup_order", "tool_search"]
    assert [t["name"] for t in to_openai_tools(assembly, api="responses")] == ["lookup_order", "tool_search"]
    assert [t["name"] for t in to_anthropic_tools(assembly)] == ["lookup_order", "tool_search"]
    assert [t["name"] for t in mcp_tool_dicts(assembly)] == ["lookup_order", "tool_search"]
    assert [d["name"] for d in to_meai_declarations(assembly)] == ["lookup_order", "tool_search"]
    for tool in chat:
        assert sdk_checked(ChatCompletionFunctionToolParam, tool) == tool
    assert all("defer_loading" not in t for t in to_anthropic_tools(assembly))


def test_native_deferral_for_openai_responses_sends_deferred_tools_with_defer_loading_and_the_hosted_tool_search() -> None:
    native = deferred_registry().assemble(ACME).with_native_deferral()
    tools = to_openai_tools(native, api="responses")
    assert [t.get("name", t["type"]) for t in tools] == ["lookup_order", *DEFERRED_FOR_ACME, "tool_search"]
    assert tools[-1] == {"type": "tool_search"}
    assert sdk_checked(ToolSearchToolParam, tools[-1]) == tools[-1]
    assert ToolSearchTool.model_validate(tools[-1]).type == "tool_search"
    functions = _by_name(tools)
    for name in DEFERRED_FOR_ACME:
        tool = functions[name]
        assert tool["defer_loading"] is True and tool["parameters"]["properties"]
        assert sdk_checked(FunctionToolParam, tool) == tool
        assert FunctionTool.model_validate(tool).defer_loading is True
    assert "defer_loading" not in functions["lookup_order"]
    union = TypeAdapter(list[ResponsesToolParam])
    assert [sdk_checked(ResponsesToolParam, t) for t in tools] == tools and len(union.validate_python(tools)) == len(tools)
    assert all(isinstance(TypeAdapter(ResponsesTool).validate_python(t), FunctionTool | ToolSearchTool) for t in tools)


def test_native_deferral_for_anthropic_sends_deferred_tools_with_defer_loading_and_its_tool_search_tool() -> None:
    native = deferred_registry().assemble(ACME).with_native_deferral()
    tools = to_anthropic_tools(native)
    assert [t["name"] for t in tools] == ["lookup_order", *DEFERRED_FOR_ACME, "tool_search_tool_bm25"]
    assert tools[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert sdk_checked(ToolSearchToolBm25_20251119Param, tools[-1]) == tools[-1]
    for tool in tools[:-1]:
        assert sdk_checked(ToolParam, tool) == tool
    assert [t.get("defer_loading", False) for t in tools[:-1]] == [False, True, True, True]
    assert [sdk_checked(ToolUnionParam, t) for t in tools] == tools
    regex = to_anthropic_tools(native, tool_search="regex")[-1]
    assert regex == {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    assert sdk_checked(ToolSearchToolRegex20251119Param, regex) == regex
    with pytest.raises(ValueError):
        to_anthropic_tools(native, tool_search="fuzzy")  # type: ignore[arg-type]


def test_native_deferral_sends_only_the_deferred_tools_the_caller_may_see() -> None:
    registry = deferred_registry()
    for context, mine, theirs in ((ACME, "acme_payroll", "globex_payroll"), (GLOBEX, "globex_payroll", "acme_payroll")):
        native = registry.assemble(context).with_native_deferral()
        for names in ({t.get("name") for t in to_openai_tools(native, api="responses")},
                      {t.get("name") for t in to_anthropic_tools(native)}):
            assert mine in names and theirs not in names


def test_native_deferral_leaves_loaded_tools_as_ordinary_tools() -> None:
    native = deferred_registry().assemble(ACME).with_loaded(["refund_order"]).with_native_deferral()
    functions = _by_name(to_openai_tools(native, api="responses"))
    assert "defer_loading" not in functions["refund_order"] and functions["archive_order"]["defer_loading"] is True


def test_chat_completions_mcp_and_meai_have_no_native_deferral_and_use_the_library_search() -> None:
    assembly = deferred_registry().assemble(ACME)
    native = assembly.with_native_deferral()
    assert to_openai_tools(native, api="chat") == to_openai_tools(assembly, api="chat")
    assert mcp_tool_dicts(native) == mcp_tool_dicts(assembly)
    assert to_meai_declarations(native) == to_meai_declarations(assembly)
    assert [McpTool.model_validate(t).name for t in mcp_tool_dicts(native)] == ["lookup_order", "tool_search"]


def test_a_native_snapshot_with_nothing_deferred_projects_as_any_snapshot() -> None:
    registry = deferred_registry()
    everything = registry.assemble(ACME).with_loaded(DEFERRED_FOR_ACME)
    native = everything.with_native_deferral()
    assert to_openai_tools(native, api="responses") == to_openai_tools(everything, api="responses")
    assert to_anthropic_tools(native) == to_anthropic_tools(everything)


def test_the_library_search_tool_projects_strict_for_openai() -> None:
    tools = to_openai_tools(deferred_registry().assemble(ACME), api="responses")
    search = _by_name(tools)["tool_search"]
    assert search["strict"] is True and set(search["parameters"]["required"]) == {"query", "limit"}
    assert tools.report.not_strict == ()
