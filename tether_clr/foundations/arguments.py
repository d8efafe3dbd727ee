"""A model's raw argument text: bounded, parsed once, refused with one exception type.

This is where hostile argument text stops, so every caller applies the same
rules: the text's length and nesting depth are checked before it is parsed
(:class:`ArgumentLimits`), numbers must be finite, integers must fit Python's
digit limit, and strings must be valid Unicode, so the parser never recurses or
allocates without bound. Every refusal is an :class:`InvalidArgumentsJson`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from tether_clr.foundations.json_values import MAX_JSON_DEPTH, canonical_json_acyclic
from tether_clr.foundations.text import is_valid_text, safe_text, safe_text_or_value

__all__ = [
    "DEFAULT_ARGUMENT_LIMITS",
    "ArgumentLimits",
    "InvalidArgumentsJson",
    "ParsedArguments",
    "RefusedArguments",
    "parse_arguments",
    "read_arguments",
]


class InvalidArgumentsJson(ValueError):
    """The model's raw argument text is not one JSON object within the limits."""


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Bounds on a model's raw argument text, checked before it is parsed.

    ``max_chars``: the longest argument text accepted, in characters (code
    points); default 1,048,576. ``max_depth``: how deeply arrays and objects may
    nest (``{}`` is depth 1, ``{"a": [1]}`` depth 2); default 64, the default of
    .NET's ``System.Text.Json``; at most :data:`MAX_JSON_DEPTH`. Text over either
    bound is refused (INVALID_ARGS) after a linear scan, without parsing it.

    ``max_logged_bytes``: what the logs keep of argument text that is refused
    before it parses (size, depth, encoding, JSON syntax): its size, its SHA-256
    and a prefix of at most this many UTF-8 bytes (:class:`RefusedArguments`),
    never the whole text; default 4096. A hostile client then grows the log by
    a few KiB per request, whatever it sends. Valid arguments are logged in full.
    """

    max_chars: int = 1_048_576
    max_depth: int = 64
    max_logged_bytes: int = 4096

    def __post_init__(self) -> None:
        for field, value in (
            ("max_chars", self.max_chars), ("max_depth", self.max_depth), ("max_logged_bytes", self.max_logged_bytes)
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ArgumentLimits.{field} must be a positive int, got {value!r}")
        if self.max_depth > MAX_JSON_DEPTH:
            raise ValueError(f"ArgumentLimits.max_depth must be at most {MAX_JSON_DEPTH}, got {self.max_depth}")


DEFAULT_ARGUMENT_LIMITS = ArgumentLimits()

# A JSON string literal (possessive, so hostile quoting stays linear; an unterminated one runs to the end).
_STRING_LITERAL = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _nesting_depth(raw: str, limit: int) -> int:
    """The deepest bracket nesting outside string literals, or 0 when it cannot exceed ``limit``."""
    if raw.count("[") + raw.count("{") <= limit:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING_LITERAL.sub("", raw))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def _reject_constant(name: str) -> Any:
    raise InvalidArgumentsJson(f"arguments are not valid JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidArgumentsJson(f"arguments are not valid JSON: the number {text[:40]} is out of range")
    return value


# One strict decoder for every call (``json.loads`` with hooks builds a new one each time).
_ARGUMENT_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


_SCAN = _ARGUMENT_DECODER.scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__


def _decode_arguments(raw: str) -> Any:
    """``json.loads(raw, parse_constant=..., parse_float=...)``, with the same BOM refusal and messages."""
    if raw.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
    if raw[:1] == "{" and raw[-1:] == "}":  # the usual text, no whitespace around it: the scanner alone
        try:
            value, end = _SCAN(raw, 0)
        except (StopIteration, ValueError):  # decode() below gives the same refusal with json's own message
            pass
        else:
            if end == len(raw):
                return value
    return _ARGUMENT_DECODER.decode(raw)


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """A model's arguments after :func:`read_arguments`: the object and its canonical text."""

    value: dict[str, Any]
    json: str


