"""The strict-mode null rule of ``ArgumentValidator.admit``: a ``null`` for an optional property
whose schema refuses null is read as absent, at any depth, and only where the schema refuses it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_strategies import json_objects
from tether_clr.foundations.validation import ArgumentValidator

NESTED = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "units": {"enum": ["metric", "imperial"]},
        "note": {"type": ["string", "null"]},
        "anything": {},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat"]},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/stop"}},
    },
    "required": ["city"],
    "$defs": {"stop": {"type": "object", "properties": {"name": {"type": "string"}, "minutes": {"type": "integer"}}, "required": ["name"]}},
}


def test_a_null_for_an_optional_property_that_refuses_null_is_read_as_absent() -> None:
    validator = ArgumentValidator(NESTED)
    admitted, error = validator.admit({"city": "Oslo", "units": None, "where": None, "stops": None})
    assert error is None
    assert admitted == {"city": "Oslo"}


def test_strict_nulls_are_read_as_absent_at_any_depth() -> None:
    validator = ArgumentValidator(NESTED)
    sent = {"city": "Oslo", "where": {"lat": 1.5, "lon": None}, "stops": [{"name": "a", "minutes": None}, {"name": "b", "minutes": 3}]}
    admitted, error = validator.admit(sent)
    assert error is None
    assert admitted == {"city": "Oslo", "where": {"lat": 1.5}, "stops": [{"name": "a"}, {"name": "b", "minutes": 3}]}


def test_a_null_the_schema_accepts_is_kept() -> None:
    validator = ArgumentValidator(NESTED)
    admitted, error = validator.admit({"city": "Oslo", "note": None, "anything": None, "units": None})
    assert error is None
    assert admitted == {"city": "Oslo", "note": None, "anything": None}


def test_a_null_for_a_required_property_is_still_refused() -> None:
    validator = ArgumentValidator(NESTED)
    admitted, error = validator.admit({"city": None, "units": None})
    assert error is not None and "city" in error
    assert admitted == {"city": None, "units": None}
    _, nested_error = validator.admit({"city": "Oslo", "where": {"lat": None}})
    assert nested_error is not None


def test_arguments_that_fit_are_admitted_as_they_are() -> None:
    validator = ArgumentValidator(NESTED)
    sent = {"city": "Oslo", "note": None, "extra": None}
    admitted, error = validator.admit(sent)
    assert error is None and admitted is sent


def test_nulls_are_not_removed_when_the_rest_still_does_not_fit() -> None:
    validator = ArgumentValidator(NESTED)
    sent = {"city": 3, "units": None}
    admitted, error = validator.admit(sent)
    assert admitted is sent and error is not None and "city" in error


def test_strict_nulls_inside_an_any_of_branch_are_read_as_absent() -> None:
    validator = ArgumentValidator({
        "type": "object",
        "properties": {"target": {"anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["id"], "additionalProperties": False},
            {"type": "string"},
        ]}},
    })
    assert validator.admit({"target": {"id": 1, "tag": None}}) == ({"target": {"id": 1}}, None)


def test_the_strict_null_walk_gives_up_on_a_schema_that_branches_without_end() -> None:
    validator = ArgumentValidator({
        "$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/n"}, {"type": "object", "properties": {"x": {"type": "integer"}}}]}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n"}},
    })
    admitted, error = validator.admit({"n": {"x": None}})
    assert error is not None  # refused, never hanging: nothing was read as absent
    assert validator.without_refused_nulls({"n": {"x": None}}) is None


# ------------------------------------------------------------ the property: nothing that validated changes meaning

def _schemas(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.sampled_from([
        {"type": "string"}, {"type": "integer"}, {"type": ["string", "null"]}, {"enum": ["a", "b"]},
        {"enum": ["a", None]}, {}, {"type": "null"}, {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    ])
    if depth == 0:
        return leaves

    def obj(props: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
        return {"type": "object", "properties": props, "required": sorted({r for r in required if r in props})}

    children = _schemas(depth - 1)
    objects = st.builds(obj, st.dictionaries(st.sampled_from("abcd"), children, max_size=4), st.lists(st.sampled_from("abcd"), max_size=4))
    arrays = st.builds(lambda items: {"type": "array", "items": items}, children)
    return leaves | objects | arrays


schemas = st.builds(
    lambda props, required: {"type": "object", "properties": props, "required": sorted({r for r in required if r in props})},
    st.dictionaries(st.sampled_from("abcdef"), _schemas(2), max_size=5),
    st.lists(st.sampled_from("abcdef"), max_size=5),
)
values_near_schema = st.recursive(
    st.none() | st.sampled_from(["a", "b", "x", 1, 2.5, True]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from("abcdef"), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(schemas, values_near_schema | json_objects)
def test_nothing_that_validated_before_changes_meaning(schema: dict[str, Any], arguments: Any) -> None:
    validator = ArgumentValidator(schema)
    before = json.dumps(arguments, sort_keys=True)
    admitted, error = validator.admit(arguments)
    assert json.dumps(arguments, sort_keys=True) == before  # the arguments themselves are never changed
    if validator.error_for(arguments) is None:
        assert admitted is arguments and error is None
    elif error is None:
        # admitted only by reading refused nulls as absent: the result fits, and only null-valued keys went
        assert validator.error_for(admitted) is None
        assert _only_nulls_removed(arguments, admitted)
    else:
        assert admitted is arguments


def _only_nulls_removed(sent: Any, admitted: Any) -> bool:
    if isinstance(sent, dict) and isinstance(admitted, dict):
        if not set(admitted) <= set(sent):
            return False
        return all(sent[k] is None for k in set(sent) - set(admitted)) and all(_only_nulls_removed(sent[k], admitted[k]) for k in admitted)
    if isinstance(sent, list) and isinstance(admitted, list):
        return len(sent) == len(admitted) and all(_only_nulls_removed(a, b) for a, b in zip(sent, admitted))
    return sent == admitted and type(sent) is type(admitted)
