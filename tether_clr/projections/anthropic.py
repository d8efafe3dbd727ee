"""Anthropic's Messages API: tools, ``tool_use`` blocks read back, and ``tool_result`` blocks.

* :func:`to_anthropic_tools` projects an assembly (or a sealed view) as the
  ``tools`` of a Messages request (``{"name", "description", "input_schema"}``).
* :func:`calls_from_anthropic` reads ``tool_use`` blocks into ``ToolCall`` s.
* ``outcome.to_anthropic()`` is the ``tool_result`` block; :func:`tool_results_message`
  the user message answering a step.

The dicts are what the ``anthropic`` SDK's ``ToolParam`` and message parameters
accept; the SDK's response objects are read by attribute. Nothing here imports the SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.calls import field, items_of, make_call
from tether_clr.projections.source import shown_tools
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome

__all__ = ["calls_from_anthropic", "to_anthropic_tools", "tool_results_message"]


def to_anthropic_tools(assembly: SealedToolCatalogView) -> list[dict[str, Any]]:
    """The tools of ``assembly`` for the Messages API, in its order; fresh dicts every call."""
    tools: list[dict[str, Any]] = []
    for tool in shown_tools(assembly):
        projected: dict[str, Any] = {"name": tool.name}
        if tool.description:
            projected["description"] = tool.description
        projected["input_schema"] = tool.parameters
        tools.append(projected)
    return tools


def calls_from_anthropic(content_blocks: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a response, in order, as ``ToolCall`` s.

    Takes a Message's ``content`` (a list of blocks) or the Message itself, as
    dicts or as the ``anthropic`` SDK's objects. ``input`` is a parsed object, so
    the raw text a call carries (and the log records) is its canonical JSON.
    Other blocks (text, thinking, server tools) are skipped; a malformed
    ``tool_use`` block becomes a call that ends INVALID_ARGS.
    """
    calls: list[ToolCall] = []
    for block in items_of(content_blocks, "content"):
        if field(block, "type") == "tool_use":
            calls.append(make_call(len(calls), field(block, "id"), field(block, "name"), field(block, "input"), provider="Anthropic", parsed=True))
    return calls


def tool_results_message(outcomes: Iterable[ToolExecutionOutcome]) -> dict[str, Any]:
    """The user message answering a step: one ``tool_result`` block per outcome, in order."""
    return {"role": "user", "content": [outcome.to_anthropic() for outcome in outcomes]}
