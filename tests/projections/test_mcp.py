"""MCP projections against the real ``mcp`` SDK (2.x): Tool objects with title and annotations, CallToolResult."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent, Tool, ToolAnnotations

from tests.support import ROOT
from tests.support.projection_tools import CONTEXT, trip_registry
from tether_clr import ImagePart, SideEffect, TextPart, ToolExecutionOutcome, ToolMetadata
from tether_clr.projections import mcp_annotations, mcp_tool_dicts, to_call_tool_result, to_mcp_tools

PNG = b"\x89PNG\r\n\x1a\n" + b"\x02" * 8


def test_mcp_tools_are_sdk_tool_objects_with_input_schema_title_and_annotations() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    tools = to_mcp_tools(assembly)
    assert all(isinstance(t, Tool) for t in tools) and [t.name for t in tools] == ["plan_trip", "weather"]
    plan, weather = tools
    assert plan.title == "Plan a trip" and plan.input_schema == assembly.definitions[0].parameters
    assert plan.annotations == ToolAnnotations(title="Plan a trip", read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    assert weather.title is None and weather.annotations is not None and weather.annotations.read_only_hint is True
    dumped = plan.model_dump(by_alias=True, exclude_none=True)
    assert dumped == mcp_tool_dicts(assembly)[0] and "inputSchema" in dumped


def test_mcp_annotations_are_derived_from_the_metadata() -> None:
    assert mcp_annotations(ToolMetadata()) == {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
    assert mcp_annotations(ToolMetadata(read_only=True, title="T")) == {"title": "T", "readOnlyHint": True, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
    # a read-only claim with a side effect is not read-only; a destructive side effect is destructive
    assert mcp_annotations(ToolMetadata(read_only=True, side_effect=SideEffect.WRITE))["readOnlyHint"] is False
    assert mcp_annotations(ToolMetadata(side_effect=SideEffect.DESTRUCTIVE))["destructiveHint"] is True
    assert mcp_annotations(ToolMetadata(destructive=True))["destructiveHint"] is True
    assert mcp_annotations(ToolMetadata(idempotent=True))["idempotentHint"] is True
    for side_effect in (SideEffect.EXTERNAL_COMMUNICATION, SideEffect.FINANCIAL):
        assert mcp_annotations(ToolMetadata(side_effect=side_effect))["openWorldHint"] is True
    assert mcp_annotations(ToolMetadata(open_world=True))["openWorldHint"] is True
    ToolAnnotations.model_validate(mcp_annotations(ToolMetadata(title="x", destructive=True)))


def test_mcp_tools_follow_metadata_updates_of_later_assemblies() -> None:
    registry = trip_registry()
    registry.update_metadata("weather", "1.0.0", title="Weather")
    assert [t.title for t in to_mcp_tools(registry.assemble(CONTEXT))] == ["Plan a trip", "Weather"]


def test_an_mcp_result_has_content_and_an_object_as_structured_content() -> None:
    outcome = ToolExecutionOutcome.success("c1", "chart", {"points": 3}).with_content((TextPart("chart"), ImagePart(PNG, "image/png")))
    result = to_call_tool_result(outcome)
    assert isinstance(result, CallToolResult) and result.is_error is False
    assert result.content == [TextContent(type="text", text="chart"), ImageContent(type="image", data=ImagePart(PNG, "image/png").base64, mime_type="image/png")]
    assert result.structured_content == {"points": 3}
    assert CallToolResult.model_validate(outcome.to_mcp()) == result


def test_an_mcp_result_wraps_a_value_that_is_not_an_object() -> None:
    for value in ("sunny", 3, [1, 2], None):
        assert ToolExecutionOutcome.success("c1", "t", value).to_mcp()["structuredContent"] == {"result": value}


def test_an_mcp_failure_has_is_error_and_code_reason_message() -> None:
    outcome = ToolExecutionOutcome.failed("c1", "t", "DENIED", "re-authorization refused the call", "scope_revoked")
    result = to_call_tool_result(outcome)
    assert result.is_error is True
    assert result.structured_content == {"code": "DENIED", "reason": "scope_revoked", "message": "re-authorization refused the call"}
    assert result.content == [TextContent(type="text", text="re-authorization refused the call")]
    assert ToolExecutionOutcome.failed("c2", "t", "TOOL_ERROR", "boom").to_mcp()["structuredContent"]["reason"] is None


def test_the_projections_import_without_the_sdks_and_the_sdk_forms_name_the_extra() -> None:
    script = """
import sys
for name in ("openai", "anthropic", "mcp", "mcp.types"):
    sys.modules[name] = None  # as if not installed
from tether_clr import PythonFunction, ToolExecutionOutcome, ToolRegistry
from tether_clr.projections import mcp_tool_dicts, to_anthropic_tools, to_call_tool_result, to_meai_declarations, to_mcp_tools, to_openai_tools

def ping() -> str:
    "Ping."
    return "pong"

registry = ToolRegistry()
registry.register(PythonFunction.from_callable(ping))
view = registry.seal()
assert to_openai_tools(view)[0]["function"]["name"] == "ping"
assert to_anthropic_tools(view)[0]["name"] == mcp_tool_dicts(view)[0]["name"] == to_meai_declarations(view)[0]["name"] == "ping"
assert ToolExecutionOutcome.success("c", "ping", "pong").to_mcp()["isError"] is False
for form in (lambda: to_mcp_tools(view), lambda: to_call_tool_result(ToolExecutionOutcome.success("c", "ping", 1))):
    try:
        form()
    except ImportError as exc:
        assert "tether_clr[projections]" in str(exc), exc
    else:
        raise AssertionError("no ImportError")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
