"""Canonical forms that identity and order rest on: RFC 8785 bytes, SHA-256 digests, ordinal names.

A schema hash or a catalog digest is only worth something if two parties that
hold the same JSON value compute the same text. RFC 8785 (the JSON
Canonicalization Scheme) fixes that text: keys sorted by UTF-16 code units, no
insignificant whitespace, numbers spelled as ECMAScript spells them (``1``,
``1.0`` and ``1e0`` are all ``1``). We use the maintained ``rfc8785`` package
rather than an implementation of our own.

Floor 1: no imports from higher floors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

__all__ = ["canonical_bytes", "ordinal_key", "schema_hash", "sha256_digest", "sha256_of"]


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value.

    ``value`` must be plain JSON data (dict with str keys, list, tuple, str,
    int, float, bool, None). RFC 8785 reads every number as an IEEE-754
    double, so an integer beyond 2**53 that a double holds exactly is the same
    number as that double (``9007199254740992`` and ``9007199254740992.0`` are
    one value however they were spelt); one a double cannot hold exactly has no
    canonical form. Raises ``ValueError`` for that, for NaN and infinities,
    non-string keys and other types.
    """
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        try:
            return rfc8785.dumps(_exact_doubles(value))
        except rfc8785.CanonicalizationError as exc:
            raise ValueError(f"value has no RFC 8785 canonical form: {str(exc)[:200]}") from None
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"value has no RFC 8785 canonical form: {str(exc)[:200]}") from None


def _exact_doubles(value: Any) -> Any:
    """``value`` with each large integer that a double holds exactly turned into that double."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        as_double = float(value) if abs(value) < 2**1024 else None
        return as_double if as_double is not None and int(as_double) == value else value
    if isinstance(value, (list, tuple)):
        return [_exact_doubles(item) for item in value]
    if isinstance(value, dict):
        return {key: _exact_doubles(item) for key, item in value.items()}
    return value


def sha256_digest(value: Any) -> str:
    """``"sha256:"`` and the lowercase hex SHA-256 of the canonical bytes of ``value``."""
    return sha256_of(canonical_bytes(value))


def sha256_of(data: bytes) -> str:
    """``"sha256:"`` and the lowercase hex SHA-256 of ``data`` (already canonical bytes)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def schema_hash(schema: Mapping[str, Any]) -> str:
    """The identity of a JSON schema: ``"sha256:<hex>"`` over its RFC 8785 form.

    Key order and number spelling never change it; any change of meaning does
    (including annotations such as ``description``: what the model reads is part
    of what was bound).
    """
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema must be a mapping, got {type(schema).__name__}")
    return sha256_digest(dict(schema))


def ordinal_key(name: str) -> bytes:
    """Sort key for .NET's ordinal string order, which compares UTF-16 code units."""
    return name.encode("utf-16-be", "surrogatepass")
