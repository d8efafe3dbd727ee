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

import inspect
from typing import Any

from tether_clr.catalog.authority import Authority
from tether_clr.catalog.views import ToolAssembly
from tether_clr.records.context import RequestContext
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.registry import ToolRegistry

__all__ = ["assembly_for", "authority_is_live"]

_ASSEMBLY_KEY = "tether_clr.mcp.assembly"


def authority_is_live(authority: Authority | None) -> bool:
    """Whether an assembly asks ``authority`` (a synchronous one, or one that is not plainly a coroutine
    function): its answer may change between two requests with nothing else changing."""
    if authority is None:
        return False
    return not (inspect.iscoroutinefunction(authority) or inspect.iscoroutinefunction(getattr(authority, "__call__", None)))


def _same_identity(a: RequestContext, b: RequestContext) -> bool:
    return (
        a.tenant_id == b.tenant_id
        and a.principal_id == b.principal_id
        and a.scopes == b.scopes
        and a.environment == b.environment
        and a.region == b.region
        and a.agent_id == b.agent_id
        and a.agent_version == b.agent_version
    )


def assembly_for(
    registry: ToolRegistry, state: dict[str, Any] | None, context: RequestContext, scope: AgentPipelineScope | None
) -> ToolAssembly:
    """The assembly of this request: the session's kept one (``state``: the SDK connection's state,
    ``None`` when there is none to keep it in) when it is exact (see the module), else a new one."""
    if state is not None:
        kept = state.get(_ASSEMBLY_KEY)
        if isinstance(kept, ToolAssembly) and (
            kept.scope is scope
            and kept.registry_revision == registry.revision
            and kept.policy_revision == registry.policy_revision
            and _same_identity(kept.context, context)
        ):  # the authority was not live when it was kept, and replacing it bumps the revisions
            return kept.for_request(context)
    assembly = registry.assemble(context, scope)
    if state is not None:
        if assembly.reusable and not authority_is_live(registry.authority):
            state[_ASSEMBLY_KEY] = assembly
        else:
            state.pop(_ASSEMBLY_KEY, None)
    return assembly
