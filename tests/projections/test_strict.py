"""OpenAI strict-mode conversion (tether_clr.projections.strict): OpenAI's rules, and a report of everything it could not carry."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.projection_tools import schema_objects
from tether_clr.projections import strict_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "Where"},
        "units": {"enum": ["metric", "imperial"], "type": "string", "default": "metric"},
        "days": {"type": "integer"},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/stop"}},
        "start": {"$ref": "#/$defs/stop", "description": "The first stop"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["city"],
    "$defs": {"stop": {"type": "object", "properties": {"name": {"type": "string"}, "minutes": {"type": "integer"}}, "required": ["name"]}},
}


def test_strict_every_object_gets_additional_properties_false() -> None:
    converted = strict_schema(SCHEMA).schema
    assert converted is not None
    objects = schema_objects(converted)
    assert len(objects) >= 3 and all(o["additionalProperties"] is False for o in objects)


def test_strict_every_property_is_listed_in_required() -> None:
    converted = strict_schema(SCHEMA).schema
    assert converted is not None
    for obj in schema_objects(converted):
        assert obj["required"] == list(obj["properties"])


def test_strict_an_optional_property_becomes_nullable() -> None:
    converted = strict_schema(SCHEMA).schema
    assert converted is not None
    props = converted["properties"]
    assert props["city"] == {"type": "string", "description": "Where"}  # required: unchanged
    assert props["days"] == {"type": ["integer", "null"]}
    assert props["units"] == {"anyOf": [{"enum": ["metric", "imperial"], "type": "string", "description": 'Default: "metric".'}, {"type": "null"}]}
    assert props["stops"]["type"] == ["array", "null"]
    assert props["note"] == {"type": ["string", "null"]}  # already nullable
    assert converted["$defs"]["stop"]["properties"]["minutes"] == {"type": ["integer", "null"]}


def test_strict_a_ref_with_siblings_is_inlined() -> None:
    converted = strict_schema(SCHEMA).schema
    assert converted is not None
    start = converted["properties"]["start"]
    assert "$ref" not in start and start["description"] == "The first stop" and start["type"] == ["object", "null"]
    assert start["properties"]["name"] == {"type": "string"} and start["additionalProperties"] is False
    assert converted["properties"]["stops"]["items"] == {"$ref": "#/$defs/stop"}  # a bare $ref stays


def test_strict_reports_each_dropped_annotation() -> None:
    result = strict_schema(SCHEMA)
    assert [(k, p, a) for k, p, a, _ in result.notes] == [("default", "/properties/units/default", "dropped")]


def test_strict_an_unsupported_keyword_makes_the_schema_not_strict_and_is_reported() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "minLength": 3}, "n": {"type": "integer", "default": 1}}}
    result = strict_schema(schema)
    assert result.schema is None
    assert [(k, p, a) for k, p, a, _ in result.notes] == [("minLength", "/properties/code/minLength", "not_strict")]


def test_strict_an_open_or_free_form_object_cannot_be_strict() -> None:
    for schema, keyword in (
        ({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": True}, "additionalProperties"),
        ({"type": "object", "properties": {"meta": {"type": "object"}}}, "properties"),
        ({"type": "object", "properties": {"any": {}}}, "{}"),
        ({"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}, "oneOf"),
        ({"type": "object", "properties": {"x": {"$ref": "https://example.com/x"}}}, "$ref"),
    ):
        result = strict_schema(schema)
        assert result.schema is None and [n[0] for n in result.notes] == [keyword], schema


def test_strict_a_tool_without_parameters_is_an_empty_closed_object() -> None:
    assert strict_schema({"type": "object"}).schema == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def test_strict_conversion_never_changes_its_input() -> None:
    before = copy.deepcopy(SCHEMA)
    first = strict_schema(SCHEMA)
    assert SCHEMA == before
    assert first.schema is not None
    first.schema["properties"].clear()
    assert strict_schema(SCHEMA).schema != first.schema  # a fresh copy each time


# ------------------------------------------------------------------ a dropped default is said in the description
def test_strict_a_dropped_default_is_appended_to_the_description_and_still_reported() -> None:
    schema = {"type": "object", "properties": {
        "quantity": {"type": "integer", "default": 1, "description": "How many"},
        "branch": {"type": "string", "default": "main"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": [], "description": "Labels."},
        "mode": {"type": "string", "examples": ["fast"]},
    }}
    result = strict_schema(schema)
    assert result.schema is not None
    props = result.schema["properties"]
    assert props["quantity"]["description"] == "How many. Default: 1."
    assert props["branch"]["description"] == 'Default: "main".'
    assert props["tags"]["description"] == "Labels. Default: []."
    assert "description" not in props["mode"]  # only a default is said; other dropped annotations are just removed
    assert [(n[0], n[1], n[2]) for n in result.notes] == [
        ("default", "/properties/quantity/default", "dropped"), ("default", "/properties/branch/default", "dropped"),
        ("default", "/properties/tags/default", "dropped"), ("examples", "/properties/mode/examples", "dropped")]
