"""The SDK's ``Mcp-Param-*`` header check (2026-07-28 over streamable HTTP) without a listing per call.

Before it dispatches a ``tools/call`` that has arguments, the SDK's 2026-07-28
HTTP path compares the request's ``Mcp-Param-*`` headers with the arguments
that the tool's input schema marks with ``x-mcp-header``. It needs the tool's
input schema for that. A server that gives the SDK no lookup
(``Server.get_tool_input_schema``) gets its own ``tools/list`` handler run, page
after page of the caller's assembly, for every such call; and a listing refused
(a request with no context) is logged at ERROR with a traceback, for every call,
at an anonymous client's will.

The SDK calls a lookup before the request's identity is known, so a lookup
cannot answer for the caller, and must never reveal a tool the caller cannot
see. :class:`ParamHeaderLookup` is therefore offered only while no registered
tool, in any version, status, scope or tenant, declares ``x-mcp-header``: then
there is nothing to compare for any caller, and it answers ``None`` (nothing to
validate) at once. As soon as one does, the server offers no lookup and the SDK
lists through the caller-scoped handler again, so those headers are checked
against what this caller was shown. The answer is kept per registry revision,
and reading it scans the canonical bytes the catalog made of each definition at
registration (nothing is copied).

What the SDK then does is the SDK's: once any tool declares a header, it lists
for every call with arguments again (and logs a refused listing at ERROR); a
call by an alias, or of a deferred tool loaded through the request's ``_meta``,
is not in the listing it reads, so its headers go unchecked; and it reads the
lookup before dispatch, so a tool registered in between is called once unchecked,
as with its own listing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp.shared.inbound import X_MCP_HEADER_KEY

from tether_clr.registry import ToolRegistry

__all__ = ["HEADER_ANNOTATION", "InputSchemaLookup", "ParamHeaderLookup", "declares_param_headers"]

HEADER_ANNOTATION: str = X_MCP_HEADER_KEY
"""The JSON Schema keyword with which a tool's input schema asks for an ``Mcp-Param-*`` header (the SDK's own constant)."""

InputSchemaLookup = Callable[[str], Mapping[str, Any] | None]
"""The SDK's ``Server.get_tool_input_schema``: a tool's input schema by name, or ``None`` (nothing to validate)."""


_ANNOTATION_KEY = b'"' + HEADER_ANNOTATION.encode("ascii") + b'"'


def declares_param_headers(definition_json: bytes) -> bool:
    """Whether a definition's canonical JSON holds ``"x-mcp-header"``: as a key wherever the SDK looks
    (no false negative), or as a string or a property name (a false positive only makes the server
    leave the check to the SDK's caller-scoped listing)."""
    return _ANNOTATION_KEY in definition_json


def _nothing_to_validate(name: str) -> None:
    """No registered tool declares a header: whatever ``name`` is, there is nothing to compare."""
    return None


class ParamHeaderLookup:
    """What the server offers the SDK as ``get_tool_input_schema``: see the module."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._known: tuple[int, bool] | None = None  # (registry revision, some tool declares a header)

    def declared(self) -> bool:
        """Whether some registered tool declares ``x-mcp-header`` now (read once per registry revision)."""
        revision = self._registry.revision
        known = self._known
        if known is not None and known[0] == revision:
            return known[1]
        with self._lock:
            revision = self._registry.revision
            declared = any(declares_param_headers(definition) for definition in self._registry.catalog.registered_definitions())
            self._known = (revision, declared)
        return declared

    def lookup(self) -> InputSchemaLookup | None:
        """The lookup to offer now: one that answers ``None`` at once, or none (the SDK lists, caller-scoped)."""
        return None if self.declared() else _nothing_to_validate
