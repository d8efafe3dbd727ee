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
from typing import Any, Literal

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.calls import field, items_of, make_call
from tether_clr.projections.source import native_deferral_tools, shown_tools
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome

__all__ = ["calls_from_anthropic", "to_anthropic_tools", "tool_results_message"]


AnthropicToolSearch = Literal["bm25", "regex"]

_SEARCH_TOOLS: dict[str, dict[str, str]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


def to_anthropic_tools(assembly: SealedToolCatalogView, tool_search: AnthropicToolSearch = "bm25") -> list[dict[str, Any]]:
    """The tools of ``assembly`` for the Messages API, in its order; fresh dicts every call.

    A snapshot made with ``with_native_deferral()`` that has deferred tools is
    projected with those tools' full schemas and ``"defer_loading": true``
    after the others, then Anthropic's tool search tool (``tool_search``:
    ``"bm25"``, ``tool_search_tool_bm25_20251119``, or ``"regex"``,
    ``tool_search_tool_regex_20251119``), and without the library's tool search.
    """
    if tool_search not in _SEARCH_TOOLS:
        raise ValueError(f'tool_search must be "bm25" or "regex", got {tool_search!r}')
    native = native_deferral_tools(assembly)
    if native is None:
        listed = [(tool, False) for tool in shown_tools(assembly)]
    else:
        listed = [(tool, False) for tool in native[0]] + [(tool, True) for tool in native[1]]
    tools: list[dict[str, Any]] = []
    for tool, deferred in listed:
        projected: dict[str, Any] = {"name": tool.name}
        if tool.description:
            projected["description"] = tool.description
        projected["input_schema"] = tool.parameters
        if deferred:
            projected["defer_loading"] = True
        tools.append(projected)
    if native is not None:
        tools.append(dict(_SEARCH_TOOLS[tool_search]))
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
