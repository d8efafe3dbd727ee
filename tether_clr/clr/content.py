"""Microsoft.Extensions.AI content a .NET tool answers with, as content parts.

A tool that returns MEAI ``AIContent`` (a ``TextContent``, a ``DataContent``
holding an image, or a sequence of them) reaches Python as the JSON the bridge
writes for ``AIContent`` (every part with its ``$type`` discriminator:
``{"$type": "text", "text"}``, ``{"$type": "data", "uri": "data:MIME;base64,..."}``).
:func:`content_from_meai` reads that back as :class:`~tether_clr.TextPart` and
:class:`~tether_clr.ImagePart`; the pipeline then makes them the outcome's
content. Anything else (another kind of content, a data part that is not one of
the images every projection carries, a plain object) stays the tool's JSON value.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from tether_clr.records.content import IMAGE_MIME_TYPES, ContentPart, ImagePart, TextPart

__all__ = ["content_from_meai"]

_DATA_URI = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[^;,]*)*;base64,(?P<data>[A-Za-z0-9+/=\s]*)\Z", re.S)


def _part(item: Any) -> ContentPart | None:
    if not isinstance(item, dict):
        return None
    kind = item.get("$type")
    if kind == "text" and isinstance(item.get("text"), str):
        try:
            return TextPart(item["text"])
        except ValueError:
            return None
    if kind == "data" and isinstance(item.get("uri"), str):
        match = _DATA_URI.match(item["uri"])
        if match is None or match["mime"].lower() not in IMAGE_MIME_TYPES:
            return None
        try:
            return ImagePart(base64.b64decode(match["data"], validate=False), match["mime"])
        except (binascii.Error, ValueError):
            return None
    return None


def content_from_meai(value: Any) -> tuple[ContentPart, ...] | None:
    """The parts of an ``AIContent`` result (one, or a non-empty list), or None when ``value`` is not
    made only of text and image parts (it then stays a plain JSON value)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    parts = [_part(item) for item in items]
    if any(part is None for part in parts):
        return None
    return tuple(part for part in parts if part is not None)
