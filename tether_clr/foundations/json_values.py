"""JSON values at the pipeline's edges: canonical text, detached copies, and lossless conversion.

Everything a stage hands to another stage goes through canonical JSON text, so a
listener that mutates the dict it was given cannot change what the tool, the
sink or the next listener sees. Results are converted without loss or refused
(:func:`to_json_value`): an explicit allow-list of types, deterministic across
processes; anything else is a :class:`JsonConversionError` (a ``TypeError``).
Text must be valid Unicode (see :mod:`tether_clr.foundations.text`).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import ipaddress
import json
import math
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from enum import Enum
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import PurePath
from typing import Any

import pydantic_core
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tether_clr.foundations.text import describe_exception, is_valid_text, safe_repr

__all__ = [
    "MAX_JSON_DEPTH",
    "JsonConversionError",
    "canonical_json",
    "canonical_json_acyclic",
    "detach",
    "to_json_text",
    "to_json_value",
]

MAX_JSON_DEPTH = 128
"""How deeply any JSON value this library builds may nest (results, schemas, arguments).

The ceilings below are Python's recursion limit (1,000 frames, shared with the
pipeline around a conversion) and pydantic's serializer, which refuses values
nested 255 levels deep and writes ``FunctionResultContent``; 128 leaves room for
records that wrap a value.
"""


# One encoder for every call: ``json.dumps`` with keyword arguments builds a new one each time.
_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, no NaN, UTF-8 kept as is."""
    return _CANONICAL_ENCODER.encode(value)


def _make_acyclic_encoder() -> Callable[[Any], str]:
    """:func:`canonical_json` for values known to hold no cycle, built once.

    ``JSONEncoder.encode`` builds its C encoder, a cycle-marker dict and a
    closure on every call; a value fresh from ``json.loads`` or from
    :func:`to_json_value` (which refuses cycles) needs none of them, so one C
    encoder without markers is reused. Same text, same refusal of NaN.
    """
    if c_make_encoder is None:  # pragma: no cover - CPython always has the C accelerator
        return _CANONICAL_ENCODER.encode
    encoder = c_make_encoder(
        None, _CANONICAL_ENCODER.default, encode_basestring, None, ":", ",", True, False, False
    )

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


canonical_json_acyclic = _make_acyclic_encoder()


def detach(value: Any) -> Any:
    """A deep copy of an already JSON-compatible value (cheaper than deepcopy)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value))


# ------------------------------------------------------------- conversion
class JsonConversionError(TypeError):
    """A value cannot become JSON without loss; ``path`` says where (``$.items[2]``)."""

    def __init__(self, reason: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path

    def within(self, segment: str) -> JsonConversionError:
        """The same error, one container further out."""
        return JsonConversionError(self.reason, (segment, *self.path))

    def __str__(self) -> str:
        path = self.path
        if len(path) > 12:  # a deep path is noise past its two ends
            path = (*path[:6], f"...{len(path) - 12} more...", *path[-6:])
        return f"{'$' + ''.join(path)}: {self.reason}"


# Scalars whose JSON form is one unambiguous string; pydantic renders them (ISO 8601, RFC 4122...).
_STRING_SCALARS = (
    datetime.date,
    datetime.time,
    datetime.timedelta,
    uuid.UUID,
    decimal.Decimal,
    PurePath,
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
    pydantic_core.Url,
    pydantic_core.MultiHostUrl,
)


def _is_string_scalar(value: Any) -> bool:
    """One of the scalars above, or a pydantic network type (URLs, DSNs: module ``pydantic.networks``)."""
    return isinstance(value, _STRING_SCALARS) or type(value).__module__ == "pydantic.networks"


def _text(value: str) -> str:
    if not is_valid_text(value):
        raise JsonConversionError("string holds a lone surrogate, which is not valid Unicode")
    return value


_SMALL = 1 << 64


def _integer(value: int) -> int:
    if value.bit_length() > 64:
        try:
            int.__repr__(value)
        except ValueError:
            raise JsonConversionError("integer has more digits than Python will write") from None
    return value


def _number(value: float) -> float:
    if not math.isfinite(value):
        raise JsonConversionError(f"{value!r} is not a JSON number")
    return value


def _key(key: Any) -> str:
    if isinstance(key, Enum):
        key = key.value
    if isinstance(key, str):
        return _text(str.__str__(key))
    if isinstance(key, int) and not isinstance(key, bool):
        return int.__repr__(_integer(int.__int__(key)))
    raise JsonConversionError(f"a key of type {type(key).__name__} is not a string or an integer")


def _unsupported(value: Any) -> JsonConversionError:
    kind = type(value).__name__
    if hasattr(value, "__next__") or hasattr(value, "__anext__"):
        return JsonConversionError(f"{kind} is an iterator, which would be consumed; return a list")
    return JsonConversionError(f"{kind} is not a JSON value (see the conversion rules in docs/hostile-input.md)")


class _Converter:
    """One conversion: remembers the containers on the current path to report cycles."""

    __slots__ = ("_active",)

    def __init__(self) -> None:
        self._active: set[int] = set()

    def convert(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return value if value.isascii() else _text(value)
        if value is None or kind is bool:
            return value
        if kind is int:
            return value if -_SMALL < value < _SMALL else _integer(value)
        if kind is float:
            return _number(value)
        if kind is dict or kind is list or kind is tuple:
            return self._container(value, depth)
        if isinstance(value, Enum):
            return self.convert(value.value, depth)
        if isinstance(value, str):
            return _text(str.__str__(value))
        if isinstance(value, int):
            return _integer(int.__int__(value))
        if isinstance(value, float):
            return _number(float.__float__(value))
        if isinstance(value, (list, tuple, deque, Mapping, set, frozenset)):
            return self._container(value, depth)
        if isinstance(value, BaseModel):
            try:
                dumped = value.model_dump(mode="python")
            except Exception as exc:
                raise JsonConversionError(f"{type(value).__name__}.model_dump() failed: {describe_exception(exc)}") from None
            return self._nested(value, dumped, depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
            return self._nested(value, fields, depth)
        if isinstance(value, (bytes, bytearray, memoryview)):
            try:
                return _text(bytes(value).decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise JsonConversionError(f"bytes are not UTF-8 text (byte {exc.start})") from None
        if _is_string_scalar(value):
            text = to_jsonable_python(value)
            if not isinstance(text, str):
                raise _unsupported(value)
            return _text(text)
        raise _unsupported(value)

    def _nested(self, owner: Any, plain: Any, depth: int) -> Any:
        """A record (model, dataclass) converted through its fields; a cycle through it is refused."""
        marker = id(owner)
        if marker in self._active:
            raise JsonConversionError(f"{type(owner).__name__} contains itself (a reference cycle)")
        self._active.add(marker)
        try:
            return self.convert(plain, depth)
        finally:
            self._active.discard(marker)

    def _container(self, value: Any, depth: int) -> Any:
        if depth >= MAX_JSON_DEPTH:
            raise JsonConversionError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        marker = id(value)
        if marker in self._active:
            raise JsonConversionError(f"{type(value).__name__} contains itself (a reference cycle)")
        self._active.add(marker)
        try:
            kind = type(value)
            if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
                return self._mapping(value, depth + 1)
            if isinstance(value, (set, frozenset)):
                return self._set(value, depth + 1)
            result = []
            for index, item in enumerate(value):
                try:
                    result.append(self.convert(item, depth + 1))
                except JsonConversionError as exc:
                    raise exc.within(f"[{index}]") from None
            return result
        finally:
            self._active.discard(marker)

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for raw_key, item in value.items():
            if type(raw_key) is str and raw_key.isascii():
                key = raw_key
            else:
                try:
                    key = _key(raw_key)
                except JsonConversionError as exc:
                    raise exc.within(f"[{safe_repr(raw_key, 80)}]") from None
            if key in result:
                raise JsonConversionError(f"two keys become the same JSON key {key!r}, which would lose a value")
            try:
                result[key] = self.convert(item, depth)
            except JsonConversionError as exc:
                raise exc.within(f"[{key!r}]") from None
        return result

    def _set(self, value: set[Any] | frozenset[Any], depth: int) -> list[Any]:
        """Sorted by each element's canonical JSON text, so no hash seed decides the order."""
        keyed: dict[str, Any] = {}
        for item in value:
            try:
                plain = self.convert(item, depth)
            except JsonConversionError as exc:
                raise exc.within("{}") from None
            text = canonical_json(plain)
            if text in keyed:
                raise JsonConversionError(f"two set elements become the same JSON value {text[:80]}")
            keyed[text] = plain
        return [keyed[text] for text in sorted(keyed)]


