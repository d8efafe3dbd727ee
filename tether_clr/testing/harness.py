"""A fresh registry with its root scope, what the ``tether_registry`` fixture gives, and a call builder.

:class:`KitRegistry` holds a new :class:`~tether_clr.ToolRegistry` and a root
:class:`~tether_clr.AgentPipelineScope` that has a session and an owner (so a
call that needs approval can be asked about, instead of failing DENIED for
want of someone to ask), and a few shortcuts a test writes often: ``add`` a
tool with registration options, ``seal`` the scope's view, ``run`` a batch.
Everything else is on ``.registry``, the real thing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tether_clr.catalog.registration import Registration, ToolRegistrationOptions
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.ports import ToolCallSink
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended
from tether_clr.registry import ToolRegistry
from tether_clr.tools.python_function import PythonFunction

__all__ = ["KitRegistry", "ROOT_OWNER", "ROOT_SESSION", "tool_call"]

ROOT_SESSION = "test-session"
ROOT_OWNER = "tester"


def tool_call(call_id: str, name: str, arguments: Any = None, **kwargs: Any) -> ToolCall:
    """A model's proposed call: ``arguments`` a dict (sent as its JSON text), or the raw text itself (kept as
    it is, so malformed JSON reaches the pipeline); ``kwargs`` go to :class:`~tether_clr.ToolCall`."""
    raw = arguments if isinstance(arguments, str) else json.dumps({} if arguments is None else arguments)
    return ToolCall(call_id, name, raw, **kwargs)


@dataclass
class KitRegistry:
    """A registry (``registry``) and its root scope (``scope``: session ``test-session``, owner ``tester``)."""

    registry: ToolRegistry = field(default_factory=ToolRegistry)
    scope: AgentPipelineScope = field(default_factory=lambda: AgentPipelineScope(session_id=ROOT_SESSION, owner=ROOT_OWNER))

    def add(self, tool: Any, name: str | None = None, **options: Any) -> Registration:
        """Register ``tool`` (a tool, or a callable made a :class:`~tether_clr.PythonFunction` named ``name``)
        in the root scope; ``options`` are :class:`~tether_clr.ToolRegistrationOptions` fields."""
        if not hasattr(tool, "invoke"):
            if not callable(tool):
                raise TypeError(f"not a tool or a callable: {tool!r}")
            tool = PythonFunction.from_callable(tool, name=name)
        return self.registry.register(tool, self.scope, ToolRegistrationOptions(**options))

    def seal(self) -> SealedToolCatalogView:
        """The view of the root scope now (what ``execute_batch`` runs against)."""
        return self.registry.seal(self.scope)

    async def run(
        self, calls: Sequence[ToolCall], *, sink: ToolCallSink | None = None, **kwargs: Any
    ) -> list[ToolExecutionOutcome] | BatchSuspended:
        """``execute_batch(calls, self.seal(), sink=sink, **kwargs)``: the outcomes in model order, or a suspension."""
        return await self.registry.execute_batch(list(calls), self.seal(), sink=sink, **kwargs)
