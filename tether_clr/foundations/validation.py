"""JSON Schema checks of a tool's arguments, compiled once at registration.

Every reference must resolve inside the schema: nothing is ever retrieved, at
registration or per call. Arguments that fit a schema of the common shape are
recognised by the compiled fast path (:mod:`tether_clr.foundations.schema_fastpath`);
everything else, failures included, is decided by jsonschema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema
from jsonschema.exceptions import best_match
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing.exceptions import Unresolvable

from tether_clr.foundations.json_values import canonical_json, to_json_value
from tether_clr.foundations.schema_fastpath import compile_success_check
from tether_clr.foundations.text import describe_exception, safe_text

__all__ = ["ArgumentValidator"]

class _NoRetrieval(Exception):
    pass


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    raise _NoRetrieval(f"{uri} is not part of the schema and is never fetched")


def _check_references(resolver: "referencing._core.Resolver[Any]", resource: referencing.Resource[Any]) -> None:
    """Resolve every ``$ref`` / ``$dynamicRef`` of a schema now, with retrieval refused.

    Walks only real subschemas (``referencing`` knows which keywords hold them),
    so a ``"$ref"`` key inside ``const`` or ``enum`` data is not mistaken for one.
    """
    contents = resource.contents
    if isinstance(contents, Mapping):
        for keyword in ("$ref", "$dynamicRef"):
            ref = contents.get(keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    raise ValueError(
                        f"json_schema {keyword} {ref!r} does not resolve inside the schema "
                        "(remote references are refused; use $defs)"
                    ) from None
    for subresource in resource.subresources():
        _check_references(resolver.in_subresource(subresource), subresource)


class ArgumentValidator:
    """A compiled JSON-schema check for one tool's arguments.

    The schema is checked once, at registration, so a malformed schema is a
    registration error and never a per-call surprise. Every reference must
    resolve inside the schema (``#/$defs/...``, embedded ``$id`` s, the standard
    meta-schemas): nothing is ever retrieved, at registration or per call.
    """

    __slots__ = ("schema_json", "_validator", "_fits")

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
        dialect = plain.get("$schema")
        specification = referencing.jsonschema.specification_with(
            dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT202012
        )
        resource = specification.create_resource(plain)
        registry: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
        _check_references(SPECIFICATIONS.combine(registry).resolver_with_root(resource), resource)
        self.schema_json = canonical_json(plain)
        self._validator = cls(plain, registry=registry)
        # Says only "certainly valid"; every other answer, and every error message, comes from jsonschema.
        self._fits = compile_success_check(plain, cls)

    @property
    def has_fast_path(self) -> bool:
        """Arguments of this schema's shape are recognised by the compiled fast check
        (:mod:`tether_clr.foundations.schema_fastpath`) before jsonschema is asked."""
        return self._fits is not None

    @property
    def schema(self) -> dict[str, Any]:
        """A fresh copy of the checked schema (a JSON object)."""
        schema: dict[str, Any] = json.loads(self.schema_json)
        return schema

    def error_for(self, arguments: Any) -> str | None:
        """The most relevant validation error, or None when the arguments fit.

        Arguments that fit a schema of the common shape are recognised by the
        compiled fast check (:mod:`tether_clr.schema_fastpath`); everything
        else, failures included, is decided by jsonschema.

        Never raises: a keyword that cannot be evaluated on these values (``multipleOf``
        on an integer too large for a float, say) is itself a reason to refuse them,
        so it comes back as the error text (the caller's INVALID_ARGS), fail closed.
        """
        fits = self._fits
        try:
            if fits is not None and fits(arguments):
                return None
            error = best_match(self._validator.iter_errors(arguments))
        except Exception as exc:  # RecursionError and OverflowError included
            return f"arguments cannot be checked against the schema: {describe_exception(exc)}"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return safe_text(f"{where}: {error.message}" if where else error.message)

