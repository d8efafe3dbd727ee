"""MCP: tools as the ``mcp`` SDK's ``Tool`` objects, and results as ``CallToolResult``.

:func:`to_mcp_tools` gives ``mcp.types.Tool`` objects (``inputSchema``,
``title`` from ``ToolMetadata.title``, ``annotations`` from the metadata);
:func:`mcp_tool_dicts` the same as plain JSON, with no SDK. A hint is sent only
when the metadata establishes it, so a missing claim never reads as a safe one:
MCP reads an omitted hint as its default (``readOnlyHint`` and
``idempotentHint`` false, ``destructiveHint`` and ``openWorldHint`` true: "may
be destructive, open world"), and a tool registered without metadata (every C#
tool unless given some) is listed with no hints at all.

* ``readOnlyHint``: true when ``read_only`` is true, ``side_effect`` NONE and
  ``destructive`` not true; false when ``read_only`` is false or a side effect
  (or ``destructive``) is claimed; otherwise omitted;
* ``destructiveHint``: true when ``destructive`` is true or ``side_effect`` is
  DESTRUCTIVE; false when the tool is read-only (above) or ``destructive`` is
  false; otherwise omitted;
* ``idempotentHint``: ``idempotent``, omitted when ``None``;
* ``openWorldHint``: true when ``open_world`` is true or ``side_effect`` is
  EXTERNAL_COMMUNICATION or FINANCIAL; false when ``open_world`` is false;
  otherwise omitted;
* ``title``: ``title``, when set.

``side_effect`` defaults to NONE, so NONE is no claim: it never makes a hint
read as safe on its own. A tool whose annotations are empty has no
``annotations`` field.

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
    """MCP's ``ToolAnnotations`` as JSON: only the hints ``metadata`` establishes (see the module docstring)."""
    annotations: dict[str, Any] = {}
    if metadata.title is not None:
        annotations["title"] = metadata.title
    read_only = _read_only(metadata)
    if read_only is not None:
        annotations["readOnlyHint"] = read_only
    destructive = _destructive(metadata, read_only)
    if destructive is not None:
        annotations["destructiveHint"] = destructive
    if metadata.idempotent is not None:
        annotations["idempotentHint"] = metadata.idempotent
    open_world = _open_world(metadata)
    if open_world is not None:
        annotations["openWorldHint"] = open_world
    return annotations


def _read_only(metadata: ToolMetadata) -> bool | None:
    """True only for a read-only claim nothing else contradicts; False for any claim of an effect."""
    if metadata.side_effect is not SideEffect.NONE or metadata.destructive is True:
        return False
    return metadata.read_only


def _destructive(metadata: ToolMetadata, read_only: bool | None) -> bool | None:
    """True for any destructive claim; False only when said, or when the tool is established read-only."""
    if metadata.destructive is True or metadata.side_effect is SideEffect.DESTRUCTIVE:
        return True
    if read_only is True:
        return False
    return metadata.destructive


def _open_world(metadata: ToolMetadata) -> bool | None:
    """True for an open-world claim or a side effect that reaches outside; False only when said."""
    if metadata.open_world is True or metadata.side_effect in _OPEN_WORLD:
        return True
    return metadata.open_world


def mcp_tool_dicts(assembly: SealedToolCatalogView) -> list[dict[str, Any]]:
    """The tools of ``assembly`` as MCP ``Tool`` JSON (``name``, ``title``, ``description``,
    ``inputSchema``, ``annotations`` when the metadata says anything), in its order; fresh dicts, no SDK needed."""
    tools: list[dict[str, Any]] = []
    for tool in shown_tools(assembly):
        projected: dict[str, Any] = {"name": tool.name}
        if tool.metadata.title is not None:
            projected["title"] = tool.metadata.title
        if tool.description:
            projected["description"] = tool.description
        projected["inputSchema"] = tool.parameters
        annotations = mcp_annotations(tool.metadata)
        if annotations:
            projected["annotations"] = annotations
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
