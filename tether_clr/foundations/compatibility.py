"""Schema compatibility between two versions of one tool's parameters.

The question answered: *does every argument object that the old schema accepts
still get accepted by the new one, meaning the same thing?* A model (or a
prompt, or a cached plan) that learnt the old version keeps sending old-valid
arguments; a change that rejects some of them is **breaking**. The checks:

* a new required property; a removed property;
* a narrowed ``type`` (``integer`` is inside ``number``, so integer -> number widens);
* a removed ``enum`` value, a new or changed ``const``;
* a tightened ``additionalProperties`` (open -> schema -> ``false``);
* a new constraint or a tightened one: ``minimum``/``maximum`` and their
  exclusive forms, ``minLength``/``maxLength``, ``minItems``/``maxItems``,
  ``minProperties``/``maxProperties``, ``minContains``/``maxContains``,
  ``multipleOf``, ``uniqueItems``, ``pattern``, ``format``, a new ``type`` or
  ``enum`` where there was none;
* an **added** ``enum`` value: breaking under ``mode="strict"`` (whoever
  consumes the value may match it exhaustively), a note under ``"tolerant"``.

It recurses into ``properties``, ``additionalProperties`` (when a schema),
``items`` (when a schema) and boolean schemas. ``"manual_review"`` reports what
``strict`` would call breaking and never decides: its ``compatible`` is
``None`` (neither a yes a caller could rely on nor a refusal), so a registry
refuses exactly when ``compatible is False``.

Limits, stated so nobody relies on more: ``$ref`` is not resolved; composition
and conditional keywords (``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``),
``patternProperties``, ``propertyNames``, ``dependent*``, ``prefixItems``, tuple
``items``, ``contains``, ``unevaluated*``, ``$defs`` and any keyword not listed
above are compared as opaque values: any difference (added, changed or removed)
is reported breaking, because it cannot be shown harmless (fail closed).
Whether one ``pattern`` or ``format`` contains another is not decided: a changed
one is breaking. A new optional property is compared with what governed that
key before (``additionalProperties``): under a closed object it is compatible,
under an open one its constraints are new constraints (an argument the old
schema let through under that key may now be refused). Annotations
(``title``, ``description``, ``examples``, ``default``, ``$comment``,
``deprecated``, ``readOnly``, ``writeOnly``, ``$schema``, ``$id``, and ``x-*``
extensions) never break; a changed ``default`` is noted.

Floor 1: no imports from higher floors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from tether_clr.foundations.canonical import canonical_bytes

__all__ = [
    "COMPATIBILITY_MODES",
    "CompatibilityMode",
    "CompatibilityReport",
    "IncompatibleSchemaError",
    "check_compatibility",
    "require_compatible",
]

CompatibilityMode = Literal["strict", "tolerant", "manual_review"]
COMPATIBILITY_MODES: tuple[CompatibilityMode, ...] = ("strict", "tolerant", "manual_review")


@dataclass(frozen=True, slots=True)
class CompatibilityReport:
    """The verdict on one schema change.

    ``compatible`` is ``True`` or ``False`` under ``strict`` and ``tolerant``
    (``False`` exactly when ``breaking`` is not empty) and always ``None`` under
    ``manual_review``, which lists what it found but leaves the decision to a
    person. ``breaking`` and ``notes`` are human-readable lines, each starting
    with the subschema concerned as a JSON-pointer fragment (``#`` is the root,
    ``#/properties/city`` a property).
    """

    compatible: bool | None
    breaking: tuple[str, ...]
    notes: tuple[str, ...]


class IncompatibleSchemaError(ValueError):
    """A schema change was refused; ``report`` says why."""

    def __init__(self, message: str, report: CompatibilityReport) -> None:
        super().__init__(message)
        self.report = report


_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly", "$schema", "$id"}
)
# Keywords analysed here; everything else is compared as an opaque value.
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_OPAQUE_WHEN_CHANGED = ("pattern", "format")
_STRUCTURAL = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "multipleOf", "uniqueItems"}
)
_MAX_DEPTH = 64  # JSON-pointer segments; deeper differences are reported, not recursed into
_ANALYSED = _STRUCTURAL | set(_LOWER_BOUNDS) | set(_UPPER_BOUNDS) | set(_OPAQUE_WHEN_CHANGED)


def _key(value: Any) -> bytes:
    """Equality of JSON values as JSON means it (``1 == 1.0``, key order irrelevant).

    A value nested too deeply to canonicalize gets a key of its own, so it
    compares unequal to everything (a difference we cannot rule out is breaking).
    """
    try:
        try:
            return canonical_bytes(value)
        except ValueError:
            return json.dumps(value, sort_keys=True, default=repr).encode()
    except RecursionError:
        return b"\x00unanalysable:%d" % id(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    declared = schema.get("type")
    if declared is None:
        return None
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return frozenset(declared)
    return frozenset({repr(declared)})  # malformed: compared as an opaque token


def _pointer(path: str, *parts: str) -> str:
    return path + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


class _Comparison:
    def __init__(self, mode: CompatibilityMode) -> None:
        self.mode = mode
        self.breaking: list[str] = []
        self.notes: list[str] = []

    def breaks(self, path: str, message: str) -> None:
        self.breaking.append(f"#{path}: {message}")

    def note(self, path: str, message: str) -> None:
        self.notes.append(f"#{path}: {message}")

    # ---------------------------------------------------------------- schemas
    def schema(self, old: Any, new: Any, path: str) -> None:
        if path.count("/") > _MAX_DEPTH:
            if _key(old) != _key(new):
                self.breaks(path, "nested too deeply to analyse; changed, assumed breaking")
            return
        if old is False:
            if new is not False:
                self.note(path, "accepted nothing before; now accepts values")
            return
        if new is False:
            self.breaks(path, "now rejects every value (schema is false)")
            return
        old_map = {} if old is True else old
        new_map = {} if new is True else new
        if not isinstance(old_map, Mapping) or not isinstance(new_map, Mapping):
            if _key(old_map) != _key(new_map):
                self.breaks(path, "not a schema object; changed, assumed breaking")
            return
        self.types(old_map, new_map, path)
        self.enum(old_map, new_map, path)
        self.const(old_map, new_map, path)
        self.bounds(old_map, new_map, path)
        self.multiple_of(old_map, new_map, path)
        self.unique_items(old_map, new_map, path)
        self.opaque_strings(old_map, new_map, path)
        self.object_shape(old_map, new_map, path)
        if "items" in old_map or "items" in new_map:
            self.subschema(old_map.get("items", True), new_map.get("items", True), _pointer(path, "items"))
        self.other_keywords(old_map, new_map, path)

    def subschema(self, old: Any, new: Any, path: str) -> None:
        # A JSON list in "items" is the draft-4..7 tuple form: compared opaquely.
        if isinstance(old, list) or isinstance(new, list):
            if _key(old) != _key(new):
                self.breaks(path, "tuple form changed; not analysed, assumed breaking")
            return
        self.schema(old, new, path)

    # --------------------------------------------------------------- keywords
    def types(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        old_types, new_types = _types(old), _types(new)
        if new_types is None:
            if old_types is not None:
                self.note(path, "type constraint removed")
            return
        if old_types is None:
            self.breaks(path, f"new type constraint {sorted(new_types)}")
            return
        lost = sorted(t for t in old_types if t not in new_types and not (t == "integer" and "number" in new_types))
        if lost:
            self.breaks(path, f"type narrowed: no longer accepts {lost}")
        elif new_types != old_types:
            self.note(path, f"type widened to {sorted(new_types)}")

    def enum(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        old_enum, new_enum = old.get("enum"), new.get("enum")
        if new_enum is None:
            if old_enum is not None:
                self.note(path, "enum constraint removed")
            return
        if not isinstance(new_enum, list) or (old_enum is not None and not isinstance(old_enum, list)):
            if old_enum is None or _key(old_enum) != _key(new_enum):
                self.breaks(path, "enum changed (not a list); assumed breaking")
            return
        if old_enum is None:
            self.breaks(path, "new enum constraint")
            return
        old_values = {_key(v): v for v in old_enum}
        new_values = {_key(v): v for v in new_enum}
        removed = [old_values[k] for k in old_values if k not in new_values]
        added = [new_values[k] for k in new_values if k not in old_values]
        if removed:
            self.breaks(path, f"enum value(s) removed: {_show(removed)}")
        if added:
            if self.mode == "tolerant":
                self.note(path, f"enum value(s) added: {_show(added)}")
            else:
                self.breaks(path, f"enum value(s) added: {_show(added)} (breaking under strict)")

    def in_both(self, old: Mapping[str, Any], new: Mapping[str, Any], keyword: str, path: str) -> tuple[Any, Any] | None:
        """A constraint that appeared breaks, one that went away is a note; both values when it is in both."""
        if keyword not in new:
            if keyword in old:
                self.note(path, f"{keyword} removed")
            return None
        if keyword not in old:
            self.breaks(path, f"new constraint {keyword}={new[keyword]!r}")
            return None
        return old[keyword], new[keyword]

    def const(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        values = self.in_both(old, new, "const", path)
        if values is not None and _key(values[0]) != _key(values[1]):
            self.breaks(path, f"const changed from {_show([values[0]])} to {_show([values[1]])}")

    def bounds(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        for keyword in _LOWER_BOUNDS + _UPPER_BOUNDS:
            values = self.in_both(old, new, keyword, path)
            if values is None:
                continue
            old_bound, new_bound = values
            if not (_is_number(old_bound) and _is_number(new_bound)):
                # e.g. draft-4 boolean exclusiveMinimum: compared opaquely.
                if _key(old_bound) != _key(new_bound):
                    self.breaks(path, f"{keyword} changed ({old_bound!r} -> {new_bound!r}); assumed breaking")
                continue
            tighter = new_bound > old_bound if keyword in _LOWER_BOUNDS else new_bound < old_bound
            if tighter:
                self.breaks(path, f"{keyword} tightened from {old_bound!r} to {new_bound!r}")
            elif new_bound != old_bound:
                self.note(path, f"{keyword} loosened from {old_bound!r} to {new_bound!r}")

    def multiple_of(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        values = self.in_both(old, new, "multipleOf", path)
        if values is None:
            return
        old_step, new_step = values
        if _key(old_step) == _key(new_step):
            return
        # Every multiple of old is a multiple of new exactly when old/new is an integer.
        if _is_number(old_step) and _is_number(new_step) and new_step > 0 and old_step > 0:
            if (Fraction(old_step) / Fraction(new_step)).denominator == 1:
                self.note(path, f"multipleOf loosened from {old_step!r} to {new_step!r}")
                return
        self.breaks(path, f"multipleOf changed from {old_step!r} to {new_step!r}")

    def unique_items(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        was, now = old.get("uniqueItems") is True, new.get("uniqueItems") is True
        if now and not was:
            self.breaks(path, "new constraint uniqueItems")
        elif was and not now:
            self.note(path, "uniqueItems removed")

    def opaque_strings(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        for keyword in _OPAQUE_WHEN_CHANGED:
            values = self.in_both(old, new, keyword, path)
            if values is not None and _key(values[0]) != _key(values[1]):
                self.breaks(path, f"{keyword} changed ({values[0]!r} -> {values[1]!r}); containment not decided")

    def object_shape(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        old_props = old.get("properties", {})
        new_props = new.get("properties", {})
        if not isinstance(old_props, Mapping) or not isinstance(new_props, Mapping):
            if _key(old_props) != _key(new_props):
                self.breaks(_pointer(path, "properties"), "not an object; changed, assumed breaking")
            old_props, new_props = {}, {}
        old_extra = old.get("additionalProperties", True)
        for name, old_sub in old_props.items():
            where = _pointer(path, "properties", name)
            if name not in new_props:
                self.breaks(where, "property removed")
            else:
                self.schema(old_sub, new_props[name], where)
        old_required = _string_set(old.get("required"))
        new_required = _string_set(new.get("required"))
        for name, new_sub in new_props.items():
            if name not in old_props and name not in new_required:
                where = _pointer(path, "properties", name)
                self.note(where, "new optional property")
                if old_extra is not False:
                    # Before, additionalProperties governed this key: compare against that.
                    self.schema(old_extra, new_sub, where)
        for name in sorted(new_required - old_required):
            self.breaks(_pointer(path, "properties", name), "new required property")
        for name in sorted(old_required - new_required):
            self.note(_pointer(path, "properties", name), "no longer required")
        self.additional_properties(old, new, path)

    def additional_properties(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        if "additionalProperties" not in old and "additionalProperties" not in new:
            return
        old_extra = old.get("additionalProperties", True)
        new_extra = new.get("additionalProperties", True)
        where = _pointer(path, "additionalProperties")
        if new_extra is False and old_extra is not False:
            self.breaks(where, "tightened: additional properties are now refused")
            return
        if isinstance(new_extra, Mapping) and new_extra and (old_extra is True or old_extra == {}):
            self.breaks(where, "tightened: additional properties are now constrained by a schema")
            return
        self.schema(old_extra, new_extra, where)

    def other_keywords(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        for keyword in sorted(set(old) | set(new), key=str):
            if keyword in _ANALYSED or keyword in _ANNOTATIONS or str(keyword).startswith("x-"):
                if keyword == "default" and "default" in old and "default" in new:
                    if _key(old["default"]) != _key(new["default"]):
                        self.note(path, "default changed")
                continue
            if keyword not in new:
                self.breaks(path, f"{keyword} removed; not analysed, assumed breaking")
            elif keyword not in old:
                self.breaks(path, f"new constraint {keyword}; not analysed, assumed breaking")
            elif _key(old[keyword]) != _key(new[keyword]):
                self.breaks(path, f"{keyword} changed; not analysed, assumed breaking")


def _string_set(value: Any) -> frozenset[str]:
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


def _show(values: list[Any]) -> str:
    return ", ".join(json.dumps(v, sort_keys=True, default=repr) for v in values)


def check_compatibility(
    old_schema: Mapping[str, Any] | bool,
    new_schema: Mapping[str, Any] | bool,
    mode: CompatibilityMode = "strict",
) -> CompatibilityReport:
    """Compare two versions of a parameters schema (see the module docstring for the rules).

    Pure and total over JSON values: it never raises for a strange schema, it
    reports an unanalysable difference as breaking instead.
    """
    if mode not in COMPATIBILITY_MODES:
        raise ValueError(f"mode must be one of {COMPATIBILITY_MODES}, got {mode!r}")
    comparison = _Comparison(mode)
    comparison.schema(old_schema, new_schema, "")
    breaking, notes = tuple(comparison.breaking), tuple(comparison.notes)
    if mode == "manual_review":
        return CompatibilityReport(None, breaking, notes + ("#: manual_review: reported, not decided",))
    return CompatibilityReport(not breaking, breaking, notes)


def require_compatible(
    old_schema: Mapping[str, Any] | bool,
    new_schema: Mapping[str, Any] | bool,
    mode: CompatibilityMode = "strict",
) -> CompatibilityReport:
    """:func:`check_compatibility`, raising :class:`IncompatibleSchemaError` when it says ``False``.

    What a registry calls before accepting a new version of the same major
    version; ``manual_review`` never raises.
    """
    report = check_compatibility(old_schema, new_schema, mode)
    if report.compatible is False:
        raise IncompatibleSchemaError("incompatible schema change: " + "; ".join(report.breaking), report)
    return report
