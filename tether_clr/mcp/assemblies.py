"""The caller's assembly for one MCP request: made once per session and identity, reused while it is exact.

Every request gets the assembly ``registry.assemble(context, scope)`` would give it
now. A handshake-era session keeps the last one it was given (in the SDK
connection's state, beside its scope) and reuses it for a later request when a
fresh one would be the same snapshot:

* the same scope (the session's) and the same identity (``context.identity()``:
  tenant, principal, scopes, environment, region, agent id and version; only the
  request id may differ, and the reused snapshot is rebound to the new request's
  context with :meth:`~tether_clr.ToolAssembly.for_request`, so audit records and
  re-authorization see this request);
* the same ``registry.revision`` and ``policy_revision`` (every registration,
  disposal, status, metadata, pin, deny-rule and authority change bumps them);
* :attr:`~tether_clr.ToolAssembly.reusable`: no feature flag (``enabled_when``)
  and no deny rule took part in it, since those are host code that may answer
  differently for the same inputs;
* the registry's scope authority is none, or asynchronous. A synchronous
  authority is asked by every assembly and its answer may change at any time
  without a revision bump, so with one every request is assembled afresh. An
  asynchronous one is never asked by an assembly (the context's scopes count),
  so the snapshot does not depend on it.

Whatever the snapshot, every call is still re-authorized against the live
registry right before its body (status, tenant, the authority's scopes *now*,
deny rules): a permission revoked after the snapshot was made refuses the call
(DENIED ``scope_revoked``), cached or not. In the 2026-07-28 era each request
has its own scope and connection, so each is assembled afresh.
"""

from __future__ import annotations

from typing import Any

from tether_clr.catalog.reuse import authority_is_live, keepable, reused
from tether_clr.catalog.views import ToolAssembly
from tether_clr.records.context import RequestContext
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.registry import ToolRegistry

__all__ = ["assembly_for", "authority_is_live"]

_ASSEMBLY_KEY = "tether_clr.mcp.assembly"


def assembly_for(
    registry: ToolRegistry, state: dict[str, Any] | None, context: RequestContext, scope: AgentPipelineScope | None
) -> ToolAssembly:
    """The assembly of this request: the session's kept one (``state``: the SDK connection's state,
    ``None`` when there is none to keep it in) when it is exact (see the module), else a new one."""
    if state is not None:
        kept = state.get(_ASSEMBLY_KEY)
        found = reused(kept if isinstance(kept, ToolAssembly) else None, context, scope, registry.revision,
                       registry.policy_revision)  # the authority was not live when it was kept
        if found is not None:
            return found
    assembly = registry.assemble(context, scope)
    if state is not None:
        if keepable(assembly, registry.authority):
            state[_ASSEMBLY_KEY] = assembly
        else:
            state.pop(_ASSEMBLY_KEY, None)
    return assembly
