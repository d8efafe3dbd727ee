"""The tool search: the built-in tool that finds deferred tools, in the snapshot of the call only.

``registry.enable_tool_search(name="tool_search")`` registers a :class:`ToolSearch`
globally, as a read-only, idempotent built-in tool. Its arguments are
``{"query": str, "limit": int}`` (``limit`` from 1 to :data:`MAX_SEARCH_LIMIT`,
default :data:`DEFAULT_SEARCH_LIMIT`; the schema enforces the bounds).

Where it searches: the pipeline runs a :class:`~tether_clr.catalog.builtin.CatalogTool`
with the sealed view the call resolved against (the request's
:class:`~tether_clr.ToolAssembly`), and the candidates are that view's deferred
tools not yet loaded (:meth:`~tether_clr.SealedToolCatalogView.deferred_entries`):
the frozen entries this tenant, principal and scope may see, and nothing else.
The live catalog is never read, so neither the result, the message nor the
time taken depends on a tool the caller cannot be shown.

The ranking (:func:`rank_deferred`), deterministic:

1. a tool whose name equals the query (ignoring case and surrounding spaces)
   comes first, a case-exact match before a case-insensitive one;
2. then by score, highest first. The query and each field are split into
   words (letters and digits; ``snake_case``, ``kebab-case`` and ``camelCase``
   split too) and compared case-insensitively; each query word scores, per
   field, its best match: the full weight when it equals a word of the field,
   half when it is at least 3 characters long and a prefix of one. Weights:
   name 12, search hint 8, tags 8, description 2;
3. then in the snapshot's order (built-in tools by ordinal name, then plugin tools).

A tool with score 0 that is not an exact name match is not a match. The result
value is ``{"query": query, "tools": [{"name", "description", "parameters"}, ...]}``,
the full declarations of the matches, and its content a readable text listing them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from tether_clr.catalog.builtin import CatalogTool
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.errors import ToolArgumentError
from tether_clr.records.content import TextPart
from tether_clr.records.outcomes import ToolExecutionOutcome

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "MAX_SEARCH_LIMIT",
    "SEARCH_WEIGHTS",
    "ToolSearch",
    "rank_deferred",
    "search_result_text",
    "search_terms",
]

MAX_SEARCH_LIMIT = 20
"""The largest ``limit`` a search accepts: at most this many declarations come back."""

DEFAULT_SEARCH_LIMIT = 5
"""The ``limit`` when a call gives none."""

SEARCH_WEIGHTS: dict[str, int] = {"name": 12, "search_hint": 8, "tags": 8, "description": 2}
"""Per field, what a query word equal to one of its words scores (a prefix scores half)."""

_MAX_QUERY_CHARS = 1000
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")


def search_terms(text: str) -> list[str]:
    """The words of ``text``, case-folded: letters and digits, split at ``_``, ``-``, spaces and camelCase."""
    return _WORD.findall(_CAMEL.sub(" ", text).casefold())


def _field_score(terms: Sequence[str], words: set[str], weight: int) -> int:
    score = 0
    for term in terms:
        if term in words:
            score += weight
        elif len(term) >= 3 and any(word.startswith(term) for word in words):
            score += weight // 2
    return score


def rank_deferred(entries: Sequence[ToolEntry], query: str, limit: int) -> list[ToolEntry]:
    """The matches of ``query`` among ``entries`` (in the snapshot's order), best first, at most ``limit``.

    See the module docstring for the ranking. Only ``entries`` are read.
    """
    wanted = query.strip()
    folded = wanted.casefold()
    terms = list(dict.fromkeys(search_terms(wanted)))
    ranked: list[tuple[int, int, int, ToolEntry]] = []
    for position, entry in enumerate(entries):
        metadata = entry.candidate.metadata
        exact = 0 if entry.name == wanted else 1 if entry.name.casefold() == folded and folded else 2
        score = (
            _field_score(terms, set(search_terms(entry.name)), SEARCH_WEIGHTS["name"])
            + _field_score(terms, set(search_terms(metadata.search_hint or "")), SEARCH_WEIGHTS["search_hint"])
            + _field_score(terms, {w for tag in metadata.tags for w in search_terms(tag)}, SEARCH_WEIGHTS["tags"])
            + _field_score(terms, set(search_terms(entry.description)), SEARCH_WEIGHTS["description"])
        )
        if exact < 2 or score > 0:
            ranked.append((exact, -score, position, entry))
    ranked.sort(key=lambda item: item[:3])
    return [item[3] for item in ranked[:limit]]


def _arguments(arguments: Any) -> tuple[str, int]:
    if not isinstance(arguments, dict):
        raise ToolArgumentError("the arguments must be an object with a query")
    query = arguments.get("query")
    if not isinstance(query, str):
        raise ToolArgumentError("query must be a string")
    if len(query) > _MAX_QUERY_CHARS:
        raise ToolArgumentError(f"query must be at most {_MAX_QUERY_CHARS} characters")
    limit = arguments.get("limit", DEFAULT_SEARCH_LIMIT)
    if limit is None:
        limit = DEFAULT_SEARCH_LIMIT
    if type(limit) is not int or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ToolArgumentError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    return query, limit


class ToolSearch(CatalogTool):
    """The built-in tool search (``registry.enable_tool_search``): ranks the deferred tools of the call's snapshot."""

    searches_deferred: ClassVar[bool] = True

    def __init__(self, name: str = "tool_search") -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"the tool search needs a non-empty name, got {name!r}")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return (
            "Search the tools that are listed without their parameters. Returns the full declarations "
            f"of the best matches (at most `limit`, 1 to {MAX_SEARCH_LIMIT}, default {DEFAULT_SEARCH_LIMIT}); "
            "an exact tool name finds that tool."
        )

    @property
    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A tool name, or words about what the tool does."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "default": DEFAULT_SEARCH_LIMIT,
                    "description": f"How many tools at most (1 to {MAX_SEARCH_LIMIT}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return True  # it reads a frozen snapshot only

    async def invoke_in_view(self, view: SealedToolCatalogView, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        query, limit = _arguments(arguments)
        matches = rank_deferred(view.deferred_entries(), query, limit)
        return {
            "query": query,
            "tools": [
                {"name": e.name, "description": e.description, "parameters": e.declaration().parameters} for e in matches
            ],
        }


def search_result_text(outcome: ToolExecutionOutcome) -> TextPart:
    """The readable text of a search's result (the registration's ``project_content``): each match with its schema."""
    value = outcome.value if isinstance(outcome.value, dict) else {}
    tools = value.get("tools") or []
    if not tools:
        return TextPart(f"No tool matches {value.get('query', '')!r}.")
    lines = [f"{len(tools)} tool(s) match {value.get('query', '')!r}, with their parameters:"]
    for tool in tools:
        description = f": {tool['description']}" if tool.get("description") else ""
        lines.append(f"- {tool['name']}{description}\n  parameters: {json.dumps(tool['parameters'], ensure_ascii=False, sort_keys=True)}")
    return TextPart("\n".join(lines))
