"""What a projection reads from an assembly or a view: each tool the model is shown, in order, with its metadata."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tether_clr.catalog.metadata import ToolMetadata
from tether_clr.catalog.views import SealedToolCatalogView

__all__ = ["ShownTool", "shown_tools"]


@dataclass(frozen=True, slots=True)
class ShownTool:
    """One tool as a model is shown it: name, description, a fresh copy of its parameters schema, its metadata."""

    name: str
    description: str
    parameters: dict[str, Any]
    metadata: ToolMetadata


def shown_tools(view: SealedToolCatalogView) -> list[ShownTool]:
    """The tools of ``view`` (a :class:`~tether_clr.ToolAssembly` or a sealed view) in its deterministic order.

    Only what the view shows: its declarations (an assembly's definitions, as the
    model was shown them), each schema a fresh copy. ``TypeError`` for anything else.
    """
    if not isinstance(view, SealedToolCatalogView):
        raise TypeError(f"expected a ToolAssembly or a sealed view (registry.assemble(...) or registry.seal(...)), got {type(view).__name__}")
    shown: list[ShownTool] = []
    for declaration in view.get_declarations():
        entry = view.resolve(declaration.name)
        metadata = ToolMetadata() if entry is None else entry.candidate.metadata
        shown.append(ShownTool(declaration.name, declaration.description, copy.deepcopy(declaration.parameters), metadata))
    return shown