def read_arguments(raw: str, limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS) -> ParsedArguments:
    """Parse a model's raw argument text into one JSON object, or raise :class:`InvalidArgumentsJson`.

    Blank text (empty or whitespace) means no arguments, ``{}``: models often
    send ``""`` for parameterless tools. Anything else must be a single JSON
    object within ``limits``, with finite numbers, integers Python can read, and
    strings that are valid Unicode (an escaped lone surrogate such as
    ``"\\ud800"`` is refused). Never raises anything but ``InvalidArgumentsJson``.
    """
    if not isinstance(raw, str):
        raise InvalidArgumentsJson(f"arguments must be JSON text, got {type(raw).__name__}")
    if len(raw) > limits.max_chars:
        raise InvalidArgumentsJson(f"arguments are {len(raw)} characters long; the limit is {limits.max_chars}")
    if not raw or raw.isspace():
        return ParsedArguments({}, "{}")
    if not is_valid_text(raw):
        raise InvalidArgumentsJson("arguments are not valid Unicode text (they hold a lone surrogate)")
    depth = _nesting_depth(raw, limits.max_depth)
    if depth > limits.max_depth:
        raise InvalidArgumentsJson(f"arguments nest {depth} levels deep; the limit is {limits.max_depth}")
    try:
        value = _decode_arguments(raw)
    except InvalidArgumentsJson:
        raise
    except RecursionError:
        raise InvalidArgumentsJson("arguments nest too deeply to parse") from None
    except ValueError as exc:  # JSONDecodeError, or an integer over Python's digit limit
        raise InvalidArgumentsJson(f"arguments are not valid JSON: {safe_text(str(exc))}") from None
    if not isinstance(value, dict):
        raise InvalidArgumentsJson(f"arguments must be a JSON object, got {type(value).__name__}")
    text = canonical_json_acyclic(value)  # fresh from the parser: no cycle, no NaN
    # Only a \u escape can put a lone surrogate in a parsed string: valid text has none of its own.
    if "\\u" in raw and not is_valid_text(text):
        raise InvalidArgumentsJson("arguments hold a string that is not valid Unicode (an escaped lone surrogate)")
    return ParsedArguments(value, text)


def parse_arguments(raw: str, limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS) -> dict[str, Any]:
    """The argument object of :func:`read_arguments`."""
    return read_arguments(raw, limits).value



@dataclass(frozen=True, slots=True)
class RefusedArguments:
    """What the logs keep of argument text refused before it parsed: ``size`` (its UTF-8 bytes),
    ``sha256`` (hex, over those bytes) and ``prefix`` (at most ``max_logged_bytes`` of them, cut on
    a character boundary; a lone surrogate written as ``\\udXXX``).

    ``size`` and ``sha256`` say exactly what was sent (compare a client's own copy);
    the prefix shows what it looked like. Recorded as :meth:`as_json`.
    """

    size: int
    sha256: str
    prefix: str

    @classmethod
    def of(cls, raw: str, max_logged_bytes: int) -> RefusedArguments:
        """The summary of ``raw`` (any text, even with lone surrogates), with a prefix of at most ``max_logged_bytes``."""
        data = raw.encode("utf-8", "surrogatepass")
        # Never encode more than the prefix can use: a character is at most 4 UTF-8 bytes (12 as ``\udXXX``).
        head = safe_text_or_value(raw[: max_logged_bytes + 1]).encode("utf-8")[:max_logged_bytes]
        return cls(len(data), hashlib.sha256(data).hexdigest(), head.decode("utf-8", "ignore"))

    def as_json(self) -> dict[str, object]:
        """``{"bytes": size, "sha256": ..., "prefix": ...}``: the form the logs record."""
        return {"bytes": self.size, "sha256": self.sha256, "prefix": self.prefix}
