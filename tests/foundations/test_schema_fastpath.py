"""The argument validator's fast path agrees with jsonschema, and never decides a failure itself.

``tether_clr.schema_fastpath`` compiles a "certainly valid" check for schemas of the
common shape. These properties pin down the rule that makes it safe: on schemas of
the supported shape its verdict equals jsonschema's on any value; on any schema it
never accepts what jsonschema refuses; and errors, with their messages, still come
from jsonschema.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether_clr import PythonFunction
from tether_clr.foundations.schema_fastpath import compile_success_check
from tether_clr.foundations.validation import ArgumentValidator

from tests.support.json_strategies import json_objects, json_values

TYPE_NAMES = ("string", "integer", "number", "boolean", "null", "array", "object")
ANNOTATIONS = st.fixed_dictionaries(
    {}, optional={"description": st.text(max_size=5), "title": st.text(max_size=5), "default": json_values, "format": st.sampled_from(["date-time", "uri", "email"])}
)
PROPERTY_NAMES = st.sampled_from(["a", "b", "text", "n", ""])  # few names, so values often hit them


def _with_annotations(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return ANNOTATIONS.map(lambda extra: {**extra, **schema})


type_keyword = st.sampled_from(TYPE_NAMES) | st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3, unique=True)


def _object_keywords(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "properties": st.dictionaries(PROPERTY_NAMES, children, max_size=3),
            "required": st.lists(PROPERTY_NAMES, max_size=3, unique=True),
            "additionalProperties": st.booleans() | children,
        },
    )


def _subschemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keywords = st.fixed_dictionaries(
        {},
        optional={
            "type": type_keyword,
            "items": children,
            "anyOf": st.lists(children, min_size=1, max_size=3),
        },
    )
    return st.tuples(keywords, _object_keywords(children)).map(lambda parts: {**parts[0], **parts[1]}).flatmap(_with_annotations)


supported_subschemas = st.recursive(st.booleans() | st.builds(dict) | type_keyword.map(lambda t: {"type": t}), _subschemas, max_leaves=8)
supported_schemas = st.tuples(_object_keywords(supported_subschemas), ANNOTATIONS).map(
    lambda parts: {"type": "object", **parts[1], **parts[0]}
)

# Keywords the fast path does not know: each must send the whole schema to jsonschema.
OTHER_KEYWORDS = st.sampled_from(
    [
        ("minLength", 1),
        ("maxLength", 2),
        ("minimum", 0),
        ("enum", ["hi", 1]),
        ("const", "hi"),
        ("pattern", "^h"),
        ("minProperties", 1),
        ("patternProperties", {"^x": {"type": "integer"}}),
        ("not", {"type": "string"}),
        ("x-vendor", True),
        ("oneOf", [{"type": "string"}, {"type": "integer"}]),
        ("uniqueItems", True),
    ]
)


def _jsonschema(schema: dict[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(schema)


@settings(max_examples=400, deadline=None)
@given(supported_schemas, json_objects | json_values)
def test_fast_check_verdict_equals_jsonschema_on_supported_schemas(schema: dict[str, Any], value: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    check = compile_success_check(schema, jsonschema.Draft202012Validator)
    assert check is not None, schema
    assert check(value) == _jsonschema(schema).is_valid(value)


@settings(max_examples=400, deadline=None)
@given(supported_subschemas, json_values)
def test_fast_check_verdict_equals_jsonschema_on_each_property_schema(subschema: Any, value: Any) -> None:
    schema = {"type": "object", "properties": {"v": subschema}, "required": ["v"]}
    check = compile_success_check(schema, jsonschema.Draft202012Validator)
    assert check is not None
    assert check({"v": value}) == _jsonschema(schema).is_valid({"v": value})


@settings(max_examples=300, deadline=None)
@given(supported_schemas, json_objects, st.data())
def test_fast_check_verdict_equals_jsonschema_on_objects_built_from_the_schema(
    schema: dict[str, Any], noise: dict[str, Any], data: st.DataObject
) -> None:
    # Objects whose keys are the schema's own property names, so the property checks really run.
    names = list(schema.get("properties", {})) + list(schema.get("required", []))
    value = {**noise, **data.draw(st.dictionaries(st.sampled_from(names), json_values, max_size=4) if names else st.just({}))}
    check = compile_success_check(schema, jsonschema.Draft202012Validator)
    assert check is not None
    assert check(value) == _jsonschema(schema).is_valid(value)


@settings(max_examples=300, deadline=None)
@given(supported_schemas, OTHER_KEYWORDS, st.booleans(), json_objects | json_values)
def test_a_schema_with_another_keyword_gets_no_fast_path(
    schema: dict[str, Any], keyword: tuple[str, Any], nested: bool, value: Any
) -> None:
    name, argument = keyword
    if nested:
        schema = {**schema, "properties": {**schema.get("properties", {}), "k": {"type": "string", name: argument}}}
    else:
        schema = {**schema, name: argument}
    assert compile_success_check(schema, jsonschema.Draft202012Validator) is None
    validator = ArgumentValidator(schema)
    assert (validator.error_for(value) is None) == _jsonschema(validator.schema).is_valid(value)


def test_other_dialects_get_no_fast_path() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert compile_success_check(schema, jsonschema.Draft4Validator) is None
    validator = ArgumentValidator({**schema, "$schema": "http://json-schema.org/draft-04/schema#"})
    assert not validator.has_fast_path
    assert validator.error_for({"n": 1.0}) is not None  # draft 4: 1.0 is not an integer


@settings(max_examples=300, deadline=None)
@given(supported_schemas, json_objects | json_values)
def test_validator_errors_still_come_from_jsonschema(schema: dict[str, Any], value: Any) -> None:
    validator = ArgumentValidator(schema)
    assert validator.has_fast_path
    error = validator.error_for(value)
    reference = _jsonschema(schema)  # the same keyword order: best_match's choice depends on it
    if reference.is_valid(value):
        assert error is None
    else:
        best = jsonschema.exceptions.best_match(reference.iter_errors(value))
        assert best is not None and error is not None and best.message in error


def test_python_function_schemas_take_the_fast_path() -> None:
    def tool(text: str, count: int = 1, ratio: float | None = None, tags: list[str] | None = None, flag: bool = False) -> str:
        return text

    validator = ArgumentValidator(PythonFunction.from_callable(tool).json_schema)
    assert validator.has_fast_path
    assert validator.error_for({"text": "hi", "count": 2, "tags": ["a"], "ratio": None}) is None
    assert validator.error_for({"text": "hi", "count": True}) == "count: True is not of type 'integer'"
    assert validator.error_for({"text": "hi", "extra": 1}) is not None
    assert validator.error_for({}) == "'text' is a required property"


@pytest.mark.parametrize("value", [1.0, 2, -0.0, 1e300])
def test_an_integral_float_is_an_integer_as_in_jsonschema(value: float) -> None:
    validator = ArgumentValidator({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert validator.error_for({"n": value}) is None
