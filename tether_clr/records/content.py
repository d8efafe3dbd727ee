"""Model-facing content: what a model is shown of an outcome, as parts.

An outcome keeps its JSON ``value`` (what a program reads) and has ``content``
(what a model reads): a tuple of :class:`TextPart` and :class:`ImagePart`. The
default content of a success is its value as text (a string as itself, anything
else as canonical JSON); of a failure, its message. A tool's registration may
project and finalize the content (``ToolRegistrationOptions(project_content=...,
finalize_content=...)``); the projections to OpenAI, Anthropic, MCP and MEAI
render the parts in each wire format.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from tether_clr.foundations.text import is_valid_text, safe_repr

__all__ = [
    "IMAGE_MIME_TYPES",
    "ContentPart",
    "ImagePart",
    "TextPart",
    "as_parts",
    "content_parts",
    "parts_from_json",
    "parts_to_json",
]

IMAGE_MIME_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every projection can carry (OpenAI, Anthropic and MCP accept these four)."""


@dataclass(frozen=True, slots=True)
class TextPart:
    """Text a model reads; valid Unicode (a lone surrogate is refused: no wire format carries one)."""

    text: str
    type: Literal["text"] = "text"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"TextPart.text must be str, got {type(self.text).__name__}")
        if not is_valid_text(self.text):
            raise ValueError("TextPart.text is not valid Unicode text (it holds a lone surrogate)")


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image a model sees: its bytes and MIME type (one of :data:`IMAGE_MIME_TYPES`)."""

    data: bytes
    mime_type: str
    type: Literal["image"] = "image"

    def __post_init__(self) -> None:
        if isinstance(self.data, bytearray | memoryview):
            object.__setattr__(self, "data", bytes(self.data))
        if not isinstance(self.data, bytes):
            raise TypeError(f"ImagePart.data must be bytes, got {type(self.data).__name__}")
        if not isinstance(self.mime_type, str) or self.mime_type.lower() not in IMAGE_MIME_TYPES:
            raise ValueError(f"ImagePart.mime_type must be one of {sorted(IMAGE_MIME_TYPES)}, got {safe_repr(self.mime_type)}")
        object.__setattr__(self, "mime_type", self.mime_type.lower())

    @property
    def base64(self) -> str:
        """The bytes as standard base64 text (what every wire format carries)."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """``data:MIME;base64,...``: the form OpenAI's image inputs take."""
        return f"data:{self.mime_type};base64,{self.base64}"


ContentPart = TextPart | ImagePart


def as_parts(value: Any, what: str) -> tuple[ContentPart, ...]:
    """``value`` as content parts: one part, or an iterable of parts (not a string or bytes).

    Raises ``TypeError`` naming ``what`` (a hook, say) for anything else, so a
    hook that returns the wrong thing fails as itself, never as a later stage.
    """
    if isinstance(value, TextPart | ImagePart):
        return (value,)
    if isinstance(value, str | bytes | bytearray | dict) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must return content parts (TextPart, ImagePart or a sequence of them), got {type(value).__name__}")
    parts = tuple(value)
    wrong = [type(part).__name__ for part in parts if not isinstance(part, TextPart | ImagePart)]
    if wrong:
        raise TypeError(f"{what} must return content parts (TextPart, ImagePart or a sequence of them), got a {wrong[0]} among them")
    return parts


def content_parts(value: Any) -> tuple[ContentPart, ...] | None:
    """What a tool body returned, when it answered with content: one part, or a non-empty list or
    tuple of parts only; None for any other value (a plain JSON result)."""
    if isinstance(value, TextPart | ImagePart):
        return (value,)
    if type(value) is list or type(value) is tuple:
        if value and all(isinstance(item, TextPart | ImagePart) for item in value):
            return tuple(value)
    return None


def parts_to_json(parts: Iterable[ContentPart]) -> list[dict[str, str]]:
    """The parts as JSON objects, as the logs record them: ``{"type": "text", "text"}`` and
    ``{"type": "image", "mime_type", "data"}`` (base64)."""
    return [
        {"type": "text", "text": part.text} if isinstance(part, TextPart)
        else {"type": "image", "mime_type": part.mime_type, "data": part.base64}
        for part in parts
    ]


def parts_from_json(items: Any) -> tuple[ContentPart, ...]:
    """:func:`parts_to_json` read back; ``ValueError`` for anything it did not write."""
    if not isinstance(items, list):
        raise ValueError(f"recorded content must be a list, got {type(items).__name__}")
    parts: list[ContentPart] = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        try:
            if kind == "text":
                parts.append(TextPart(item["text"]))
            elif kind == "image":
                parts.append(ImagePart(base64.b64decode(item["data"], validate=True), item["mime_type"]))
            else:
                raise ValueError(f"unknown content part {safe_repr(item)}")
        except (KeyError, TypeError, binascii.Error) as exc:
            raise ValueError(f"recorded content part {safe_repr(item)} cannot be read back: {exc}") from None
    return tuple(parts)
