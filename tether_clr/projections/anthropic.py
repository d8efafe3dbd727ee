"""Anthropic's Messages API: tools, ``tool_use`` blocks read back, and ``tool_result`` blocks.

* :func:`to_anthropic_tools` projects an assembly (or a sealed view) as the
  ``tools`` of a Messages request (``{"name", "description", "input_schema"}``),
  optionally in Anthropic's strict tool use (``strict=True``), with a report.
* :func:`calls_from_anthropic` reads ``tool_use`` blocks into ``ToolCall`` s.
* ``outcome.to_anthropic()`` is the ``tool_result`` block; :func:`tool_results_message`
  (:mod:`tether_clr.projections.results`) the user message answering a step.

The dicts are what the ``anthropic`` SDK's ``ToolParam`` and message parameters
accept, and are typed as them for a type checker (``ToolUnionParam``,
``MessageParam``); the SDK's response objects are read by attribute. Nothing
here imports the SDK at run time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, cast

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.calls import anthropic_blocks, field, make_call
from tether_clr.projections.results import tool_results_message
from tether_clr.projections.source import native_deferral_tools, shown_tools
from tether_clr.projections.strict import ProjectionNote, ProjectionReport, strict_schema
from tether_clr.records.outcomes import ToolCall

if TYPE_CHECKING:
    from anthropic.types import ToolUnionParam

__all__ = ["AnthropicTools", "calls_from_anthropic", "to_anthropic_tools", "tool_results_message"]


class AnthropicTools(list["ToolUnionParam"]):
    """The projected tools (a plain list of dicts, ready for ``tools=``; ``list[ToolUnionParam]``
    for a type checker) and the :class:`ProjectionReport` of the projection (empty unless ``strict=True``)."""

    report: ProjectionReport

    def __init__(self, tools: Iterable[ToolUnionParam] = (), report: ProjectionReport | None = None) -> None:
        super().__init__(tools)
        self.report = report if report is not None else ProjectionReport()


AnthropicToolSearch = Literal["bm25", "regex"]

_SEARCH_TOOLS: dict[str, dict[str, str]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


def to_anthropic_tools(
    assembly: SealedToolCatalogView, tool_search: AnthropicToolSearch = "bm25", strict: bool = False
) -> AnthropicTools:
    """The tools of ``assembly`` for the Messages API, in its order; fresh dicts every call.

    ``strict=True`` asks for Anthropic's strict tool use: each schema is
    converted by Anthropic's rules (:func:`~tether_clr.projections.strict_schema`
    with ``provider="anthropic"``: closed objects, its keyword and format subset,
    no recursion) and the tool gets ``"strict": true``; a tool whose schema
    cannot be strict is projected as it is with ``"strict": false``, and
    ``.report`` says why, as :func:`~tether_clr.projections.to_openai_tools`
    does. The default stays ``False`` (no ``strict`` key, schemas as they are),
    so existing callers see the same tools; Anthropic also caps a request at 20
    strict tools, and compiles their schemas into one grammar.

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
    notes: list[ProjectionNote] = []
    for tool, deferred in listed:
        parameters, is_strict = tool.parameters, False
        if strict:
            converted = strict_schema(tool.parameters, provider="anthropic")
            notes.extend(ProjectionNote(tool.name, *note) for note in converted.notes)
            if converted.schema is not None:
                parameters, is_strict = converted.schema, True
        projected: dict[str, Any] = {"name": tool.name}
        if tool.description:
            projected["description"] = tool.description
        projected["input_schema"] = parameters
        if strict:
            projected["strict"] = is_strict
        if deferred:
            projected["defer_loading"] = True
        tools.append(projected)
    if native is not None:
        tools.append(dict(_SEARCH_TOOLS[tool_search]))
    return AnthropicTools(cast("list[ToolUnionParam]", tools), ProjectionReport(tuple(notes)))


def calls_from_anthropic(message: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a response, in order, as ``ToolCall`` s.

    Takes a Message or its ``content`` (a list of blocks), as the ``anthropic``
    SDK's objects or as dicts. A Message without ``tool_use`` blocks (text) is
    ``[]``, which ends a loop; anything else (text, a number, a dict of neither
    shape, an OpenAI ChatCompletion or Response) is a ``TypeError`` naming what
    to pass. ``input`` is a parsed object, so the raw text a call carries (and
    the log records) is its canonical JSON. Other blocks (text, thinking, server
    tools) are skipped; a malformed ``tool_use`` block becomes a call that ends INVALID_ARGS.
    """
    calls: list[ToolCall] = []
    for block in anthropic_blocks(message):
        if field(block, "type") == "tool_use":
            calls.append(make_call(len(calls), field(block, "id"), field(block, "name"), field(block, "input"), provider="Anthropic", parsed=True))
    return calls
