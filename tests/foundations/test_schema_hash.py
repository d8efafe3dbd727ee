"""schema_hash: SHA-256 over the RFC 8785 canonical form."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.json_strategies import json_objects
from tether_clr import schema_hash


def respell(value: Any, rng: random.Random) -> str:
    """JSON text for ``value`` with keys in a random order and numbers spelt in random, equivalent ways."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        spellings = [str(value), f"{value}.0", f"{value}e0"] + ([f"{value}0E-1"] if value else [])
        return rng.choice(spellings)
    if isinstance(value, float):
        return rng.choice([repr(value), "%.17g" % value, "%.17e" % value])
    if isinstance(value, list):
        return "[" + ", ".join(respell(v, rng) for v in value) + "]"
    keys = list(value)
    rng.shuffle(keys)
    return "{" + ",\n ".join(f"{json.dumps(k)} : {respell(value[k], rng)}" for k in keys) + "}"


def test_schema_hash_is_sha256_of_the_rfc8785_form() -> None:
    schema = {"type": "object", "properties": {"b": {"minimum": 1.0}, "a": {"type": "string"}}}
    canonical = b'{"properties":{"a":{"type":"string"},"b":{"minimum":1}},"type":"object"}'
    assert schema_hash(schema) == "sha256:" + hashlib.sha256(canonical).hexdigest()


@given(json_objects, st.randoms(use_true_random=False))
def test_schema_hash_ignores_key_order_and_number_spelling(schema: dict[str, Any], rng: random.Random) -> None:
    text = respell(schema, rng)
    assert schema_hash(json.loads(text)) == schema_hash(schema)


def test_schema_hash_changes_with_meaning() -> None:
    base = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert schema_hash(base) != schema_hash({"type": "object", "properties": {"n": {"type": "number"}}})
    assert schema_hash(base) != schema_hash({**base, "description": "x"})
    assert schema_hash({"v": True}) != schema_hash({"v": 1})


@pytest.mark.parametrize("bad", [{"n": float("nan")}, {"n": float("inf")}, {"n": 2**60 + 1}, {"n": object()}])
def test_schema_hash_refuses_values_without_a_canonical_form(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="RFC 8785"):
        schema_hash(bad)


def test_schema_hash_takes_a_mapping() -> None:
    with pytest.raises(TypeError):
        schema_hash(["type", "object"])  # type: ignore[arg-type]


def test_large_integers_hash_as_the_double_they_equal() -> None:
    # JSON text "9007199254740992" parses to an int, "9007199254740992.0" to a float: one number.
    assert schema_hash({"max": 2**53}) == schema_hash({"max": float(2**53)})
    with pytest.raises(ValueError, match="RFC 8785"):
        schema_hash({"max": 2**53 + 1})  # no double holds it: refusing beats hashing a rounded value
