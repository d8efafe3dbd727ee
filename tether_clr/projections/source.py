"""What a projection reads from an assembly or a view: each tool the model is shown, in order, with its metadata."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tether_clr.catalog.metadata import ToolMetadata
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.records.declaration import ToolSchemaSnapshot

__all__ = ["ShownTool", "native_deferral_tools", "shown_tools"]


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
    return _shown(view, view.get_declarations())


def native_deferral_tools(view: SealedToolCatalogView) -> tuple[list[ShownTool], list[ShownTool]] | None:
    """For a provider with its own tool search: ``(shown, deferred)``, or ``None`` when it does not apply.

    It applies to a snapshot made with ``with_native_deferral()`` that has deferred tools not
    loaded: ``shown`` are its tools with parameters but the library's tool search (the
    provider's replaces it), ``deferred`` the deferred tools the caller may see, with full schemas.
    """
    if not isinstance(view, SealedToolCatalogView):
        raise TypeError(f"expected a ToolAssembly or a sealed view (registry.assemble(...) or registry.seal(...)), got {type(view).__name__}")
    if not view.native_deferral or not view.deferred:
        return None
    search = view.search_tool_name
    shown = [tool for tool in _shown(view, view.get_declarations()) if tool.name != search]
    return shown, _shown(view, view.deferred_declarations())


def _shown(view: SealedToolCatalogView, declarations: list[ToolSchemaSnapshot]) -> list[ShownTool]:
    shown: list[ShownTool] = []
    for declaration in declarations:
        entry = view.resolve(declaration.name)
        metadata = ToolMetadata() if entry is None else entry.candidate.metadata
        shown.append(ShownTool(declaration.name, declaration.description, copy.deepcopy(declaration.parameters), metadata))
    return shown
