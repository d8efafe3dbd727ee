"""Projections of an assembly (or a sealed view) and of outcomes to OpenAI, Anthropic, MCP and MEAI.

Pure functions: none changes the catalog; each projects only what the assembly
shows, in its deterministic order, as fresh, detached data. The plain-dict forms
need no client SDK; the SDK-typed ones (:func:`to_mcp_tools`,
:func:`to_call_tool_result`) import theirs when called, and name the
``tether_clr[projections]`` extra when it is missing. See docs/projections.md.
"""

from __future__ import annotations

from tether_clr.foundations.exports import rehome
from tether_clr.projections.anthropic import (
    AnthropicTools,
    calls_from_anthropic,
    to_anthropic_tools,
    tool_results_message,
)
from tether_clr.projections.mcp import (
    mcp_annotations,
    mcp_tool_dicts,
    to_call_tool_result,
    to_mcp_tools,
)
from tether_clr.projections.meai import to_meai_declarations
from tether_clr.projections.openai import (
    OpenAITools,
    calls_from_openai,
    chat_tool_messages,
    openai_allowed_tools,
    responses_input_items,
    to_openai_tools,
)
from tether_clr.projections.strict import (
    ProjectionNote,
    ProjectionReport,
    StrictProvider,
    StrictSchema,
    strict_schema,
)

__all__ = [
    "AnthropicTools",
    "OpenAITools",
    "ProjectionNote",
    "ProjectionReport",
    "StrictProvider",
    "StrictSchema",
    "calls_from_anthropic",
    "calls_from_openai",
    "chat_tool_messages",
    "mcp_annotations",
    "mcp_tool_dicts",
    "openai_allowed_tools",
    "responses_input_items",
    "strict_schema",
    "to_anthropic_tools",
    "to_call_tool_result",
    "to_mcp_tools",
    "to_meai_declarations",
    "to_openai_tools",
    "tool_results_message",
]


rehome(globals(), __name__)
