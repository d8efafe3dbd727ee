"""What each MCP protocol version defines of the fields the server sends: a client that negotiated an
older version is not sent the fields its version does not have.

The server builds one form of a ``Tool`` and of a ``CallToolResult`` (the newest); a field a version
does not define is unknown to a client written against it, and a strict one may reject the message.
So each field is sent only from the version that introduced it (the specification's schemas):

* 2025-03-26: ``Tool.annotations``;
* 2025-06-18: ``Tool.title``, ``Tool.outputSchema``, ``CallToolResult.structuredContent``.

2024-11-05 thus gets ``name``, ``description`` and ``inputSchema`` of a tool, and ``content`` and
``isError`` of a result (a failure reaches it as ``isError`` and its message in the text content;
its code and reason are in ``structuredContent`` only). A version the SDK does not know (or none)
is sent everything, as the newest is.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, is_version_at_least

__all__ = ["RESULT_FIELDS_SINCE", "TOOL_FIELDS_SINCE", "result_for_version", "tool_for_version"]

TOOL_FIELDS_SINCE: Mapping[str, str] = {
    "annotations": "2025-03-26",
    "title": "2025-06-18",
    "outputSchema": "2025-06-18",
}
"""A ``Tool`` field the server may send, and the protocol version that introduced it."""

RESULT_FIELDS_SINCE: Mapping[str, str] = {"structuredContent": "2025-06-18"}
"""A ``CallToolResult`` field the server may send, and the protocol version that introduced it."""


def _undefined(version: str | None, tool: bool) -> frozenset[str]:
    """What ``version`` does not define of a tool's (``tool``) or a result's fields; memoized per version."""
    if version is None or version not in KNOWN_PROTOCOL_VERSIONS:
        return frozenset()
    return _undefined_known(version, tool)


@functools.cache
def _undefined_known(version: str, tool: bool) -> frozenset[str]:  # a handful of known versions: bounded
    since = TOOL_FIELDS_SINCE if tool else RESULT_FIELDS_SINCE
    return frozenset(field for field, first in since.items() if not is_version_at_least(version, first))


def tool_for_version(tool: dict[str, Any], version: str | None) -> dict[str, Any]:
    """``tool`` (MCP ``Tool`` JSON) without the fields ``version`` does not define; ``tool`` itself when
    it has none of them (never changed in place)."""
    drop = _undefined(version, True) & tool.keys()
    return {k: v for k, v in tool.items() if k not in drop} if drop else tool


def result_for_version(result: dict[str, Any], version: str | None) -> dict[str, Any]:
    """``result`` (MCP ``CallToolResult`` JSON) without the fields ``version`` does not define; ``result``
    itself when it has none of them (never changed in place)."""
    drop = _undefined(version, False) & result.keys()
    return {k: v for k, v in result.items() if k not in drop} if drop else result
