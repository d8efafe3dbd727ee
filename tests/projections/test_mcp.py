"""MCP projections against the real ``mcp`` SDK (2.x): Tool objects with title and annotations, CallToolResult."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent, Tool, ToolAnnotations

from tests.support import ROOT
from tests.support.projection_tools import CONTEXT, trip_registry
from tether_clr import (ImagePart, PythonFunction, SideEffect, TextPart, ToolExecutionOutcome, ToolMetadata,
                        ToolRegistrationOptions, ToolRegistry)
from tether_clr.projections import mcp_annotations, mcp_tool_dicts, to_call_tool_result, to_mcp_tools

def delete_everything() -> str:
    """Delete every record (no metadata says so)."""
    return "deleted"


PNG = b"\x89PNG\r\n\x1a\n" + b"\x02" * 8


def test_mcp_tools_are_sdk_tool_objects_with_input_schema_title_and_annotations() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    tools = to_mcp_tools(assembly)
    assert all(isinstance(t, Tool) for t in tools) and [t.name for t in tools] == ["plan_trip", "weather"]
    plan, weather = tools
    assert plan.title == "Plan a trip" and plan.input_schema == assembly.definitions[0].parameters
    assert plan.annotations == ToolAnnotations(title="Plan a trip", idempotent_hint=True)
    assert weather.title is None and weather.annotations is not None and weather.annotations.read_only_hint is True
    dumped = plan.model_dump(by_alias=True, exclude_none=True)
    assert dumped == mcp_tool_dicts(assembly)[0] and "inputSchema" in dumped


def _annotations(metadata: ToolMetadata) -> dict[str, Any]:
    """``mcp_annotations(metadata)``, checked against the SDK's own ``ToolAnnotations`` (it must round-trip)."""
    annotations = mcp_annotations(metadata)
    assert ToolAnnotations.model_validate(annotations).model_dump(by_alias=True, exclude_none=True) == annotations
    return annotations


# (hint, metadata that says true, that says false, that says other things but not this)
_HINTS = [
    ("readOnlyHint", {"read_only": True}, {"read_only": False}, {"idempotent": True, "open_world": False}),
    ("destructiveHint", {"destructive": True}, {"destructive": False}, {"idempotent": True, "open_world": False}),
    ("idempotentHint", {"idempotent": True}, {"idempotent": False}, {"read_only": True, "open_world": False}),
    ("openWorldHint", {"open_world": True}, {"open_world": False}, {"read_only": True, "idempotent": True}),
]


@pytest.mark.parametrize(("hint", "says_true", "says_false", "silent"), _HINTS, ids=[h[0] for h in _HINTS])
def test_an_mcp_hint_is_sent_as_the_metadata_says_it_and_omitted_when_not_said(
    hint: str, says_true: dict[str, bool], says_false: dict[str, bool], silent: dict[str, bool]
) -> None:
    assert _annotations(ToolMetadata(**says_true))[hint] is True  # type: ignore[arg-type]
    assert _annotations(ToolMetadata(**says_false))[hint] is False  # type: ignore[arg-type]
    assert hint not in _annotations(ToolMetadata(**silent))  # type: ignore[arg-type]
    assert hint not in _annotations(ToolMetadata(title="Only a title"))


def test_a_tool_without_metadata_has_no_hints_which_mcp_reads_as_destructive_and_open_world() -> None:
    assert _annotations(ToolMetadata()) == {}
    assert _annotations(ToolMetadata(title="T")) == {"title": "T"}
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(delete_everything))
    [tool] = to_mcp_tools(registry.seal())
    assert tool.annotations is None and "annotations" not in mcp_tool_dicts(registry.seal())[0]


def test_side_effects_only_ever_make_a_hint_less_safe() -> None:
    # NONE is the default, not a claim: alone it establishes nothing
    assert _annotations(ToolMetadata(side_effect=SideEffect.NONE)) == {}
    assert _annotations(ToolMetadata(side_effect=SideEffect.WRITE)) == {"readOnlyHint": False}
    assert _annotations(ToolMetadata(side_effect=SideEffect.DESTRUCTIVE)) == {"readOnlyHint": False, "destructiveHint": True}
    for side_effect in (SideEffect.EXTERNAL_COMMUNICATION, SideEffect.FINANCIAL):
        assert _annotations(ToolMetadata(side_effect=side_effect)) == {"readOnlyHint": False, "openWorldHint": True}
    # a side effect or a destructive claim overrides a read-only or a closed-world claim (fail closed)
    assert _annotations(ToolMetadata(read_only=True, side_effect=SideEffect.WRITE))["readOnlyHint"] is False
    assert _annotations(ToolMetadata(read_only=True, destructive=True)) == {"readOnlyHint": False, "destructiveHint": True}
    assert _annotations(ToolMetadata(destructive=False, side_effect=SideEffect.DESTRUCTIVE))["destructiveHint"] is True
    assert _annotations(ToolMetadata(open_world=False, side_effect=SideEffect.FINANCIAL))["openWorldHint"] is True
    # an established read-only tool is non-destructive; it says nothing about idempotence or the world
    assert _annotations(ToolMetadata(read_only=True, title="T")) == {"title": "T", "readOnlyHint": True, "destructiveHint": False}


def test_annotations_follow_metadata_updates_and_a_claim_can_be_withdrawn() -> None:
    registry = trip_registry()
    registry.update_metadata("plan_trip", "1.0.0", destructive=False, open_world=True)
    plan = mcp_tool_dicts(registry.assemble(CONTEXT))[0]
    assert plan["annotations"] == {"title": "Plan a trip", "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}
    registry.update_metadata("plan_trip", "1.0.0", destructive=None, open_world=None)
    assert mcp_tool_dicts(registry.assemble(CONTEXT))[0]["annotations"] == {"title": "Plan a trip", "idempotentHint": True}


def test_a_csharp_tool_registered_without_metadata_is_listed_with_no_hints(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.register(clr_tools["functions"]["Add"])
    registry.register(clr_tools["functions"]["Twice"], None, ToolRegistrationOptions(
        metadata=ToolMetadata(read_only=True, idempotent=True)))
    plain, described = to_mcp_tools(registry.seal())
    assert (plain.name, described.name) == ("Add", "Twice") and plain.annotations is None
    assert described.annotations == ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


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
