"""JSON at the pipeline's edges: canonical text, detached values, argument validation.

Everything a stage hands to another stage goes through canonical JSON text, so a
listener that mutates the dict it was given cannot change what the tool, the
sink or the next listener sees.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = [
    "ArgumentValidator",
    "InvalidArgumentsJson",
    "ToolSchemaSnapshot",
    "canonical_json",
    "detach",
    "parse_arguments",
    "to_json_text",
    "to_json_value",
]


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, no NaN, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def to_json_text(value: Any) -> str:
    """Canonical JSON text of ``value``, converting what pydantic knows how to convert.

    Models, dataclasses, enums, datetimes and the like become what a user
    expects; anything that still is not JSON (NaN, arbitrary objects) raises
    ``TypeError`` so the caller can turn it into a stable failure.
    """
    try:
        plain = to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise TypeError(f"value of type {type(value).__name__} is not JSON-serializable: {exc}") from None
    try:
        return canonical_json(plain)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"value is not JSON-serializable: {exc}") from None


def to_json_value(value: Any) -> Any:
    """A detached, JSON-compatible copy of ``value`` (see :func:`to_json_text`)."""
    return json.loads(to_json_text(value))


def detach(value: Any) -> Any:
    """A deep copy of an already JSON-compatible value (cheaper than deepcopy)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value))


class InvalidArgumentsJson(ValueError):
    """The model's raw argument text is not one JSON object."""


def _reject_constant(name: str) -> Any:
    raise InvalidArgumentsJson(f"{name} is not valid JSON")


def parse_arguments(raw: str) -> dict[str, Any]:
    """Parse a model's raw arguments; empty text means no arguments.

    Models often send ``""`` for parameterless tools, so blank text is ``{}``.
    Anything else must be a single JSON object, without NaN or Infinity.
    """
    if not isinstance(raw, str):
        raise InvalidArgumentsJson(f"arguments must be JSON text, got {type(raw).__name__}")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentsJson(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidArgumentsJson(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


class ToolSchemaSnapshot(BaseModel):
    """What the model is told about one tool; a detached copy every time it is read."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ArgumentValidator:
    """A compiled JSON-schema check for one tool's arguments.

    The schema is checked once, at registration, so a malformed schema is a
    registration error and never a per-call surprise.
    """

    __slots__ = ("schema_json", "_validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise TypeError(f"json_schema must be a mapping, got {type(schema).__name__}")
        plain = to_json_value(dict(schema))
        if "type" not in plain:  # MEAI's default AIFunction schema is {}: no "type" means any object
            plain = {"type": "object", **plain}
        if plain["type"] != "object":
            raise ValueError(f'json_schema must be a JSON object schema ("type": "object"), got {plain["type"]!r}')
        cls = jsonschema.validators.validator_for(plain, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(plain)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"json_schema is not a valid JSON schema: {exc.message}") from None
        self.schema_json = canonical_json(plain)
        self._validator = cls(plain)

    @property
    def schema(self) -> dict[str, Any]:
        return json.loads(self.schema_json)

    def error_for(self, arguments: Any) -> str | None:
        """The most relevant validation error, or None when the arguments fit."""
        error = best_match(self._validator.iter_errors(arguments))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
