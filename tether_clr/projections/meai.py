"""Microsoft.Extensions.AI: the JSON of ``AIFunctionDeclaration`` s, and results as ``FunctionResultContent``.

:func:`to_meai_declarations` gives each tool as MEAI's web-default (camelCase)
JSON of an ``AIFunctionDeclaration``: ``{"name", "description", "jsonSchema"}``,
what ``AIFunctionFactory.CreateDeclaration(name, description, jsonSchema)``
takes. A result is ``outcome.to_function_result()`` (``{"$type":
"functionResult", "callId", "result"}``), whose ``result`` is the value, or the
content as ``AIContent`` JSON when the content is not the default text.
"""

from __future__ import annotations

from typing import Any

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.source import shown_tools

__all__ = ["to_meai_declarations"]


def to_meai_declarations(assembly: SealedToolCatalogView) -> list[dict[str, Any]]:
    """The tools of ``assembly`` as ``AIFunctionDeclaration`` JSON, in its order; fresh dicts every call."""
    return [
        {"name": tool.name, "description": tool.description, "jsonSchema": tool.parameters}
        for tool in shown_tools(assembly)
    ]
