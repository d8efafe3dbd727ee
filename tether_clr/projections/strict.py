"""Strict mode (OpenAI's and Anthropic's): a tool's parameters schema as strict mode accepts it, and the report of what could not be.

Strict mode (``"strict": true``) constrains a model's arguments to the schema,
but accepts only a subset of JSON Schema, with every object closed (and, on
OpenAI, every property required). :func:`strict_schema` converts a schema by
OpenAI's rules (``provider="openai"``, the default):

* every object gets ``additionalProperties: false``;
* every property is listed in ``required``; an optional one becomes nullable
  (``"type": ["integer", "null"]``, or ``anyOf`` with ``{"type": "null"}``);
  the pipeline reads the ``null`` a strict model then sends as absent
  (:meth:`ArgumentValidator.admit <tether_clr.foundations.validation.ArgumentValidator.admit>`);
* a ``$ref`` with sibling keywords is inlined (strict mode refuses the siblings);
  a bare local ``$ref`` and its ``$defs`` are kept, converted too.

Nothing is silently dropped. An annotation strict mode refuses (``default``,
``examples``, an unsupported ``format``...) is removed and reported
(``"dropped"``); a constraint it cannot express (``minLength``, ``oneOf``, an
open object...) makes the whole tool non-strict, reported (``"not_strict"``)
with the keyword and where it is. :class:`ProjectionReport` gathers the notes
of one projection. A dropped ``default`` is not lost for the model: it is
appended to the schema's ``description`` (``"How many. Default: 1."``, the
default as JSON), and still reported.

``provider="anthropic"`` follows Anthropic's structured-outputs subset instead:
objects are closed the same way, but optional properties stay optional (no
nullable rewrite), ``default`` is kept, the string formats are Anthropic's list
(``uri`` included), ``minItems`` may only be 0 or 1, and the numeric and
length constraints (``minimum``, ``maximum``, ``multipleOf``, ``minLength``,
``maxLength``, ``maxItems``) and recursive ``$ref`` s make a tool non-strict.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ProjectionNote", "ProjectionReport", "StrictProvider", "StrictSchema", "strict_schema"]

NoteAction = Literal["dropped", "not_strict"]
StrictProvider = Literal["openai", "anthropic"]

_KEPT = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "definitions", "description", "title",
    "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems",
})
"""Keywords strict mode accepts (OpenAI's structured-outputs list)."""

_ANNOTATIONS = frozenset({"default", "examples", "$comment", "readOnly", "writeOnly", "deprecated", "$schema", "contentMediaType", "contentEncoding"})
"""Keywords that describe without constraining: removed, and reported, when strict mode refuses them."""

_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""The string formats strict mode accepts."""

_ANTHROPIC_KEPT = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "definitions", "description", "title", "pattern", "format", "default", "minItems",
})
"""Keywords Anthropic's strict tool use accepts (its structured-outputs JSON Schema subset)."""

_ANTHROPIC_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"})


@dataclass(frozen=True, slots=True)
class _Rules:
    """Where two providers' strict modes differ."""

    kept: frozenset[str]
    annotations: frozenset[str]
    formats: frozenset[str]
    all_required: bool  # OpenAI: every property required, an optional one nullable
    recursion: bool  # whether a recursive $ref is accepted
    min_items_max: int | None  # the largest minItems accepted (None: any)


_RULES: dict[str, _Rules] = {
    "openai": _Rules(_KEPT, _ANNOTATIONS, _FORMATS, all_required=True, recursion=True, min_items_max=None),
    "anthropic": _Rules(_ANTHROPIC_KEPT, _ANNOTATIONS - {"default"}, _ANTHROPIC_FORMATS, all_required=False, recursion=False, min_items_max=1),
}

_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class ProjectionNote:
    """One thing a projection could not carry as it is: which tool, which keyword, where, and what was done.

    ``path`` is a JSON pointer into the tool's original parameters schema
    (``""`` for the root); ``action`` is ``"dropped"`` (an annotation removed,
    meaning unchanged) or ``"not_strict"`` (the tool is projected non-strict).
    """

    tool: str
    keyword: str
    path: str
    action: NoteAction
    detail: str


@dataclass(frozen=True, slots=True)
class ProjectionReport:
    """What one projection reported, in the assembly's order: every note, and the tools projected non-strict."""

    notes: tuple[ProjectionNote, ...] = ()

    @property
    def not_strict(self) -> tuple[str, ...]:
        """The tools projected non-strict (strict was asked), each once, in order."""
        return tuple(dict.fromkeys(note.tool for note in self.notes if note.action == "not_strict"))

    @property
    def dropped(self) -> tuple[ProjectionNote, ...]:
        """The annotations removed from strict schemas."""
        return tuple(note for note in self.notes if note.action == "dropped")

    def for_tool(self, name: str) -> tuple[ProjectionNote, ...]:
        return tuple(note for note in self.notes if note.tool == name)

    def __bool__(self) -> bool:
        return bool(self.notes)


@dataclass(frozen=True, slots=True)
class StrictSchema:
    """:func:`strict_schema`'s answer: the strict schema (``None`` when the schema cannot be strict) and the notes.

    Each note is ``(keyword, path, action, detail)``; a projection names the tool.
    """

    schema: dict[str, Any] | None
    notes: tuple[tuple[str, str, NoteAction, str], ...]


class _NotStrict(Exception):
    pass


def _pointer(path: str, *tokens: str | int) -> str:
    for token in tokens:
        path += "/" + str(token).replace("~", "~0").replace("/", "~1")
    return path


def _accepts_null(schema: Any) -> bool:
    """Whether a (converted) schema visibly accepts null: ``type`` naming null, an ``anyOf`` branch that does, null in ``enum``/``const``."""
    if not isinstance(schema, dict):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return "enum" not in schema or None in schema["enum"]
    if "enum" in schema and None in schema["enum"] and "type" not in schema:
        return True
    if "const" in schema and schema["const"] is None:
        return True
    return any(_accepts_null(branch) for branch in schema.get("anyOf", ()))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _accepts_null(schema):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str | list) and not ({"enum", "const", "$ref", "anyOf"} & schema.keys()):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        return {**schema, "type": [*kinds, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _with_default_described(out: dict[str, Any], default: Any) -> None:
    """Append ``Default: <JSON>.`` to ``out``'s description (a sentence after any it has)."""
    try:
        shown = json.dumps(default, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        shown = repr(default)
    description = out.get("description")
    text = description.rstrip() if isinstance(description, str) else ""
    if text and not text.endswith((".", "!", "?")):
        text += "."
    out["description"] = f"{text} Default: {shown}." if text else f"Default: {shown}."


def _refs(node: Any) -> set[str]:
    """Every ``$ref`` string under ``node``."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _recursive_ref(root: dict[str, Any]) -> str | None:
    """A local ``$ref`` that reaches itself again (a recursive schema), or ``None``."""
    targets: dict[str, Any] = {}
    for defs in ("$defs", "definitions"):
        if isinstance(root.get(defs), dict):
            for name, sub in root[defs].items():
                targets[f"#/{defs}/{name}"] = sub
    edges = {ref: _refs(sub) for ref, sub in targets.items()}
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            ref = stack.pop()
            if ref == start or ref == "#":
                return start
            if ref not in seen:
                seen.add(ref)
                stack.extend(edges.get(ref, ()))
    return "#" if "#" in _refs(root) else None


class _Converter:
    def __init__(self, root: dict[str, Any], rules: _Rules) -> None:
        self.root = root
        self.rules = rules
        self.notes: list[tuple[str, str, NoteAction, str]] = []

    def refuse(self, keyword: str, path: str, detail: str) -> None:
        self.notes.append((keyword, path, "not_strict", detail))
        raise _NotStrict

    def drop(self, keyword: str, path: str, detail: str) -> None:
        self.notes.append((keyword, path, "dropped", detail))

    def resolve(self, ref: str, path: str) -> Any:
        if not ref.startswith("#/"):
            self.refuse("$ref", path, f"{ref!r} is not a local reference (#/...)")
        target: Any = self.root
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or token not in target:
                self.refuse("$ref", path, f"{ref!r} does not resolve")
            target = target[token]
        return target

    def convert(self, node: Any, path: str, depth: int, root: bool = False) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            self.refuse("$ref", path, "references nest too deep to inline")
        if node is True or node == {}:
            self.refuse("{}", path, "a schema that accepts anything cannot be strict")
        if not isinstance(node, dict):
            self.refuse("false", path, "a schema that accepts nothing cannot be strict")
        if "$ref" in node and len(node) > 1:  # strict mode refuses siblings of $ref: inline the target
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            target = self.resolve(node["$ref"], path)
            if not isinstance(target, dict):
                self.refuse("$ref", path, "the reference's target is not a schema object")
            return self.convert({**target, **siblings}, path, depth + 1)
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:  # one allOf branch: the same schema
            rest = {k: v for k, v in node.items() if k != "allOf"}
            return self.convert({**node["allOf"][0], **rest} if isinstance(node["allOf"][0], dict) else node, path, depth + 1)
        out: dict[str, Any] = {}
        rules = self.rules
        for keyword, value in node.items():
            if keyword in rules.annotations:
                if keyword == "default":
                    self.drop(keyword, _pointer(path, keyword), "strict mode does not accept 'default'; removed, and said in the description")
                else:
                    self.drop(keyword, _pointer(path, keyword), f"strict mode does not accept {keyword!r}; removed (it only describes)")
            elif keyword == "format" and value not in rules.formats:
                self.drop(keyword, _pointer(path, keyword), f"strict mode does not accept format {value!r}; removed")
            elif keyword not in rules.kept:
                self.refuse(keyword, _pointer(path, keyword), f"strict mode does not support {keyword!r}")
            elif keyword == "minItems" and rules.min_items_max is not None and not (
                    isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= rules.min_items_max):
                self.refuse(keyword, _pointer(path, keyword), f"strict mode supports minItems of 0 to {rules.min_items_max} only, got {value!r}")
            else:
                out[keyword] = value
        if "default" in node and "default" in rules.annotations:
            _with_default_described(out, node["default"])
        if "$ref" in out:
            self.resolve(out["$ref"], path)  # a bare local reference stays; its target is converted with the $defs
        for defs in ("$defs", "definitions"):
            if defs in out:
                if not isinstance(out[defs], dict):
                    self.refuse(defs, _pointer(path, defs), f"{defs} must be an object")
                out[defs] = {name: self.convert(sub, _pointer(path, defs, name), depth + 1) for name, sub in out[defs].items()}
        if "anyOf" in out:
            if root:
                self.refuse("anyOf", _pointer(path, "anyOf"), "the root of a strict schema cannot be anyOf")
            out["anyOf"] = [self.convert(sub, _pointer(path, "anyOf", i), depth + 1) for i, sub in enumerate(out["anyOf"])]
        if "items" in out:
            if not isinstance(out["items"], dict):
                self.refuse("items", _pointer(path, "items"), "only one items schema (an object) is supported")
            out["items"] = self.convert(out["items"], _pointer(path, "items"), depth + 1)
        kind = out.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in out:
            self.close_object(out, path, depth, root)
        return out

    def close_object(self, out: dict[str, Any], path: str, depth: int, root: bool) -> None:
        extra = out.get("additionalProperties")
        properties = out.get("properties")
        if extra not in (False, None):  # absent: closed, as OpenAI's rules say; an explicit opening cannot be
            self.refuse("additionalProperties", _pointer(path, "additionalProperties"),
                        "an object open to other properties cannot be strict (strict objects are closed)")
        if properties is None and not root and extra is None:
            self.refuse("properties", path, "a free-form object (no properties) cannot be strict")
        properties = properties or {}
        if not isinstance(properties, dict):
            self.refuse("properties", _pointer(path, "properties"), "properties must be an object")
        required = out.get("required", [])
        required = set(required) if isinstance(required, list) else set()
        converted: dict[str, Any] = {}
        for name, sub in properties.items():
            schema = self.convert(sub, _pointer(path, "properties", name), depth + 1)
            converted[name] = schema if name in required or not self.rules.all_required else _nullable(schema)
        out["properties"] = converted
        if self.rules.all_required:
            out["required"] = list(converted)
        elif "required" in out:
            out["required"] = [name for name in out["required"] if name in converted] if isinstance(out["required"], list) else []
        out["additionalProperties"] = False


def strict_schema(schema: Mapping[str, Any], provider: StrictProvider = "openai") -> StrictSchema:
    """``schema`` converted to ``provider``'s strict mode (OpenAI's, or Anthropic's), or
    ``StrictSchema(None, notes)`` when it cannot be.

    The input is never changed; the answer is a fresh copy.
    """
    if provider not in _RULES:
        raise ValueError(f'provider must be "openai" or "anthropic", got {provider!r}')
    root = copy.deepcopy(dict(schema))
    converter = _Converter(root, _RULES[provider])
    if not converter.rules.recursion:
        recursive = _recursive_ref(root)
        if recursive is not None:
            return StrictSchema(None, (("$ref", "", "not_strict", f"{recursive!r} is recursive; strict mode does not support recursive schemas"),))
    try:
        converted = converter.convert(root, "", 0, root=True)
    except _NotStrict:  # projected as it is: nothing was dropped, only the refusal is reported
        return StrictSchema(None, tuple(note for note in converter.notes if note[2] == "not_strict"))
    except RecursionError:
        return StrictSchema(None, (*converter.notes, ("$ref", "", "not_strict", "the schema nests too deep")))
    return StrictSchema(converted, tuple(converter.notes))
