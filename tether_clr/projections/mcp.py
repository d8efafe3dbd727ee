"""MCP: tools as the ``mcp`` SDK's ``Tool`` objects, and results as ``CallToolResult``.

:func:`to_mcp_tools` gives ``mcp.types.Tool`` objects (``inputSchema``,
``title`` from ``ToolMetadata.title``, ``annotations`` from the metadata);
:func:`mcp_tool_dicts` the same as plain JSON, with no SDK. The hints are
derived so that a missing claim never reads as a safe one:

* ``readOnlyHint``: ``read_only`` and ``side_effect`` NONE;
* ``destructiveHint``: not read-only, and ``destructive`` or ``side_effect`` DESTRUCTIVE;
* ``idempotentHint``: ``idempotent``;
* ``openWorldHint``: ``open_world``, or ``side_effect`` EXTERNAL_COMMUNICATION or FINANCIAL;
* ``title``: ``title``, when set.

``outcome.to_mcp()`` is a result's JSON; :func:`to_call_tool_result` the SDK object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tether_clr.catalog.metadata import SideEffect, ToolMetadata
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.sdk import require_sdk
from tether_clr.projections.source import shown_tools
from tether_clr.records.outcomes import ToolExecutionOutcome

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

__all__ = ["mcp_annotations", "mcp_tool_dicts", "to_call_tool_result", "to_mcp_tools"]

_OPEN_WORLD = frozenset({SideEffect.EXTERNAL_COMMUNICATION, SideEffect.FINANCIAL})


def mcp_annotations(metadata: ToolMetadata) -> dict[str, Any]:
    """MCP's ``ToolAnnotations`` as JSON, derived from ``metadata`` (see the module docstring)."""
    read_only = metadata.read_only and metadata.side_effect is SideEffect.NONE
    annotations: dict[str, Any] = {}
    if metadata.title is not None:
        annotations["title"] = metadata.title
    annotations["readOnlyHint"] = read_only
    annotations["destructiveHint"] = not read_only and (metadata.destructive or metadata.side_effect is SideEffect.DESTRUCTIVE)
    annotations["idempotentHint"] = metadata.idempotent
    annotations["openWorldHint"] = metadata.open_world or metadata.side_effect in _OPEN_WORLD
    return annotations


def mcp_tool_dicts(assembly: SealedToolCatalogView) -> list[dict[str, Any]]:
    """The tools of ``assembly`` as MCP ``Tool`` JSON (``name``, ``title``, ``description``,
    ``inputSchema``, ``annotations``), in its order; fresh dicts, no SDK needed."""
    tools: list[dict[str, Any]] = []
    for tool in shown_tools(assembly):
        projected: dict[str, Any] = {"name": tool.name}
        if tool.metadata.title is not None:
            projected["title"] = tool.metadata.title
        if tool.description:
            projected["description"] = tool.description
        projected["inputSchema"] = tool.parameters
        projected["annotations"] = mcp_annotations(tool.metadata)
        tools.append(projected)
    return tools


def to_mcp_tools(assembly: SealedToolCatalogView) -> list[Tool]:
    """The tools of ``assembly`` as the ``mcp`` SDK's ``Tool`` objects, in its order (needs ``tether_clr[projections]``)."""
    types = require_sdk("mcp.types", "to_mcp_tools")
    return [types.Tool.model_validate(tool) for tool in mcp_tool_dicts(assembly)]


def to_call_tool_result(outcome: ToolExecutionOutcome) -> CallToolResult:
    """``outcome.to_mcp()`` as the ``mcp`` SDK's ``CallToolResult`` (needs ``tether_clr[projections]``)."""
    types = require_sdk("mcp.types", "to_call_tool_result")
    result: CallToolResult = types.CallToolResult.model_validate(outcome.to_mcp())
    return result
