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

import copy
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal, Protocol, TypeVar

from tether_clr.catalog.assembly import CatalogSelection
from tether_clr.catalog.authority import Authority, scopes_now
from tether_clr.catalog.builtin import CatalogTool
from tether_clr.catalog.candidates import DenyRule
from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.kill_switches import KillSwitch, matching_switch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.reauthorization import reauthorize
from tether_clr.catalog.records import (
    DeferredTool,
    DiscoveryResult,
    Omission,
    ReauthorizationReason,
    ToolBinding,
)
from tether_clr.foundations.arguments import DEFAULT_ARGUMENT_LIMITS, ArgumentLimits
from tether_clr.foundations.canonical import ordinal_key
from tether_clr.records.context import RequestContext
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.tools.protocol import Tool

__all__ = ["ControlFreshness", "LivePolicy", "LiveRefusal", "SealedToolCatalogView", "ToolAssembly"]

_View = TypeVar("_View", bound="SealedToolCatalogView")

LiveRefusal = ReauthorizationReason | Literal["control_stale"]
"""Why a call may not run now: a re-authorization reason (DENIED), or ``control_stale`` (UNAVAILABLE)."""


class ControlFreshness(Protocol):
    """How fresh a host's view of the shared control plane is (a :class:`~tether_clr.catalog.attachment.ControlAttachment`)."""

    fresh_as_of: float
    max_staleness: float


class LivePolicy(Protocol):
    """What a view reads of its catalog at execution, and nothing more: the live authority,
    deny rules and kill switches, and the control plane's freshness when attached
    (a :class:`~tether_clr.catalog.store.ToolCatalog` is one)."""

    @property
    def authority(self) -> Authority | None: ...

    @property
    def deny_rules(self) -> tuple[DenyRule, ...]: ...

    @property
    def kill_switches(self) -> tuple[KillSwitch, ...]: ...

    @property
    def control(self) -> ControlFreshness | None: ...


