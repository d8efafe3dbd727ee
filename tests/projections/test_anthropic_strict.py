"""``to_anthropic_tools(assembly, strict=...)``: Anthropic's strict tool use, by Anthropic's rules, with the same report.

Anthropic's subset (its structured-outputs JSON Schema limitations): every
object closed (``additionalProperties: false``), optional properties allowed,
``default`` kept, no numeric or length constraints, ``minItems`` 0 or 1 only, no
recursive schemas. Checked with the ``anthropic`` SDK's ``ToolParam``.
"""

from __future__ import annotations

from typing import Annotated

from anthropic.types import ToolParam
from pydantic import Field

from tests.support.projection_tools import CONTEXT, schema_objects, sdk_checked, trip_registry
from tether_clr import PythonFunction, ToolRegistry
from tether_clr.projections import AnthropicTools, ProjectionReport, strict_schema, to_anthropic_tools


def test_anthropic_tools_are_not_strict_by_default_as_before() -> None:
    tools = to_anthropic_tools(trip_registry().assemble(CONTEXT))
    assert isinstance(tools, AnthropicTools) and isinstance(tools, list)
    assert all("strict" not in tool for tool in tools) and tools.report == ProjectionReport()


def test_anthropic_strict_tools_are_closed_keep_optional_properties_and_defaults() -> None:
    assembly = trip_registry().assemble(CONTEXT)
    tools = to_anthropic_tools(assembly, strict=True)
    for tool in tools:
        assert sdk_checked(ToolParam, tool) == tool and tool["strict"] is True
    plan = next(t for t in tools if t["name"] == "plan_trip")
    schema = plan["input_schema"]
    assert all(o["additionalProperties"] is False for o in schema_objects(schema))
    assert schema["required"] == ["city"]  # optional properties stay optional: Anthropic does not require them all
    assert schema["properties"]["days"] == {"default": 1, "type": "integer"}  # default kept, no null added
    assert tools.report == ProjectionReport()


def test_anthropic_strict_refuses_what_its_subset_cannot_express_and_reports_it() -> None:
    for schema, keyword in (
        ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}, "minimum"),
        ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}, "maxLength"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "minItems": 2}}}, "minItems"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "maxItems": 2}}}, "maxItems"),
        ({"type": "object", "properties": {"x": {"type": "object"}}, "additionalProperties": True}, "additionalProperties"),
        ({"type": "object", "properties": {"node": {"$ref": "#/$defs/node"}},
          "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}, "$ref"),
    ):
        result = strict_schema(schema, provider="anthropic")
        assert result.schema is None and [(n[0], n[2]) for n in result.notes] == [(keyword, "not_strict")], schema


def test_anthropic_strict_accepts_what_openai_strict_would_change() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 1},
                                               "n": {"type": "integer", "default": 3}}, "required": ["a"]}
    result = strict_schema(schema, provider="anthropic")
    assert result.notes == ()
    assert result.schema == {**schema, "additionalProperties": False}
    openai = strict_schema(schema)  # OpenAI: the default is dropped (and said), the uri format removed, n nullable
    assert [n[0] for n in openai.notes] == ["format", "default"]


def test_a_tool_that_cannot_be_strict_is_projected_as_it_is_with_strict_false() -> None:
    def pick(code: Annotated[str, Field(min_length=3)], n: int = 1) -> str:
        """Pick a code."""
        return code

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(pick))
    assembly = registry.assemble(CONTEXT)
    (tool,) = to_anthropic_tools(assembly, strict=True)
    assert sdk_checked(ToolParam, tool) == tool
    assert tool["strict"] is False and tool["input_schema"] == assembly.definitions[0].parameters  # as it is
    (note,) = to_anthropic_tools(assembly, strict=True).report.notes
    assert (note.tool, note.keyword, note.path, note.action) == ("pick", "minLength", "/properties/code/minLength", "not_strict")
