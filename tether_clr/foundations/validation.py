"""JSON Schema checks of a tool's arguments, compiled once at registration.

Every reference must resolve inside the schema: nothing is ever retrieved, at
registration or per call.

Strict-mode nulls (:meth:`ArgumentValidator.admit`): OpenAI's strict mode makes
every property required and every optional one nullable, so a strict model sends
``null`` for each optional property it leaves out. When the arguments as sent do
not fit, each ``null`` given for an optional property whose own schema refuses
null is read as absent, at any depth; the arguments without those keys are
admitted only if they then fit. Arguments that fit as sent are never changed. Arguments that fit a schema of the common shape are
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


class _WalkTooLong(Exception):
    """The strict-null walk ran out of its budget (a schema whose references branch without end)."""


_WALK_BUDGET = 100_000
"""Schema nodes the strict-null walk may visit for one call; past it, nothing is read as absent."""


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

    __slots__ = ("schema_json", "_validator", "_fits", "_root")

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
        self._root = plain
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


    def admit(self, arguments: Any) -> tuple[Any, str | None]:
        """``(arguments to run with, None)``, or ``(arguments, error)`` when they do not fit.

        Arguments that fit are returned as they are. Otherwise, when removing each
        ``null`` given for an optional property whose schema refuses null (the
        strict-mode nulls, at any depth: :meth:`without_refused_nulls`) makes them
        fit, that copy is admitted; else the error is what is wrong with that copy
        (the nulls read as absent are not the problem), and the arguments stay as sent.
        """
        error = self.error_for(arguments)
        if error is None:
            return arguments, None
        cleaned = self.without_refused_nulls(arguments)
        if cleaned is None:
            return arguments, error
        cleaned_error = self.error_for(cleaned)
        if cleaned_error is None:
            return cleaned, None
        return arguments, cleaned_error  # what is wrong besides the nulls read as absent

    def without_refused_nulls(self, arguments: Any) -> Any | None:
        """A copy of ``arguments`` without each ``null`` the schema refuses for an optional property, or ``None`` if none.

        Walks the schema and the arguments together: ``properties`` (a key not in
        ``required`` is optional), ``items``, ``prefixItems``, local ``$ref`` s,
        ``allOf``, and the first ``anyOf`` / ``oneOf`` branch the cleaned value fits.
        A property whose schema accepts null (``"type": ["string", "null"]``, an
        ``enum`` holding null, no constraint at all) keeps its ``null``. Never
        raises: a schema it cannot follow leaves the value as it is.
        """
        try:
            cleaned, changed = self._strip(self._root, arguments, 0, [_WALK_BUDGET])
        except Exception:  # a pathological schema (too much to walk, recursion): nothing is read as absent
            return None
        return cleaned if changed else None

    def _accepts(self, schema: Any, instance: Any) -> bool:
        if isinstance(schema, bool):
            return schema
        # descend: the subschema checked with the root's references (the Validator protocol omits it)
        validator: Any = self._validator
        return next(iter(validator.descend(instance, schema)), None) is None

    def _deref(self, schema: Any) -> Any:
        """The target of a local ``#/...`` reference, or ``None`` when it is not one this walk follows."""
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        target: Any = self._root
        for token in ref[1:].split("/")[1:] if ref != "#" else ():
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return None
        return target

    def _strip(self, schema: Any, value: Any, depth: int, budget: list[int]) -> tuple[Any, bool]:
        budget[0] -= 1
        if budget[0] < 0:
            raise _WalkTooLong
        if not isinstance(schema, dict) or depth > 64 or (depth and "$id" in schema):
            return value, False
        changed = False
        target = self._deref(schema)
        if target is not None:
            value, changed = self._strip(target, value, depth + 1, budget)
        for sub in schema.get("allOf", ()) if isinstance(schema.get("allOf"), list) else ():
            value, more = self._strip(sub, value, depth + 1, budget)
            changed = changed or more
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                for branch in branches:
                    candidate, more = self._strip(branch, value, depth + 1, budget)
                    if more and self._accepts(branch, candidate):
                        value, changed = candidate, True
                        break
        if isinstance(value, dict):
            properties = schema.get("properties")
            if isinstance(properties, dict):
                required = schema.get("required")
                required = set(required) if isinstance(required, list) else set()
                out: dict[str, Any] = {}
                for key, item in value.items():
                    sub = properties.get(key)
                    if sub is None:
                        out[key] = item
                    elif item is None and key not in required and not self._accepts(sub, None):
                        changed = True
                    else:
                        item, more = self._strip(sub, item, depth + 1, budget)
                        changed = changed or more
                        out[key] = item
                value = out
        elif isinstance(value, list):
            prefix = schema.get("prefixItems")
            prefix = prefix if isinstance(prefix, list) else []
            items = schema.get("items")
            out_items: list[Any] = []
            for index, item in enumerate(value):
                sub = prefix[index] if index < len(prefix) else items
                if sub is not None:
                    item, more = self._strip(sub, item, depth + 1, budget)
                    changed = changed or more
                out_items.append(item)
            value = out_items
        return value, changed
