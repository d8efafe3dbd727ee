"""A success-only fast path for the common shape of argument schemas.

Almost every tool schema is an object of typed properties: what pydantic writes
for a Python function (``{"type": "object", "properties": {"text": {"type":
"string"}}, "required": ["text"], "additionalProperties": false}``) and what
Microsoft.Extensions.AI writes for a C# method. jsonschema's full machinery
(``best_match(iter_errors(...))``) costs tens of microseconds per call even when
the arguments fit; the check compiled here answers "these arguments certainly
fit" in about one.

The rule that keeps it fail-closed: the compiled check can only ever say *yes,
valid*. Whenever it says anything else (the arguments do not fit, or it cannot
tell), :class:`~tether_clr.foundations.validation.ArgumentValidator` asks jsonschema, which
decides and writes the error message. And a schema is compiled only when every
keyword in it, at every level, is one of the few below, for the validator class
whose semantics they copy (Draft 2020-12, the default); any other keyword or
dialect gets no fast path at all. ``tests/foundations/test_schema_fastpath.py`` checks,
property-based, that the verdict equals jsonschema's on random schemas and values.

Supported keywords: ``type`` (a name or a list of names), ``properties``,
``required``, ``additionalProperties`` (a bool or a schema), ``items`` (one
schema), ``anyOf``, boolean schemas, and annotations that never fail a value
(``title``, ``description``, ``default``, ``examples``, ``format`` without a
format checker, ...).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

__all__ = ["Check", "compile_success_check"]

Check = Callable[[Any], bool]
"""True only when the value certainly fits the schema; False means "ask jsonschema"."""

# Keywords that never make a value invalid (the validator is built without a format checker).
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment", "format"}
)
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "anyOf"}) | _ANNOTATIONS
_TOP_LEVEL = _KEYWORDS | {"$schema"}


def _is_integer(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return True
    if kind is bool:
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


# Draft 6 and later (jsonschema's ``draft202012_type_checker``): an integral float is an integer.
_TYPES: dict[str, Check] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _type_check(declared: Any) -> Check | None:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(isinstance(name, str) and name in _TYPES for name in names):
        return None
    checks = tuple(_TYPES[name] for name in names)
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


def _object_check(schema: Mapping[str, Any], depth: int) -> Check | None:
    """``properties`` / ``required`` / ``additionalProperties`` together, in one pass over the value."""
    raw_properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(raw_properties, Mapping) or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    properties: dict[str, Check] = {}
    for name, subschema in raw_properties.items():
        check = _compile(subschema, depth + 1)
        if check is None:
            return None
        properties[name] = check
    extra_check = _compile(extra, depth + 1)
    if extra_check is None:
        return None
    needed = tuple(dict.fromkeys(required))
    lookup = properties.get

    def fits(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # object keywords ignore other types; "type" decides about them
        for key, item in value.items():
            check = lookup(key)
            if check is None:
                check = extra_check
            if not check(item):
                return False
        for name in needed:
            if name not in value:
                return False
        return True

    return fits


def _compile(schema: Any, depth: int) -> Check | None:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping) or depth > 32:
        return None
    allowed = _TOP_LEVEL if depth == 0 else _KEYWORDS
    if any(keyword not in allowed for keyword in schema):
        return None
    checks: list[Check] = []
    if "type" in schema:
        type_check = _type_check(schema["type"])
        if type_check is None:
            return None
        checks.append(type_check)
    if "anyOf" in schema:
        branches_raw = schema["anyOf"]
        if not isinstance(branches_raw, list) or not branches_raw:
            return None
        branches = [_compile(branch, depth + 1) for branch in branches_raw]
        if any(branch is None for branch in branches):
            return None
        found = tuple(b for b in branches if b is not None)
        checks.append(lambda value: any(branch(value) for branch in found))
    if "items" in schema:
        item_check = _compile(schema["items"], depth + 1)
        if item_check is None:
            return None
        checks.append(lambda value: not isinstance(value, list) or all(item_check(item) for item in value))
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        object_check = _object_check(schema, depth)
        if object_check is None:
            return None
        checks.append(object_check)
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    every = tuple(checks)
    return lambda value: all(check(value) for check in every)


def compile_success_check(schema: Mapping[str, Any], validator_class: type[Any]) -> Check | None:
    """The fast "certainly valid" check of ``schema``, or None when it has a keyword not supported here.

    Only for jsonschema's Draft 2020-12 validator (the library's default
    dialect); ``schema`` must already have passed that validator's
    ``check_schema``.
    """
    if validator_class is not jsonschema.Draft202012Validator:
        return None
    try:
        return _compile(schema, 0)
    except RecursionError:  # pragma: no cover - depth is bounded above
        return None
