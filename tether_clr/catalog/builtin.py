"""The base of the catalog's own tools: tools whose body reads the snapshot of the call.

A :class:`CatalogTool` (the tool search, :mod:`tether_clr.catalog.search`) is
registered like any tool, through the registry, and governed like any tool;
only its body differs: the pipeline runs it with :meth:`CatalogTool.invoke_in_view`,
handing it the sealed view (the :class:`~tether_clr.ToolAssembly`) the call
resolved against, so it reads what *this request* may see and never the live
catalog. Only subclasses of this class get the view; a host's own tool never does.

Layer 3 (the catalog): it imports nothing from views or entries, so both may import it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.errors import ToolError

__all__ = ["CatalogTool"]


class CatalogTool:
    """A tool of the catalog itself: the pipeline calls :meth:`invoke_in_view` with the call's view.

    ``searches_deferred`` says that the tool is a tool search: a call to a
    deferred tool whose schema is not loaded points to it, and the native
    deferral projections leave it out (the provider's own search replaces it).
    """

    searches_deferred: ClassVar[bool] = False

    async def invoke_in_view(self, view: Any, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        raise NotImplementedError

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        """Outside a batch there is no snapshot to read: refused (TOOL_ERROR)."""
        raise ToolError(f"{type(self).__name__} runs only through execute_batch, against the view of the call")
