"""The catalog store: which tool versions are registered where, with their status, pins and policy.

It answers "which tool versions may this request see and call": ``seal(scope)``
for a plain view, ``discover`` / ``assemble(context, scope)`` for a governed
snapshot (:class:`~tether_clr.ToolAssembly`). Every change bumps ``revision``
(policy changes also ``policy_revision``) and emits ``tools/change``.

Layer 3 (the catalog): it decides what is visible and callable and never runs a
call; :class:`~tether_clr.ToolRegistry` composes it with the listeners and the
executor. A batch works on a sealed view, and reads the live catalog only to
re-authorize a call right before its body.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tether_clr.catalog.assembly import (
    assemble_catalog,
    choose_versions,
    resolve_aliases,
    shadow,
)
from tether_clr.catalog.attachment import ControlAttachment
from tether_clr.catalog.authority import Authority, assembly_scopes
from tether_clr.catalog.candidates import DenyRule
from tether_clr.catalog.control import ControlChange
from tether_clr.catalog.control_state import encode_metadata
from tether_clr.catalog.controlled import ControlledCatalog, checked_actor, overlaid, recorded_actor
from tether_clr.catalog.hidden import HiddenReason, hidden_reason
from tether_clr.catalog.entries import (
    LiveRecord,
    ToolEntry,
    check_compatible,
    make_entry,
    validation_checks,
)
from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from tether_clr.catalog.metadata import CapabilityQuery
from tether_clr.catalog.records import DiscoveryResult, ToolPin
from tether_clr.catalog.reuse import AssemblyCache
from tether_clr.catalog.registration import (
    Registration,
    ToolRegistrationOptions,
    ToolsChangedEvent,
)
from tether_clr.catalog.views import SealedToolCatalogView, ToolAssembly
from tether_clr.foundations.arguments import DEFAULT_ARGUMENT_LIMITS, ArgumentLimits
from tether_clr.foundations.checks import optional_str, require_str
from tether_clr.foundations.errors import DuplicateToolError
from tether_clr.records.context import RequestContext
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.tools.protocol import Tool

__all__ = ["ToolCatalog"]

logger = logging.getLogger("tether_clr")


class _GlobalKey:
    """Stands for the global layer (``scope=None``) where a weak key is needed."""


_GLOBAL = _GlobalKey()


def _layers_seen(layers: Mapping[AgentPipelineScope | None, Any], scope: AgentPipelineScope | None) -> tuple[Any, ...]:
    """The scopes of ``scope``'s lineage (the global layer, ``None``, included) that hold registrations, outermost
    first: two scopes with the same ones see the same registrations. Call with the lock held."""
    seen: list[AgentPipelineScope | None] = []
    while scope is not None:
        if scope in layers:
            seen.append(scope)
        scope = scope.parent
    if None in layers:
        seen.append(None)
    seen.reverse()
    return tuple(seen)


class ToolCatalog(ControlledCatalog):
    """The catalog's control plane: scoped, versioned registrations and the live policy.

    ``argument_limits`` bound the argument text a model may send
    (:class:`~tether_clr.ArgumentLimits`); a view takes them when sealed.

    Layers: the global layer and one per scope. A layer holds one registration
    per (model name, version): several versions of a tool may live side by
    side, and the assembly picks one per request. Registration is cheap and
    thread-safe. It implements :class:`~tether_clr.catalog.views.LivePolicy`,
    the narrow interface its views read at execution (the authority and the
    deny rules), so a view never holds more of it than that.
    """

    def __init__(self, *, argument_limits: ArgumentLimits | None = None) -> None:
        if argument_limits is not None and not isinstance(argument_limits, ArgumentLimits):
            raise TypeError(f"argument_limits must be ArgumentLimits, got {type(argument_limits).__name__}")
        self.argument_limits: ArgumentLimits = argument_limits or DEFAULT_ARGUMENT_LIMITS
        self._lock = threading.RLock()
        self._layers: dict[AgentPipelineScope | None, dict[tuple[str, str], LiveRecord]] = {}
        # Index: logical name -> its registrations in every layer (lifecycle calls and the
        # compatibility check look a name up instead of scanning the catalog).
        self._by_logical_name: dict[str, list[LiveRecord]] = {}
        # seal()'s last selection per scope, valid while the revision is unchanged (weak: scopes come and go).
        self._sealed: weakref.WeakKeyDictionary[
            Any, tuple[int, dict[str, ToolEntry], Mapping[str, str] | None, tuple[str, ...]]
        ] = weakref.WeakKeyDictionary()
        self._pins: dict[tuple[str, str | None, str | None], ToolPin] = {}
        self._deny_rules: tuple[DenyRule, ...] = ()
        self._kill_switches: tuple[KillSwitch, ...] = ()
        self._control: ControlAttachment | None = None
        self._authority: Authority | None = None
        self._revision = 0
        self._policy_revision = 0
        self._change_callbacks: tuple[Callable[[ToolsChangedEvent], Any], ...] = ()
        self._assemblies = AssemblyCache()

    # ------------------------------------------------------------- revisions
    @property
    def revision(self) -> int:
        """Bumped by every registration, disposal, status change, metadata update, pin and deny rule."""
        return self._revision

    @property
    def policy_revision(self) -> int:
        """Bumped by deny rules and authority changes (which also bump ``revision``)."""
        return self._policy_revision

    def _bump(self, policy: bool = False) -> int:
        """Call with the lock held; returns the new revision."""
        self._revision += 1
        if policy:
            self._policy_revision += 1
        self._assemblies.clear()  # drop what the old revisions kept (and the scopes its keys hold)
        return self._revision

    # ----------------------------------------------------------------- tools
    def register(
        self,
        tool: Tool,
        scope: AgentPipelineScope | None = None,
        options: ToolRegistrationOptions | None = None,
    ) -> Registration:
        """Make ``tool`` visible from ``scope`` and its descendants (everywhere when None).

        The name, description and schema are read and validated once, here; a tool
        that changes them later does not change what was declared. Refused
        (nothing registered): a schema asking for identity
        (``ValueError``, unless ``allow_identity_parameters``), a duplicate
        (model name, version) in this layer (:class:`DuplicateToolError`), and
        a schema that breaks the highest registered version of the same
        logical name and major version in this layer under the new version's
        ``compatibility`` mode (:class:`~tether_clr.IncompatibleSchemaError`).
        """
        options = options or ToolRegistrationOptions()
        record = LiveRecord()
        entry = make_entry(tool, scope, options, record)
        record.entry = entry
        candidate = entry.candidate
        key = (entry.name, candidate.version)
        with self._lock:
            layer = self._layers.get(scope, {})
            if key in layer:
                where = "globally" if scope is None else f"in scope {scope!r}"
                raise DuplicateToolError(
                    f"a tool named {entry.name!r} is already registered {where} in version {candidate.version}"
                )
            if self._control is not None:  # the shared status and metadata of this version, if any
                entry = record.entry = overlaid(entry, self._control)
                candidate = entry.candidate
            versions = self._by_logical_name.get(candidate.logical_name, [])
            check_compatible([r for r in versions if r.current.scope is scope], candidate)
            self._layers[scope] = layer
            layer[key] = record
            self._by_logical_name[candidate.logical_name] = [*versions, record]
            revision = self._bump()

        def dispose() -> None:
            with self._lock:
                current = self._layers.get(scope)
                if current is None or current.get(key) is not record:
                    return
                del current[key]
                if not current:
                    del self._layers[scope]
                remaining = [r for r in self._by_logical_name[candidate.logical_name] if r is not record]
                if remaining:
                    self._by_logical_name[candidate.logical_name] = remaining
                else:
                    del self._by_logical_name[candidate.logical_name]
                record.alive = False
                revision = self._bump()
            self._emit(ToolsChangedEvent(scope, entry.name, "removed", revision=revision))

        self._emit(ToolsChangedEvent(scope, entry.name, "added", revision=revision))
        return Registration(dispose)

    def _lineage(self, scope: AgentPipelineScope | None) -> list[AgentPipelineScope | None]:
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        chain: list[AgentPipelineScope | None] = [None]
        if scope is not None:
            chain.extend(reversed(list(scope.lineage())))
        return chain

    def _visible_entries(self, scope: AgentPipelineScope | None) -> list[ToolEntry]:
        """Every registered version visible from ``scope``, outermost layer first. Call with the lock held."""
        return [record.current for layer_scope in self._lineage(scope) for record in self._layers.get(layer_scope, {}).values()]

    def _records_of(self, logical_name: str, version: str) -> list[LiveRecord]:
        """Every registration of (logical name, version), in any layer; ``LookupError`` if none. Lock held."""
        found = [r for r in self._by_logical_name.get(logical_name, ()) if r.current.candidate.version == version]
        if not found:
            raise LookupError(f"no tool {logical_name!r} is registered in version {version!r}")
        return found

    def registered_definitions(self) -> list[bytes]:
        """The canonical JSON (RFC 8785 bytes) of every registered version's definition (name, description,
        parameters), whatever its status, scope or tenants: everything some caller may be shown, for checks
        that cannot know the caller. Bytes made once at registration: nothing is copied, nothing can change."""
        with self._lock:
            return [r.current.candidate.definition_json for records in self._by_logical_name.values() for r in records]

    def get_declarations(self, scope: AgentPipelineScope | None = None) -> list[ToolSchemaSnapshot]:
        """What the model may be told, in ordinal name order; fresh copies every call."""
        return self.seal(scope).get_declarations()

    def seal(self, scope: AgentPipelineScope | None = None) -> SealedToolCatalogView:
        """The tools ``scope`` sees, with no request context (no tenant, principal or scope checks).

        Lifecycle, shadowing and versions apply as in :meth:`assemble`: ACTIVE
        and DEPRECATED versions only, a built-in beats a plugin tool, the inner
        scope the outer, the highest ACTIVE version wins (pins need a context).
        """
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        with self._lock:
            revision = self._revision
            cached = self._sealed.get(scope if scope is not None else _GLOBAL)
            if cached is not None and cached[0] == revision:  # nothing changed since: reuse the selection
                return SealedToolCatalogView(self, scope, cached[1], self.argument_limits, cached[2], deferred=cached[3])
            entries = [e for e in self._visible_entries(scope) if e.candidate.status.is_callable]
        chosen: dict[str, ToolEntry] = {}
        for entry in entries:
            if chosen.setdefault(entry.name, entry) is not entry:  # a name with several candidates: the full rule
                by_candidate = {id(e.candidate): e for e in entries}
                unshadowed, _ = shadow(e.candidate for e in entries)
                chosen = {c.model_name: by_candidate[id(c)] for c in choose_versions(unshadowed)[0]}
                break
        aliased = [e.candidate for e in chosen.values() if e.candidate.metadata.aliases]
        aliases = resolve_aliases(aliased, primary=chosen) if aliased else None
        deferred = tuple(name for name, e in chosen.items() if e.candidate.metadata.deferred)
        with self._lock:
            self._sealed[scope if scope is not None else _GLOBAL] = (revision, chosen, aliases, deferred)
        return SealedToolCatalogView(self, scope, chosen, self.argument_limits, aliases, deferred=deferred)

    def discover(
        self, context: RequestContext, scope: AgentPipelineScope | None = None, query: CapabilityQuery | None = None
    ) -> DiscoveryResult:
        """Which tool versions ``context`` may see and call from ``scope``, and why the others may not."""
        return self.assemble(context, scope, query).discovery()

    def assemble(
        self, context: RequestContext, scope: AgentPipelineScope | None = None, query: CapabilityQuery | None = None
    ) -> ToolAssembly:
        """The immutable snapshot one model request is built from (a view ``execute_batch`` accepts).

        Synchronous: a synchronous authority is asked for the principal's
        scopes, an asynchronous one is not (the context's scopes count; the
        authority is asked again before every body). Feature flags and deny
        rules are evaluated here, outside the registry's lock.

        Cached: while the revisions are unchanged, a request of the same
        identity whose scope sees the same layers gets the kept snapshot rebound
        to its context and scope, unless a feature flag, a deny rule or a
        synchronous authority took part (then every call assembles afresh); see
        :mod:`tether_clr.catalog.reuse`.
        """
        if not isinstance(context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(context).__name__}")
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        with self._lock:
            layers = self._layers
            key = AssemblyCache.key(_layers_seen(layers, scope), context, query)
            revisions = (self._revision, self._policy_revision)
            found = self._assemblies.get(key, revisions, context, scope)
            if found is not None:
                return found
            entries = self._visible_entries(scope)
            pins = tuple(self._pins.values())
            deny_rules = self._deny_rules
            kill_switches = self._kill_switches
            authority = self._authority
        selection = assemble_catalog(
            [e.candidate for e in entries],
            context,
            scopes=assembly_scopes(authority, context),
            pins=pins,
            deny_rules=deny_rules,
            query=query,
            kill_switches=kill_switches,
        )
        by_candidate = {id(e.candidate): e for e in entries}
        bound = {c.model_name: by_candidate[id(c)] for c in selection.chosen}
        assembly = ToolAssembly(self, scope, bound, selection, *revisions, self.argument_limits)
        with self._lock:
            self._assemblies.keep(key, revisions, assembly, authority)
        return assembly

    @property
    def assembly_cache(self) -> AssemblyCache:
        """The cache :meth:`assemble` answers from while exact (see :mod:`tether_clr.catalog.reuse`)."""
        return self._assemblies

    def hidden_reason(self, context: RequestContext, scope: AgentPipelineScope | None, name: str) -> HiddenReason | None:
        """Why model name ``name`` is not in ``context``'s assembly from ``scope``, for the log only:
        ``"tool_disabled"``, ``"kill_switch"``, or None (see :func:`tether_clr.catalog.hidden.hidden_reason`).

        Never for a client's eyes: an unknown and a hidden tool must look alike to it."""
        if not isinstance(context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(context).__name__}")
        with self._lock:
            entries = self._visible_entries(scope)
            deny_rules, kill_switches, authority = self._deny_rules, self._kill_switches, self._authority
        scopes = assembly_scopes(authority, context)
        return hidden_reason((e.candidate for e in entries), name, context, scopes, deny_rules, kill_switches)

    # ------------------------------------------------------------ lifecycle
    def set_status(
        self, logical_name: str, version: str, status: ToolStatus, *, reason: str = "", actor: str | None = None
    ) -> None:
        """Move every registration of (logical name, version) to ``status``.

        The rule is :func:`~tether_clr.status_transition`: the same status is a
        no-op, DRAFT -> VALIDATED runs the checks (the schema is valid, the
        tool is bound), forward moves from VALIDATED on, DISABLED -> ACTIVE;
        anything else raises ``ValueError`` and changes nothing.
        ``LookupError`` if no such version is registered. Attached to a control
        plane, the change is committed there first (recorded as ``actor``,
        default the attachment's actor, with ``reason``) and applied here after
        the commit, on every attached host. An invalid ``actor``
        (:func:`~tether_clr.catalog.control.check_actor`) is refused first,
        attached or not.
        """
        if not isinstance(status, ToolStatus):
            raise TypeError(f"status must be a ToolStatus, got {type(status).__name__}")
        actor = checked_actor(actor)
        with self._lock:
            records = self._records_of(logical_name, version)
            moves = [status_transition(r.current.candidate.status, status) for r in records]
            if all(move is StatusTransition.NOOP for move in moves):
                return
            if StatusTransition.VALIDATE in moves:
                for record in records:
                    validation_checks(record)
            control = self._control
            if control is None:
                for record in records:
                    entry = record.current
                    record.entry = replace(entry, candidate=replace(entry.candidate, status=status))
                revision = self._bump()
        if control is not None:
            who = recorded_actor(control, actor)
            control.commit(ControlChange.status(logical_name, version, status, actor=who, reason=reason))
            return
        for record in records:
            self._emit(ToolsChangedEvent(record.current.scope, logical_name, "status", revision=revision))

    def update_metadata(
        self, logical_name: str, version: str, /, *, reason: str = "", actor: str | None = None, **changes: Any
    ) -> None:
        """Change governance fields of (logical name, version) everywhere it is registered.

        Applies from the next assembly and to re-authorization of calls bound
        in older snapshots (tenants, required scopes). ``logical_name``,
        ``version`` and ``origin`` cannot change: a new schema or identity is a
        new version. Refused changes raise and change nothing. Attached to a
        control plane, the change is committed there first, as data
        (``enabled_when``, a function, is refused: ``ValueError``), recorded as
        ``actor`` (default the attachment's actor) with ``reason``.
        """
        actor = checked_actor(actor)
        with self._lock:
            records = self._records_of(logical_name, version)
            updated = [(r, r.current.candidate.metadata.updated(**changes)) for r in records]
            if any(r.current.retry is not None and metadata.idempotent is not True for r, metadata in updated):
                raise ValueError(f"{logical_name!r} {version} has a retry policy: it cannot stop being idempotent")
            control = self._control
            if control is None:
                for record, metadata in updated:
                    entry = record.current
                    record.entry = replace(entry, candidate=replace(entry.candidate, metadata=metadata))
                revision = self._bump()
        if control is not None:
            who = recorded_actor(control, actor)
            control.commit(ControlChange.metadata(logical_name, version, encode_metadata(changes), actor=who, reason=reason))
            return
        for record in records:
            self._emit(ToolsChangedEvent(record.current.scope, logical_name, "metadata", revision=revision))

    def pin(
        self, logical_name: str, version: str, tenant_id: str | None = None, agent_version: str | None = None,
        *, reason: str = "", actor: str | None = None,
    ) -> Registration:  # fmt: skip
        """Use ``version`` of ``logical_name`` for a tenant, an agent version, both, or everyone.

        The version must be ACTIVE now (``ValueError`` otherwise); a pin then
        survives the deprecation of its version. A new pin for the same
        (logical name, tenant, agent version) replaces the old one. The
        returned registration removes the pin (:meth:`unpin` removes a pin
        with no registration here). Attached to a control plane, the pin (and
        its removal) is committed there first, recorded as ``actor`` (default
        the attachment's actor; the registration records the removal as the
        same ``actor``).
        """
        actor = checked_actor(actor)
        pin = ToolPin(logical_name, version, tenant_id, agent_version)
        key = (logical_name, tenant_id, agent_version)
        with self._lock:
            records = self._records_of(logical_name, version)
            if not any(r.current.candidate.status is ToolStatus.ACTIVE for r in records):
                states = sorted({r.current.candidate.status.name for r in records})
                raise ValueError(f"cannot pin {logical_name!r} {version}: it is {', '.join(states)}, not ACTIVE")
            control = self._control
            if control is None:
                self._pins[key] = pin
                revision = self._bump()
        if control is not None:
            who = recorded_actor(control, actor)
            control.commit(ControlChange.pin(logical_name, version, tenant_id, agent_version, actor=who, reason=reason))
        else:
            self._emit(ToolsChangedEvent(None, logical_name, "pin", revision=revision))

        def unpin() -> None:
            self._unpin(key, pin, actor)

        return Registration(unpin)

    def unpin(
        self, logical_name: str, tenant_id: str | None = None, agent_version: str | None = None,
        *, reason: str = "", actor: str | None = None,
    ) -> bool:  # fmt: skip
        """Remove the pin of ``logical_name`` for that tenant / agent version, whatever its version and wherever it
        was made; ``False`` when there is none here.

        A pin made on another host or by ``tether-clr catalog pin`` has no
        registration here: this removes it. Attached to a control plane, the
        removal is committed there first, recorded as ``actor`` (default the
        attachment's actor) with ``reason``, and applies on every attached host.
        """
        actor = checked_actor(actor)
        require_str(logical_name, "logical_name")
        key = (logical_name, optional_str(tenant_id, "tenant_id"), optional_str(agent_version, "agent_version"))
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, got {type(reason).__name__}")
        return self._unpin(key, None, actor, reason)

    def _unpin(
        self, key: tuple[str, str | None, str | None], pin: ToolPin | None, actor: str | None, reason: str = ""
    ) -> bool:
        """Remove the pin of ``key`` (only if it is still ``pin``, when given), through the control plane when attached."""
        with self._lock:
            current = self._pins.get(key)
            if current is None or (pin is not None and current != pin):
                return False
            control = self._control
            if control is None:
                del self._pins[key]
                revision = self._bump()
        if control is not None:
            try:
                control.commit(ControlChange.unpin(*key, actor=recorded_actor(control, actor), reason=reason))
            except ValueError:  # unpinned meanwhile, on another host
                control.sync()
                return False
            return True
        self._emit(ToolsChangedEvent(None, key[0], "pin", revision=revision))
        return True

    # --------------------------------------------------------------- policy
    def add_deny_rule(self, rule: DenyRule) -> Registration:
        """``rule(binding, metadata, context) -> str | None``: a string denies.

        Applied when assembling (omission ``deny_rule``) and again before each
        body of a call bound in a snapshot (DENIED, reason ``deny_rule``); a
        rule that raises denies.
        """
        if not callable(rule):
            raise TypeError(f"a deny rule must be callable, got {type(rule).__name__}")
        with self._lock:
            self._deny_rules = (*self._deny_rules, rule)
            revision = self._bump(policy=True)

        def dispose() -> None:
            with self._lock:
                if not any(r is rule for r in self._deny_rules):
                    return
                self._deny_rules = tuple(r for r in self._deny_rules if r is not rule)
                revision = self._bump(policy=True)
            self._emit(ToolsChangedEvent(None, "", "deny_rule", revision=revision))

        self._emit(ToolsChangedEvent(None, "", "deny_rule", revision=revision))
        return Registration(dispose)

    @property
    def deny_rules(self) -> tuple[DenyRule, ...]:
        return self._deny_rules

    @property
    def authority(self) -> Authority | None:
        """``fn(context) -> set[str]`` (sync or async): the principal's scopes now; ``None``: the context's own."""
        return self._authority

    @authority.setter
    def authority(self, authority: Authority | None) -> None:
        if authority is not None and not callable(authority):
            raise TypeError(f"authority must be callable or None, got {type(authority).__name__}")
        with self._lock:
            self._authority = authority
            revision = self._bump(policy=True)
        self._emit(ToolsChangedEvent(None, "", "authority", revision=revision))

    # ---------------------------------------------------------- change events
    def on_change(self, callback: Callable[[ToolsChangedEvent], Any]) -> Registration:
        if not callable(callback):
            raise TypeError("on_change needs a callable")
        with self._lock:
            self._change_callbacks = (*self._change_callbacks, callback)

        def dispose() -> None:
            with self._lock:
                self._change_callbacks = tuple(cb for cb in self._change_callbacks if cb is not callback)

        return Registration(dispose)

    def _emit(self, event: ToolsChangedEvent) -> None:
        for callback in self._change_callbacks:
            try:
                callback(event)
            except Exception:
                logger.exception("tools/change callback raised; ignored")
