"""When a kept :class:`~tether_clr.ToolAssembly` is exactly the one ``assemble(context, scope)`` would give now.

A host that serves many requests of one identity (the MCP server per session,
the agent-framework adapters per run) may keep the last assembly and reuse it
instead of assembling again, but only while it is exact:

* the same scope object and the same identity (:func:`same_identity`: tenant,
  principal, scopes, environment, region, agent id and version; only the
  request id may differ, and the reused snapshot is rebound to the new
  request's context with :meth:`~tether_clr.ToolAssembly.for_request`);
* the same registry ``revision`` and ``policy_revision`` (every registration,
  disposal, status, metadata, pin, kill-switch, deny-rule and authority change
  bumps them);
* it was :func:`keepable` when kept: :attr:`~tether_clr.ToolAssembly.reusable`
  (no feature flag and no deny rule, host code that may answer differently
  for the same inputs, took part) and the scope authority is not live
  (:func:`authority_is_live`: a synchronous authority is asked by every
  assembly and may change its answer with no revision bump).

Whatever the snapshot, every call is still re-authorized against the live
registry right before its body. Floor 3 (the catalog); pure.
"""

from __future__ import annotations

import inspect

from tether_clr.catalog.authority import Authority
from tether_clr.catalog.views import ToolAssembly
from tether_clr.records.context import RequestContext
from tether_clr.records.scope import AgentPipelineScope

__all__ = ["authority_is_live", "keepable", "reused", "same_identity"]


def authority_is_live(authority: Authority | None) -> bool:
    """Whether an assembly asks ``authority`` (a synchronous one, or one that is not plainly a coroutine
    function): its answer may change between two requests with nothing else changing."""
    if authority is None:
        return False
    return not (inspect.iscoroutinefunction(authority) or inspect.iscoroutinefunction(getattr(authority, "__call__", None)))


def same_identity(a: RequestContext, b: RequestContext) -> bool:
    """Whether ``a`` and ``b`` are the same identity (``RequestContext.identity()``: all but the request and session ids)."""
    return a is b or (
        a.tenant_id == b.tenant_id
        and a.principal_id == b.principal_id
        and a.scopes == b.scopes
        and a.environment == b.environment
        and a.region == b.region
        and a.agent_id == b.agent_id
        and a.agent_version == b.agent_version
    )


def keepable(assembly: ToolAssembly, authority: Authority | None) -> bool:
    """Whether ``assembly`` may be kept for reuse: it is ``reusable`` and the scope authority is not live."""
    return assembly.reusable and not authority_is_live(authority)


def reused(
    kept: ToolAssembly | None, context: RequestContext, scope: AgentPipelineScope | None, revision: int, policy_revision: int
) -> ToolAssembly | None:
    """``kept`` (a :func:`keepable` assembly) rebound to ``context`` when it is exact for ``context`` and
    ``scope`` at the registry's current ``revision`` and ``policy_revision``; else None (assemble again)."""
    if (
        kept is not None
        and kept.scope is scope
        and kept.registry_revision == revision
        and kept.policy_revision == policy_revision
        and same_identity(kept.context, context)
    ):
        return kept.for_request(context)
    return None