def _stale(control: ControlFreshness) -> bool:
    """The fail-closed rule of an attached host: no body runs on a view older than ``max_staleness``."""
    return time.monotonic() - control.fresh_as_of > control.max_staleness


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

    Deferred tools (``ToolMetadata(deferred=True)``, named in ``deferred``) are
    bound and callable by name, but listed without their parameters
    (:attr:`deferred`) until a snapshot loads them (:meth:`with_loaded`); a call
    to one not loaded is refused INVALID_ARGS ``schema_not_loaded``
    (:attr:`unloaded`), unless the snapshot uses the provider's own deferral
    (:meth:`with_native_deferral`).
    """

    __slots__ = (
        "scope", "catalog", "_entries", "_aliases", "_names", "argument_limits",
        "_deferred", "_loaded", "_native", "_waiting", "unloaded",
    )

    def __init__(
        self,
        catalog: LivePolicy,
        scope: AgentPipelineScope | None,
        entries: Mapping[str, ToolEntry],
        argument_limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS,
        aliases: Mapping[str, str] | None = None,
        order: Sequence[str] | None = None,
        deferred: Iterable[str] = (),
    ) -> None:
        self.catalog = catalog
        self.scope = scope
        self.argument_limits = argument_limits
        self._entries = MappingProxyType(dict(entries))
        self._aliases: Mapping[str, str] = MappingProxyType(dict(aliases or {}))
        self._names: tuple[str, ...] | None = tuple(order) if order is not None else None  # sorted on first use
        self._deferred: frozenset[str] = frozenset(deferred)
        self._loaded: frozenset[str] = frozenset()
        self._native = False
        self._waiting: frozenset[str] = self._deferred
        self.unloaded: frozenset[str] = self._deferred
        """The model names a call is refused ``schema_not_loaded`` for: deferred, not loaded, and
        the snapshot does not use native deferral. Empty (falsy) in a view with no deferred tool."""

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
        """The declarations shown with their parameters, in order: every tool but the deferred ones not loaded."""
        waiting = self._waiting
        return [self._entries[name].declaration() for name in self._ordered() if name not in waiting]

    # ------------------------------------------------------ deferred tools
    @property
    def deferred(self) -> tuple[DeferredTool, ...]:
        """The deferred tools whose schema this snapshot has not loaded, in its order: name, description, hint."""
        waiting = self._waiting
        if not waiting:
            return ()
        return tuple(
            DeferredTool(name, self._entries[name].description, self._entries[name].candidate.metadata.search_hint)
            for name in self._ordered()
            if name in waiting
        )

    def deferred_declarations(self) -> list[ToolSchemaSnapshot]:
        """The full declarations of :attr:`deferred`, in order (what native deferral sends with ``defer_loading``)."""
        waiting = self._waiting
        return [self._entries[name].declaration() for name in self._ordered() if name in waiting]

    def deferred_entries(self) -> list[ToolEntry]:
        """The frozen entries of :attr:`deferred`, in order: what a tool search ranks, and nothing else."""
        waiting = self._waiting
        return [self._entries[name] for name in self._ordered() if name in waiting]

    @property
    def loaded(self) -> frozenset[str]:
        """The deferred tools whose schema this snapshot loaded (:meth:`with_loaded`)."""
        return self._loaded

    @property
    def native_deferral(self) -> bool:
        """Whether the provider keeps the deferred schemas (:meth:`with_native_deferral`)."""
        return self._native

    @property
    def search_tool_name(self) -> str | None:
        """The name of the tool search in this view (``registry.enable_tool_search``), or ``None``."""
        for name in self._ordered():
            entry = self._entries[name]
            if entry.catalog_tool and isinstance(entry.tool, CatalogTool) and entry.tool.searches_deferred:
                return name
        return None

    def with_loaded(self: _View, names: Iterable[str]) -> _View:
        """A new snapshot in which the schemas of the deferred tools ``names`` are loaded; this one is unchanged.

        A name (or alias) of a tool that is not deferred, or already loaded, is
        accepted and changes nothing. A name this snapshot does not show, whether
        it exists elsewhere (another tenant's tool, a disabled version) or
        nowhere, raises the same ``LookupError``: ``no tool named '<name>' is
        visible in this snapshot``. ``names`` must be an iterable of strings
        (``TypeError`` for a bare string or anything else). An assembly's
        digest covers what is loaded, so the new snapshot's differs.
        """
        if isinstance(names, str | bytes) or not isinstance(names, Iterable):
            raise TypeError(f"names must be an iterable of tool names, got {type(names).__name__}")
        loaded = set(self._loaded)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"each tool name must be a str, got {type(name).__name__}")
            entry = self.resolve(name)
            if entry is None:
                raise LookupError(f"no tool named {name!r} is visible in this snapshot")
            if entry.name in self._deferred:
                loaded.add(entry.name)
        return self._derived(frozenset(loaded), self._native)

    def with_loaded_from(self: _View, outcomes: Iterable[ToolExecutionOutcome]) -> _View:
        """:meth:`with_loaded` of every tool the successful tool-search outcomes among ``outcomes`` returned.

        The step after a search: ``assembly = assembly.with_loaded_from(outcomes)``.
        Outcomes of other tools, and failed ones, are ignored.
        """
        search = self.search_tool_name
        names: list[str] = []
        for outcome in outcomes:
            if search is None or outcome.failure is not None or self._aliases.get(outcome.name, outcome.name) != search:
                continue
            value = outcome.value
            if isinstance(value, dict):
                names.extend(t["name"] for t in value.get("tools", ()) if isinstance(t, dict) and isinstance(t.get("name"), str))
        return self.with_loaded(names)

    def with_native_deferral(self: _View) -> _View:
        """A new snapshot for a provider that keeps deferred schemas on its side (OpenAI Responses, Anthropic).

        Its OpenAI Responses and Anthropic projections send the deferred tools
        with their full schemas and ``defer_loading: true`` and the provider's
        tool search (instead of the library's); calls to deferred tools are not
        refused ``schema_not_loaded``. Chat Completions, MCP and MEAI have no
        native deferral: they project it as any snapshot (the library's search).
        """
        return self._derived(self._loaded, True)

    def _twin(self: _View) -> _View:
        """A shallow copy, as ``copy.copy`` makes, at a fraction of its cost (the slots named here; a
        subclass with slots or a ``__dict__`` of its own is copied by ``copy.copy``)."""
        if type(self) not in _OWN_VIEWS:
            return copy.copy(self)
        twin = object.__new__(type(self))
        twin.scope, twin.catalog, twin.argument_limits, twin.unloaded = self.scope, self.catalog, self.argument_limits, self.unloaded
        twin._entries, twin._aliases, twin._names = self._entries, self._aliases, self._names
        twin._deferred, twin._loaded, twin._native, twin._waiting = self._deferred, self._loaded, self._native, self._waiting
        return twin

    def _derived(self: _View, loaded: frozenset[str], native: bool) -> _View:
        twin = self._twin()
        twin._loaded = loaded
        twin._native = native
        twin._waiting = self._deferred - loaded
        twin.unloaded = frozenset() if native else twin._waiting
        return twin

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
    def live_refusal(self, entry: ToolEntry, scopes: frozenset[str] | None = None) -> LiveRefusal | None:
        """Why ``entry`` may not run now, or ``None``.

        A plain view has no request context, so only the lifecycle is checked
        again: a version disabled or retired after sealing is refused
        (``tool_disabled`` / ``tool_retired``); one attribute read per call. A
        disposal does not stop a call of a plain view sealed before it, as
        before versions existed. With a control plane attached, a view older
        than its ``max_staleness`` refuses ``control_stale`` first; a kill
        switch that matches refuses ``kill_switch`` (one naming a tenant or a
        principal matches here too: a plain view has neither to compare).
        """
        catalog = self.catalog
        control = catalog.control
        if control is not None and _stale(control):
            return "control_stale"
        candidate = entry.record.current.candidate
        found = _lifecycle_refusal(candidate.status)
        if found is None and catalog.kill_switches:
            if matching_switch(catalog.kill_switches, candidate.logical_name, candidate.semver, None) is not None:
                return "kill_switch"
        return found

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
    bindings, revisions, omissions and the context's identity, and, when it
    has deferred tools, of what is deferred and loaded). Passing it to
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
            catalog, scope, entries, argument_limits, selection.aliases, [c.model_name for c in selection.chosen],
            selection.deferred_names,
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
        """The definitions the model is shown with their parameters, in catalog order (fresh copies on
        every read): a deferred tool's only once loaded (:meth:`with_loaded`)."""
        return self._selection.shown_definitions(self._loaded)

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
            found = self._digest = self._selection.digest(
                self._registry_revision, self._policy_revision, loaded=self._loaded, native_deferral=self._native
            )
        return found

    @property
    def reusable(self) -> bool:
        """Whether this snapshot may serve a later request of the same identity at the same revisions.

        True when no feature flag (``enabled_when``) and no deny rule took part in
        assembling it: the selection is then a function of the registry's
        revisions, the context's identity and the scopes it was assembled with, so
        an assembly made again with those would be this one. The catalog's cache of
        assemblies (:mod:`tether_clr.catalog.reuse`) keys them on exactly those and
        rebinds the request with :meth:`rebound`; calls stay re-authorized
        against the live registry before every body either way.
        """
        return self._selection.reusable

    def for_request(self, context: RequestContext) -> ToolAssembly:
        """This snapshot for another request of the same identity (``context.identity()`` equal;
        only ``request_id`` may differ): same bindings, definitions, loaded schemas and digest,
        with ``context`` as the one audit records and re-authorization read. ``ValueError`` otherwise."""
        current = self._selection.context
        if context == current:
            return self
        if not isinstance(context, RequestContext) or context.identity() != current.identity():
            raise ValueError("for_request needs a context of the same identity (only request_id may differ)")
        return self.rebound(context, self.scope)

    def rebound(self, context: RequestContext, scope: AgentPipelineScope | None) -> ToolAssembly:
        """This snapshot for a request of the same identity (not checked: the caller knows it, as the
        catalog's cache does by its key) in ``scope``, a scope that sees the same layers: ``self`` when
        both are already its own, else a copy (so nothing set on it reaches this one)."""
        if scope is self.scope and context == self._selection.context:
            return self
        twin = self._twin()
        twin.scope = scope
        selection = self._selection
        if context != selection.context:
            twin._selection = CatalogSelection(context, selection.chosen, selection.omitted, selection.aliases, selection.reusable)
        return twin

    def discovery(self) -> DiscoveryResult:
        """The same decision as a :class:`DiscoveryResult` (bindings, omissions, revisions)."""
        return self._selection.discovery(self._registry_revision, self._policy_revision)

    def get_declarations(self) -> list[ToolSchemaSnapshot]:
        """The definitions as the model was shown them (fresh copies)."""
        return list(self._selection.shown_definitions(self._loaded))

    def _twin(self) -> ToolAssembly:
        twin = super()._twin()
        if type(self) is ToolAssembly:
            twin._selection, twin._bindings, twin._digest = self._selection, self._bindings, self._digest
            twin._registry_revision, twin._policy_revision = self._registry_revision, self._policy_revision
        return twin

    def _derived(self, loaded: frozenset[str], native: bool) -> ToolAssembly:
        twin = super()._derived(loaded, native)
        twin._digest = None
        return twin

    def binding_of(self, entry: ToolEntry) -> ToolBinding:
        return entry.candidate.binding

    def scopes_now(self) -> frozenset[str] | Awaitable[frozenset[str]]:
        """The principal's scopes now, from the registry's authority: a set, or an awaitable of one
        for an asynchronous authority (``AuthorityUnavailableError`` if it fails)."""
        return scopes_now(self.catalog.authority, self._selection.context)

    def live_refusal(self, entry: ToolEntry, scopes: frozenset[str] | None = None) -> LiveRefusal | None:
        """Re-authorize a bound call against the live registry, with the principal's scopes now.

        With a control plane attached, a view older than its ``max_staleness``
        refuses ``control_stale`` before anything else (nothing it says can be
        trusted). Then the bound registration must still be registered
        (``stale_binding`` otherwise; a schema change is always a new
        version), ACTIVE or DEPRECATED, allowed for the tenant, covered by
        ``scopes``, and no live deny rule or kill switch may object (see
        :func:`~tether_clr.catalog.reauthorization.reauthorize`).
        """
        catalog = self.catalog
        control = catalog.control
        if control is not None and _stale(control):
            return "control_stale"
        record = entry.record
        live = record.current.candidate if record.alive else None
        context = self._selection.context
        return reauthorize(
            entry.candidate.binding,
            live,
            context,
            context.scopes if scopes is None else scopes,
            catalog.deny_rules,
            catalog.kill_switches,
        )


_OWN_VIEWS = (SealedToolCatalogView, ToolAssembly)
"""The classes whose every slot :meth:`SealedToolCatalogView._twin` copies by name."""