def to_json_value(value: Any) -> Any:
    """A fresh JSON value (dict, list, str, int, float, bool, None) equal to ``value``, or refused.

    Converted, and nothing else: ``None``, ``bool``, ``str``, ``int``, finite
    ``float`` (and subclasses of these, as the base type); enums as their value;
    ``dict`` and other mappings with ``str`` or ``int`` keys (an ``int`` key
    becomes its decimal text; two keys that become one are refused); ``list``,
    ``tuple`` (named tuples too) and ``deque`` as arrays; ``set`` and ``frozenset`` as arrays
    sorted by each element's canonical JSON; pydantic models through
    ``model_dump(mode="python")`` (their serializers and alias settings apply); dataclass instances as objects
    of their fields; ``bytes`` that are UTF-8 text as that text; dates, times,
    datetimes, timedeltas, UUIDs, decimals, paths, IP addresses and pydantic's
    URL and DSN types as pydantic writes them (ISO 8601 and so on).

    Refused with :class:`JsonConversionError`: NaN and infinities, lone
    surrogates, integers longer than Python writes, non-UTF-8 bytes, iterators and
    generators (converting would consume them), complex numbers, other key types
    (tuples, floats, ``None``, ``bool``), reference cycles, nesting deeper than
    :data:`MAX_JSON_DEPTH`, and every type not listed.
    """
    try:
        return _Converter().convert(value, 0)
    except JsonConversionError:
        raise
    except RecursionError:
        raise JsonConversionError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except Exception as exc:  # a property, a model serializer or __eq__ raised while being read
        raise JsonConversionError(f"reading the value raised {describe_exception(exc)}") from None


def to_json_text(value: Any) -> str:
    """Canonical JSON text of ``value`` converted by :func:`to_json_value`; raises only ``TypeError``."""
    kind = type(value)
    # The common tool results, already JSON as they are: skip the converter (same text, same refusals).
    if (kind is str and value.isascii()) or value is None or kind is bool or (kind is int and -_SMALL < value < _SMALL):
        return canonical_json_acyclic(value)
    plain = to_json_value(value)
    try:
        return canonical_json_acyclic(plain)
    except (ValueError, RecursionError) as exc:  # pragma: no cover - the converter checked both
        raise JsonConversionError(f"value is not JSON-serializable: {exc}") from None

