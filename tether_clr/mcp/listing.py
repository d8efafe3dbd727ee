"""``tools/list``: one page of the caller's assembly, behind an opaque cursor.

The tools are the MCP projection of the caller's assembly
(:func:`~tether_clr.projections.mcp.mcp_tool_dicts`): its deterministic order,
deferred tools left to the search tool, titles and annotations from the
metadata. A cursor is opaque to the client: base64 of the offset and the
assembly's digest, so a cursor from another listing (another tenant, another
revision) is refused rather than silently shifted.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from tether_clr.catalog.views import ToolAssembly
from tether_clr.projections.mcp import mcp_tool_dicts

__all__ = ["InvalidCursorError", "list_page"]


class InvalidCursorError(ValueError):
    """The cursor was not made by this server for this listing."""


def _encode(offset: int, digest: str) -> str:
    raw = json.dumps({"o": offset, "d": digest}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str, digest: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursorError("invalid cursor") from None
    if not isinstance(data, dict) or data.get("d") != digest:
        raise InvalidCursorError("invalid cursor: the tool list changed, list again from the start")
    offset = data.get("o")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidCursorError("invalid cursor")
    return offset


def list_page(assembly: ToolAssembly, cursor: str | None, page_size: int) -> tuple[list[dict[str, Any]], str | None]:
    """The tools of one page as MCP ``Tool`` JSON, and the next page's cursor (``None`` on the last page).

    :class:`InvalidCursorError` for a cursor this listing did not make.
    """
    tools = mcp_tool_dicts(assembly)
    offset = 0 if cursor is None else _decode(cursor, assembly.digest)
    if offset > len(tools):
        raise InvalidCursorError("invalid cursor")
    end = offset + page_size
    return tools[offset:end], (_encode(end, assembly.digest) if end < len(tools) else None)
