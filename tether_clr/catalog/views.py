"""Sealed views: the immutable catalog one model step is built from and executed against.

* :class:`SealedToolCatalogView` (``registry.seal(scope)``): the tools a scope
  sees, by name, with no request context: no tenant, principal or scope
  checks, catalog fields ``None``.
* :class:`ToolAssembly` (``registry.assemble(context, scope)``): a sealed view
  that is also the snapshot of one governed request: the definitions the
  model was shown, the bindings (model name -> exact tool version and schema
  hash), the revisions, the omissions and a digest.

Both keep the frozen entry of each tool as it was when sealed. What is *live*
is only consulted right before a body runs (:meth:`SealedToolCatalogView.live_refusal`):
a snapshot proves that a call was allowed when it was made, not now.

Layer 3 (the catalog): views decide what is visible and callable; they run nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

from tether_clr.catalog.assembly import CatalogSelection
from tether_clr.catalog.authority import Authority, scopes_now
from tether_clr.catalog.candidates import DenyRule
from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.reauthorization import reauthorize
from tether_clr.catalog.records import (
    DiscoveryResult,
    Omission,
    ReauthorizationReason,
    ToolBinding,
)
from tether_clr.foundations.arguments import DEFAULT_ARGUMENT_LIMITS, ArgumentLimits
from tether_clr.foundations.canonical import ordinal_key
from tether_clr.records.context import RequestContext
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.tools.protocol import Tool

__all__ = ["LivePolicy", "SealedToolCatalogView", "ToolAssembly"]


class LivePolicy(Protocol):
    """What a view reads of its catalog at execution, and nothing more: the live authority
    and deny rules (a :class:`~tether_clr.catalog.store.ToolCatalog` is one)."""

    @property
    def authority(self) -> Authority | None: ...

    @property
    def deny_rules(self) -> tuple[DenyRule, ...]: ...


def _lifecycle_refusal(status: ToolStatus) -> ReauthorizationReason | None:
    if status is ToolStatus.ACTIVE or status is ToolStatus.DEPRECATED:
        return None
    return "tool_retired" if status is ToolStatus.RETIRED else "tool_disabled"


class SealedToolCatalogView:
    """The catalog as one step of one scope sees it; immutable once made.

    ``resolve(name)`` finds a tool by its model-facing name, or by an alias of
    one (an alias never shadows a primary name; no fuzzy matching). The
    catalog fields (``context``, ``bindings``, ``registry_revision``,
    ``policy_revision``, ``digest``) are ``None`` on a plain view.
    ``argument_limits`` are the registry's :class:`ArgumentLimits` when it was sealed;
    ``catalog`` is the catalog that sealed it, read only through :class:`LivePolicy`.
    """

    __slots__ = ("scope", "catalog", "_entries", "_aliases", "_names", "argument_limits")

    def __init__(
        self,
        catalog: LivePolicy,
        scope: AgentPipelineScope | None,
        entries: Mapping[str, ToolEntry],
        argument_limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS,
        aliases: Mapping[str, str] | None = None,
        order: Sequence[str] | None = None,
    ) -> None:
        self.catalog = catalog
        self.scope = scope
        self.argument_limits = argument_limits
        self._entries = MappingProxyType(dict(entries))
        self._aliases: Mapping[str, str] = MappingProxyType(dict(aliases or {}))
        self._names: tuple[str, ...] | None = tuple(order) if order is not None else None  # sorted on first use

    def resolve(self, name: str) -> ToolEntry | None:
        entry = self._entries.get(name)
        if entry is None and self._aliases:
            target = self._aliases.get(name)
            if target is not None:
                entry = self._entries.get(target)
        return entry

    def get_tool(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return None if entry is None else entry.tool

    def _ordered(self) -> tuple[str, ...]:
        names = self._names
        if names is None:
            names = self._names = tuple(sorted(self._entries, key=ordinal_key))
        return names

    @property
    def names(self) -> list[str]:
        return list(self._ordered())

    @property
    def aliases(self) -> Mapping[str, str]:
        """Alias -> model name, for the tools of this view."""
        return self._aliases

    def get_declarations(self) -> list[ToolSchemaSnapshot]:
        return [self._entries[name].declaration() for name in self._ordered()]

    # ------------------------------------------------------ catalog fields
    @property
    def context(self) -> RequestContext | None:
        return None

    @property
    def bindings(self) -> Mapping[str, ToolBinding] | None:
        return None

    @property
    def registry_revision(self) -> int | None:
        return None

    @property
    def policy_revision(self) -> int | None:
        return None

    @property
    def digest(self) -> str | None:
        return None

    def binding_of(self, entry: ToolEntry) -> ToolBinding | None:
        """The binding a call to ``entry`` runs under; ``None`` on a plain view."""
        return None

    def scopes_now(self) -> frozenset[str] | Awaitable[frozenset[str]]:
        """A plain view has no principal: no scopes."""
        return frozenset()

    # ------------------------------------------------------ at execution
    def live_refusal(self, entry: ToolEntry, scopes: frozenset[str] | None = None) -> ReauthorizationReason | None:
        """Why ``entry`` may not run now, or ``None``.

        A plain view has no request context, so only the lifecycle is checked
        again: a version disabled or retired after sealing is refused
        (``tool_disabled`` / ``tool_retired``); one attribute read per call. A
        disposal does not stop a call of a plain view sealed before it, as
        before versions existed.
        """
        return _lifecycle_refusal(entry.record.current.candidate.status)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scope={self.scope!r}, tools={self.names!r})"


class ToolAssembly(SealedToolCatalogView):
    """The immutable snapshot one governed model request is built from and executed against.

    ``definitions`` (what the model is shown, in catalog order), ``bindings``
    (model name -> :class:`ToolBinding`), ``registry_revision``,
    ``policy_revision``, ``context``, ``omitted`` and ``digest`` (computed on
    first read: ``"sha256:"`` over the canonical form of the definitions,
    bindings, revisions, omissions and the context's identity). Passing it to
    ``execute_batch`` runs calls against exactly these bindings, each
    re-authorized against the live registry right before its body.
    """

    __slots__ = ("_selection", "_registry_revision", "_policy_revision", "_digest", "_bindings")

    def __init__(
        self,
        catalog: LivePolicy,
        scope: AgentPipelineScope | None,
        entries: Mapping[str, ToolEntry],
        selection: CatalogSelection,
        registry_revision: int,
        policy_revision: int,
        argument_limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS,
    ) -> None:
        super().__init__(
            catalog, scope, entries, argument_limits, selection.aliases, [c.model_name for c in selection.chosen]
        )
        self._selection = selection
        self._registry_revision = registry_revision
        self._policy_revision = policy_revision
        self._bindings = selection.bindings
        self._digest: str | None = None

    @property
    def context(self) -> RequestContext:
        return self._selection.context

    @property
    def bindings(self) -> Mapping[str, ToolBinding]:
        return self._bindings

    @property
    def definitions(self) -> tuple[ToolSchemaSnapshot, ...]:
        """The definitions the model is shown, in catalog order (fresh copies on every read)."""
        return self._selection.definitions

    @property
    def omitted(self) -> tuple[Omission, ...]:
        return self._selection.omitted

    @property
    def registry_revision(self) -> int:
        return self._registry_revision

    @property
    def policy_revision(self) -> int:
        return self._policy_revision

    @property
    def digest(self) -> str:
        found = self._digest
        if found is None:
            found = self._digest = self._selection.digest(self._registry_revision, self._policy_revision)
        return found

    def discovery(self) -> DiscoveryResult:
        """The same decision as a :class:`DiscoveryResult` (bindings, omissions, revisions)."""
        return self._selection.discovery(self._registry_revision, self._policy_revision)

    def get_declarations(self) -> list[ToolSchemaSnapshot]:
        """The definitions as the model was shown them (fresh copies)."""
        return list(self._selection.definitions)

    def binding_of(self, entry: ToolEntry) -> ToolBinding:
        return entry.candidate.binding

    def scopes_now(self) -> frozenset[str] | Awaitable[frozenset[str]]:
        """The principal's scopes now, from the registry's authority: a set, or an awaitable of one
        for an asynchronous authority (``AuthorityUnavailableError`` if it fails)."""
        return scopes_now(self.catalog.authority, self._selection.context)

    def live_refusal(self, entry: ToolEntry, scopes: frozenset[str] | None = None) -> ReauthorizationReason | None:
        """Re-authorize a bound call against the live registry, with the principal's scopes now.

        The bound registration must still be registered (``stale_binding``
        otherwise; a schema change is always a new version), ACTIVE or
        DEPRECATED, allowed for the tenant, covered by ``scopes``, and no live
        deny rule may object (see :func:`~tether_clr.catalog.assembly.reauthorize`).
        """
        record = entry.record
        live = record.current.candidate if record.alive else None
        return reauthorize(
            entry.candidate.binding,
            live,
            self._selection.context,
            self._selection.context.scopes if scopes is None else scopes,
            self.catalog.deny_rules,
        )
