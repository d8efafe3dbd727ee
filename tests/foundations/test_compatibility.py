"""check_compatibility: which schema changes break callers that learnt the old version."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_strategies import json_values
from tether_clr import (
    CompatibilityReport,
    IncompatibleSchemaError,
    check_compatibility,
    require_compatible,
)


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


def breaks(old: Any, new: Any, mode: str = "strict") -> tuple[str, ...]:
    return check_compatibility(old, new, mode).breaking  # type: ignore[arg-type]


STRING = {"type": "string"}


def test_identical_schemas_are_compatible() -> None:
    schema = obj({"a": STRING}, ("a",), additionalProperties=False)
    assert check_compatibility(schema, copy.deepcopy(schema)) == CompatibilityReport(True, (), ())


def test_new_required_property_is_breaking() -> None:
    found = breaks(obj({"a": STRING}), obj({"a": STRING, "b": STRING}, ("b",)))
    assert found == ("#/properties/b: new required property",)


def test_making_an_existing_property_required_is_breaking() -> None:
    assert breaks(obj({"a": STRING}), obj({"a": STRING}, ("a",))) == ("#/properties/a: new required property",)


def test_new_optional_property_is_compatible_with_a_note() -> None:
    report = check_compatibility(obj({"a": STRING}, additionalProperties=False), obj({"a": STRING, "b": STRING}, additionalProperties=False))
    assert report.compatible is True
    assert report.notes == ("#/properties/b: new optional property",)


def test_new_optional_property_under_an_open_object_constrains_a_free_key() -> None:
    # {"b": 5} was valid before (b fell under additionalProperties) and is refused now.
    assert breaks(obj({}), obj({"b": STRING})) == ("#/properties/b: new type constraint ['string']",)
    assert check_compatibility(obj({}), obj({"b": {}})).compatible is True
    assert breaks(obj({}, additionalProperties={"type": "string"}), obj({"b": {"type": "string", "maxLength": 3}})) == (
        "#/properties/b: new constraint maxLength=3",
    )


def test_removed_property_is_breaking() -> None:
    assert breaks(obj({"a": STRING, "b": STRING}), obj({"a": STRING})) == ("#/properties/b: property removed",)


@pytest.mark.parametrize(
    ("old", "new"),
    [("number", "integer"), (["string", "null"], "string"), ("string", "integer"), (["integer", "string"], ["number"])],
)
def test_narrowed_type_is_breaking(old: Any, new: Any) -> None:
    found = breaks(obj({"a": {"type": old}}), obj({"a": {"type": new}}))
    assert len(found) == 1 and found[0].startswith("#/properties/a: type narrowed")


@pytest.mark.parametrize(("old", "new"), [("integer", "number"), ("string", ["string", "null"])])
def test_widened_type_is_compatible(old: Any, new: Any) -> None:
    report = check_compatibility(obj({"a": {"type": old}}), obj({"a": {"type": new}}))
    assert report.compatible is True and "type widened" in report.notes[0]


def test_removed_enum_value_is_breaking_in_every_mode() -> None:
    old, new = {"enum": ["a", "b"]}, {"enum": ["a"]}
    for mode in ("strict", "tolerant", "manual_review"):
        assert breaks(old, new, mode) == ('#: enum value(s) removed: "b"',)


def test_added_enum_value_breaks_under_strict_only() -> None:
    old, new = {"enum": ["a"]}, {"enum": ["a", "b"]}
    assert check_compatibility(old, new, "strict").compatible is False
    tolerant = check_compatibility(old, new, "tolerant")
    assert tolerant.compatible is True and tolerant.notes == ('#: enum value(s) added: "b"',)


def test_enum_values_compare_as_json_numbers() -> None:
    assert check_compatibility({"enum": [1, {"k": 2}]}, {"enum": [1.0, {"k": 2.0}]}).compatible is True


@pytest.mark.parametrize(
    ("old_extra", "new_extra"),
    [(None, False), (True, False), ({}, False), (None, {"type": "string"}), (True, {"type": "string"}),
     ({"type": ["string", "integer"]}, {"type": "string"}), ({"type": "string"}, False)],
)
def test_tightened_additional_properties_is_breaking(old_extra: Any, new_extra: Any) -> None:
    old = obj({}) if old_extra is None else obj({}, additionalProperties=old_extra)
    found = breaks(old, obj({}, additionalProperties=new_extra))
    assert len(found) == 1 and found[0].startswith("#/additionalProperties:")


@pytest.mark.parametrize(("old_extra", "new_extra"), [(False, True), (False, {"type": "string"}), ({"type": "string"}, True)])
def test_loosened_additional_properties_is_compatible(old_extra: Any, new_extra: Any) -> None:
    assert check_compatibility(obj({}, additionalProperties=old_extra), obj({}, additionalProperties=new_extra)).compatible


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("minimum", 0), ("maximum", 10), ("exclusiveMinimum", 0), ("exclusiveMaximum", 10), ("multipleOf", 2),
     ("minLength", 1), ("maxLength", 64), ("pattern", "^a"), ("format", "email"), ("minItems", 1),
     ("maxItems", 3), ("uniqueItems", True), ("minProperties", 1), ("maxProperties", 2), ("minContains", 1),
     ("maxContains", 2), ("const", "x"), ("enum", ["x"]), ("type", "string"), ("anyOf", [STRING]), ("not", STRING)],
)
def test_new_constraint_is_breaking(keyword: str, value: Any) -> None:
    found = breaks(obj({"a": {}}), obj({"a": {keyword: value}}))
    assert len(found) == 1 and found[0].startswith("#/properties/a: new ")


@pytest.mark.parametrize(
    ("keyword", "old", "tighter", "looser"),
    [("minimum", 0, 1, -1), ("exclusiveMinimum", 0, 1, -1), ("maximum", 10, 9, 11), ("exclusiveMaximum", 10, 9, 11),
     ("minLength", 1, 2, 0), ("maxLength", 10, 9, 11), ("minItems", 1, 2, 0), ("maxItems", 5, 4, 6),
     ("minProperties", 1, 2, 0), ("maxProperties", 5, 4, 6)],
)
def test_tightened_bound_is_breaking_and_loosened_bound_is_a_note(keyword: str, old: int, tighter: int, looser: int) -> None:
    assert breaks({keyword: old}, {keyword: tighter}) == (f"#: {keyword} tightened from {old} to {tighter}",)
    report = check_compatibility({keyword: old}, {keyword: looser})
    assert report.compatible is True and report.notes == (f"#: {keyword} loosened from {old} to {looser}",)
    removed = check_compatibility({keyword: old}, {})
    assert removed.compatible is True and removed.notes == (f"#: {keyword} removed",)


def test_multiple_of_loosens_only_to_a_divisor_of_the_old_step() -> None:
    assert check_compatibility({"multipleOf": 4}, {"multipleOf": 2}).compatible is True
    assert check_compatibility({"multipleOf": 0.5}, {"multipleOf": 0.25}).compatible is True
    assert check_compatibility({"multipleOf": 2}, {"multipleOf": 4}).compatible is False
    assert check_compatibility({"multipleOf": 2}, {"multipleOf": 3}).compatible is False


@pytest.mark.parametrize("keyword", ["pattern", "format"])
def test_changed_pattern_or_format_is_breaking_because_containment_is_not_decided(keyword: str) -> None:
    assert check_compatibility({keyword: "a"}, {keyword: "b"}).compatible is False
    assert check_compatibility({keyword: "a"}, {}).compatible is True


def test_changed_const_is_breaking() -> None:
    assert check_compatibility({"const": 1}, {"const": 2}).compatible is False
    assert check_compatibility({"const": 1}, {"const": 1.0}).compatible is True


def test_nested_object_properties_are_compared_with_their_path() -> None:
    old = obj({"address": obj({"city": STRING, "zip": STRING})})
    new = obj({"address": obj({"city": {"type": "string", "maxLength": 5}}, ("city",))})
    assert breaks(old, new) == (
        "#/properties/address/properties/city: new constraint maxLength=5",
        "#/properties/address/properties/zip: property removed",
        "#/properties/address/properties/city: new required property",
    )


def test_array_items_are_compared() -> None:
    old = obj({"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}})
    new = obj({"tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}}})
    assert breaks(old, new) == ('#/properties/tags/items: enum value(s) removed: "b"',)
    assert breaks({"type": "array"}, {"type": "array", "items": {"type": "integer"}}) == (
        "#/items: new type constraint ['integer']",
    )


def test_property_names_with_slashes_are_escaped_in_the_path() -> None:
    assert breaks(obj({"a/b~c": STRING}), obj({})) == ("#/properties/a~1b~0c: property removed",)


@pytest.mark.parametrize(
    ("old", "new"),
    [({"anyOf": [STRING]}, {"anyOf": [STRING, {"type": "null"}]}), ({"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}),
     ({"patternProperties": {"^x": STRING}}, {}), ({"items": [STRING]}, {"items": [STRING, STRING]})],
)
def test_unanalysed_keyword_changes_are_assumed_breaking(old: Any, new: Any) -> None:
    found = breaks(old, new)
    assert found and ("not analysed" in found[0] or "assumed breaking" in found[0])


def test_annotations_never_break_and_a_changed_default_is_noted() -> None:
    old = {"type": "string", "description": "a", "title": "A", "examples": ["x"], "default": "x", "x-ui": 1}
    new = {"type": "string", "description": "b", "title": "B", "examples": ["y"], "default": "y", "x-ui": 2}
    assert check_compatibility(old, new) == CompatibilityReport(True, (), ("#: default changed",))


def test_boolean_schemas() -> None:
    assert check_compatibility(True, {"type": "string"}).compatible is False
    assert check_compatibility({"type": "string"}, True).compatible is True
    assert check_compatibility({"type": "string"}, False).breaking == ("#: now rejects every value (schema is false)",)
    assert check_compatibility(False, {"type": "string"}).compatible is True


def test_manual_review_reports_and_never_decides() -> None:
    old, new = obj({"a": STRING}), obj({})
    report = check_compatibility(old, new, "manual_review")
    assert report.compatible is None
    assert report.breaking == check_compatibility(old, new, "strict").breaking
    assert check_compatibility(old, old, "manual_review").compatible is None


def test_require_compatible_raises_a_value_error_carrying_the_report() -> None:
    old, new = obj({"a": STRING}), obj({})
    with pytest.raises(IncompatibleSchemaError, match="property removed") as raised:
        require_compatible(old, new, "tolerant")
    assert isinstance(raised.value, ValueError)
    assert raised.value.report == check_compatibility(old, new, "tolerant")
    assert require_compatible(old, new, "manual_review").compatible is None


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        check_compatibility({}, {}, "lenient")  # type: ignore[arg-type]


def test_deeply_nested_schemas_are_reported_not_crashed_on() -> None:
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(5000):
        cursor["items"] = {}
        cursor = cursor["items"]
    report = check_compatibility(deep, {})
    assert report.compatible is False and "too deeply" in report.breaking[0]


# ---------------------------------------------------------------- properties
@settings(max_examples=150)
@given(json_values, json_values)
def test_check_compatibility_never_raises_and_modes_agree(old: Any, new: Any) -> None:
    strict = check_compatibility(old, new, "strict")
    tolerant = check_compatibility(old, new, "tolerant")
    review = check_compatibility(old, new, "manual_review")
    assert strict.compatible is (not strict.breaking)
    assert tolerant.compatible is (not tolerant.breaking)
    assert set(tolerant.breaking) <= set(strict.breaking)
    assert review.compatible is None and review.breaking == strict.breaking


@given(json_values)
def test_any_schema_is_compatible_with_an_equal_copy(schema: Any) -> None:
    assert check_compatibility(schema, copy.deepcopy(schema)).compatible is True


NAMES = ("a", "b", "c")
VALUES = (-3, 0, 2, 2.5, "x", "y", None, True)
leaf_schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", ["string", "null"], ["integer", "string"]])},
    optional={
        "minimum": st.integers(-3, 3),
        "maximum": st.integers(-3, 3),
        "enum": st.lists(st.sampled_from(VALUES), min_size=1, max_size=4, unique_by=repr),
        "maxLength": st.integers(0, 2),
    },
)
object_schemas = st.builds(
    lambda props, required, closed: {
        "type": "object",
        "properties": props,
        "required": sorted(required & set(props)),
        **({"additionalProperties": False} if closed else {}),
    },
    st.dictionaries(st.sampled_from(NAMES), leaf_schemas, max_size=3),
    st.sets(st.sampled_from(NAMES)),
    st.booleans(),
)
instances = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VALUES), max_size=3)


@settings(max_examples=300)
@given(object_schemas, object_schemas, st.lists(instances, min_size=1, max_size=8))
def test_compatible_means_every_old_valid_argument_stays_valid(old: Any, new: Any, samples: list[Any]) -> None:
    # Soundness of the analysis: whatever it calls compatible, the validator agrees on these samples.
    if not check_compatibility(old, new, "strict").compatible:
        return
    old_validator, new_validator = jsonschema.Draft202012Validator(old), jsonschema.Draft202012Validator(new)
    for sample in samples:
        if old_validator.is_valid(sample):
            assert new_validator.is_valid(sample), (old, new, sample)
