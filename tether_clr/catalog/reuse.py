"""When a kept :class:`~tether_clr.ToolAssembly` is exactly the one ``assemble(context, scope)`` would give now,
and the catalog's bounded cache of them (:class:`AssemblyCache`).

Every caller of ``ToolCatalog.assemble`` (``registry.assemble``: the MCP server in
both protocol eras, the agent-framework adapters, the model-tools loop, resume)
goes through one cache, kept by the catalog and invalidated by its revisions. An
assembly is served from it only while it is exact:

* the same **layers** (:meth:`~tether_clr.catalog.store.ToolCatalog.assemble` keys
  on the scopes of the request's lineage that hold registrations: two scopes that
  see the same layers see the same registrations, so a fresh per-request scope of
  a sessionless MCP request, or a new session's scope, finds the assembly another
  one made), the same **identity** (:func:`identity_key`: tenant, principal,
  scopes, environment, region, agent id and version; never the request or session
  id) and the same capability **query**;
* the same registry ``revision`` and ``policy_revision`` (every registration,
  disposal, status, metadata, pin, kill-switch, deny-rule, authority and control
  plane change bumps them; a bump empties the cache);
* it was :func:`keepable` when made: :attr:`~tether_clr.ToolAssembly.reusable`
  (no feature flag and no deny rule, host code that may answer differently for
  the same inputs, took part) and the scope authority is not live
  (:func:`authority_is_live`: a synchronous authority is asked by every
  assembly and may change its answer with no revision bump).

A hit is the kept snapshot rebound to the new request's context and scope
(:meth:`~tether_clr.ToolAssembly.for_request`): what a request can change
(its request and session ids, the deferred schemas it loads, native deferral)
lives on its own copy, never on the kept one; the kept one is never loaded.
Its omissions are those of the same selection, which depends on nothing a
request id can change. Whatever the snapshot, every call is still
re-authorized against the live registry right before its body.
Floor 3 (the catalog); pure apart from the cache's own state (guarded by the
catalog's lock).
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Hashable

from tether_clr.catalog.authority import Authority
from tether_clr.catalog.metadata import CapabilityQuery
from tether_clr.catalog.views import ToolAssembly
from tether_clr.records.context import RequestContext
from tether_clr.records.scope import AgentPipelineScope

__all__ = ["AssemblyCache", "authority_is_live", "identity_key", "keepable", "same_identity"]


def authority_is_live(authority: Authority | None) -> bool:
    """Whether an assembly asks ``authority`` (a synchronous one, or one that is not plainly a coroutine
    function): its answer may change between two requests with nothing else changing."""
    if authority is None:
        return False
    return not (inspect.iscoroutinefunction(authority) or inspect.iscoroutinefunction(getattr(authority, "__call__", None)))


def same_identity(a: RequestContext, b: RequestContext) -> bool:
    """Whether ``a`` and ``b`` are the same identity (``RequestContext.identity()``: all but the request and session ids)."""
    return a is b or identity_key(a) == identity_key(b)


def identity_key(context: RequestContext) -> tuple[Hashable, ...]:
    """The fields of ``context.identity()`` as a hashable key: all but the request and session ids."""
    return (
        context.tenant_id, context.principal_id, context.scopes, context.environment, context.region,
        context.agent_id, context.agent_version,
    )


def keepable(assembly: ToolAssembly, authority: Authority | None) -> bool:
    """Whether ``assembly`` may be kept for reuse: it is ``reusable`` and the scope authority is not live."""
    return assembly.reusable and not authority_is_live(authority)


Layers = tuple["AgentPipelineScope | None", ...]
"""The scopes of a request's lineage that hold registrations, outermost first (``None``: the global layer)."""

CacheKey = tuple[Layers, tuple[Hashable, ...], "CapabilityQuery | None"]

DEFAULT_LIMIT = 256
"""How many (layers, identity, query) keys one catalog keeps, least recently used first out."""


class AssemblyCache:
    """A bounded LRU of :func:`keepable` assemblies of one catalog, all of one ``(revision, policy_revision)``.

    Not thread-safe by itself: the catalog calls it with its lock held. ``hits`` and
    ``misses`` count :meth:`get` answers (for tests and operators; never reset).
    """

    __slots__ = ("_kept", "_revisions", "limit", "hits", "misses")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, got {limit!r}")
        self.limit = limit
        self._kept: OrderedDict[CacheKey, ToolAssembly] = OrderedDict()
        self._revisions: tuple[int, int] = (-1, -1)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)

    @staticmethod
    def key(layers: Layers, context: RequestContext, query: CapabilityQuery | None) -> CacheKey:
        return (layers, identity_key(context), query)

    def clear(self) -> None:
        """Forget everything (the catalog changed)."""
        self._kept.clear()

    def get(
        self, key: CacheKey, revisions: tuple[int, int], context: RequestContext, scope: AgentPipelineScope | None
    ) -> ToolAssembly | None:
        """The kept assembly of ``key`` at ``revisions``, rebound to ``context`` and ``scope``; else None."""
        if revisions != self._revisions:
            self._kept.clear()
            self._revisions = revisions
            self.misses += 1
            return None
        kept = self._kept.get(key)
        if kept is None:
            self.misses += 1
            return None
        self._kept.move_to_end(key)
        self.hits += 1
        return kept.rebound(context, scope)

    def keep(
        self, key: CacheKey, revisions: tuple[int, int], assembly: ToolAssembly, authority: Authority | None
    ) -> None:
        """Keep ``assembly`` (made at ``revisions`` with ``authority``) when it is :func:`keepable` and
        still current; evict the least recently used key beyond :attr:`limit`."""
        if revisions != self._revisions or not self.limit or not keepable(assembly, authority):
            return
        kept = self._kept
        kept[key] = assembly
        kept.move_to_end(key)
        while len(kept) > self.limit:
            kept.popitem(last=False)
