"""The tool registry: the catalog's control plane.

It holds scoped registrations of versioned tools with their governance
metadata and lifecycle status, pins, deny rules and the scope authority, and
answers "which tool versions may this request see and call": ``seal(scope)``
for a plain view, ``discover`` / ``assemble(context, scope)`` for a governed
snapshot (:class:`~tether_clr.views.ToolAssembly`). Every change bumps
``revision`` (policy changes also ``policy_revision``) and emits
``tools/change``. It also keeps the listener chains of the pipeline.

Floor 3 (the catalog): it decides what is visible and callable and never runs
a call. Execution is floor 4 and imports this module, never the reverse:
:meth:`ToolRegistry.execute_batch` stays the public entry but is a thin
hand-off to the batch executor, which :mod:`tether_clr.batch` installs with
:func:`install_batch_executor` when it is imported (``import tether_clr``
always imports it). Registration is cheap and thread-safe; a batch works on a
sealed view and a :class:`ListenerSnapshot` taken when it starts, and reads
the live registry only to re-authorize a call right before its body.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .catalog.assembly import (
    DenyRule,
    ToolCandidate,
    assemble_catalog,
    choose_versions,
    resolve_aliases,
    shadow,
)
from .catalog.authority import Authority, assembly_scopes
from .catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from .catalog.metadata import CapabilityQuery, ToolMetadata
from .catalog.records import DiscoveryResult, ToolPin
from .compatibility import require_compatible
from .context import RequestContext, refuse_identity_parameters
from .decisions import ApprovalResult, ToolExecutionMode
from .errors import DuplicateToolError, InvariantViolation
from .schema import (
    DEFAULT_ARGUMENT_LIMITS,
    ArgumentLimits,
    ArgumentValidator,
    InvalidArgumentsJson,
    ParsedArguments,
    ToolSchemaSnapshot,
    read_arguments,
)
from .scope import AgentPipelineScope
from .text import is_valid_text, safe_text
from .tools import ConstantPredicate, Tool, as_approval_predicate, as_concurrency_predicate
from .views import SealedToolCatalogView, ToolAssembly, _Record, _ToolEntry

if TYPE_CHECKING:
    from .cancellation import CancellationToken
    from .outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
    from .session.store import SessionStore
    from .sink_protocol import ToolCallSink
    from .suspension import BatchSuspended

__all__ = [
    "ApprovalProvider",
    "BatchExecutor",
    "ListenerKind",
    "ListenerSnapshot",
    "Registration",
    "SealedToolCatalogView",
    "ToolAssembly",
    "ToolRegistrationOptions",
    "ToolRegistry",
    "ToolsChangedEvent",
    "StepResumer",
    "install_batch_executor",
    "install_step_resumer",
]

logger = logging.getLogger("tether_clr")

ListenerKind = Literal["pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener", "audit"]
_KINDS: tuple[ListenerKind, ...] = (
    "pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener", "audit",
)

ChangeKind = Literal["added", "removed", "status", "metadata", "pin", "deny_rule", "authority"]

BatchExecutor = Callable[
    ["ToolRegistry", "list[ToolCall]", SealedToolCatalogView, int, "ToolCallSink | None", "CancellationToken | None"],
    Awaitable["list[ToolExecutionOutcome] | BatchSuspended"],
]
"""``executor(registry, calls, view, max_parallelism, sink, cancellation) -> outcomes``."""

_batch_executor: BatchExecutor | None = None


class StepResumer(Protocol):
    """What :meth:`ToolRegistry.resume` and :meth:`ToolRegistry.cancel_suspended` hand off to
    (:mod:`tether_clr.session.resume` installs it: the session log lives above the catalog)."""

    async def resume(
        self,
        registry: ToolRegistry,
        store: SessionStore,
        session_id: str,
        decisions: Mapping[str, Any],
        view: SealedToolCatalogView | None,
        max_parallelism: int,
        cancellation: CancellationToken | None,
        wrap_sink: Callable[[ToolCallSink], ToolCallSink] | None,
    ) -> list[ToolExecutionOutcome] | BatchSuspended: ...

    async def cancel(self, store: SessionStore, session_id: str, reason: str) -> list[ToolExecutionOutcome]: ...


_step_resumer: StepResumer | None = None


def install_step_resumer(resumer: StepResumer) -> None:
    """Called by :mod:`tether_clr.session.resume` so the registry can resume suspended steps."""
    global _step_resumer
    _step_resumer = resumer


class _GlobalKey:
    """Stands for the global layer (``scope=None``) where a weak key is needed."""


_GLOBAL = _GlobalKey()


def install_batch_executor(executor: BatchExecutor) -> None:
    """Called by the executor floor (:mod:`tether_clr.batch`) so ``execute_batch`` can hand off to it.

    The catalog cannot import the executor (the executor imports the
    catalog); the upper floor plugs itself in instead.
    """
    global _batch_executor
    _batch_executor = executor


class ApprovalProvider(Protocol):
    """Asked for a pre-execute ``ask`` and for every call of a tool that requires approval.

    The request carries the call itself: ``execution.name``, ``execution.arguments``
    (a fresh parsed copy of the validated arguments) and ``execution.arguments_json``
    (their canonical text), the scope, owner and call ids; ``reason`` is the
    listener's, or ``"tool 'NAME' requires approval"``. Anything but
    ``ApprovalResult.APPROVED`` keeps the body from running.
    """

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult: ...


@dataclass(frozen=True, slots=True)
class ToolRegistrationOptions:
    """Per-registration settings.

    ``is_concurrency_safe`` is a predicate over the parsed arguments (or a bool
    for "always"/"never"); only an exact ``True`` lets a call join a parallel group.

    ``requires_approval`` puts every call of the tool through the approval step
    of a pre-execute ``ask`` (the same provider, the same outcomes): ``None`` (the
    default) or ``False`` means no approval of its own, ``True`` always, a
    predicate over the parsed arguments decides per call, and any answer but an
    exact ``False`` (including raising) means approval is required. A tool that
    requires approval itself (``requires_approval`` on the tool, as a real
    ``ApprovalRequiredAIFunction`` has) keeps requiring it whatever this says.

    ``metadata`` is the version's governance record (default ``ToolMetadata()``:
    version 1.0.0, the strictest posture); ``status`` its lifecycle status
    (default ACTIVE, today's behaviour). A schema that asks the model for
    ``tenant_id``, ``principal_id`` or ``user_id`` is refused unless
    ``allow_identity_parameters`` says it is a business field.
    """

    is_concurrency_safe: Callable[[Any], Any] | bool | None = None
    requires_approval: Callable[[Any], Any] | bool | None = None
    metadata: ToolMetadata | None = None
    status: ToolStatus | None = None
    allow_identity_parameters: bool = False

    def __post_init__(self) -> None:
        if self.metadata is not None and not isinstance(self.metadata, ToolMetadata):
            raise TypeError(f"metadata must be a ToolMetadata, got {type(self.metadata).__name__}")
        if self.status is not None and not isinstance(self.status, ToolStatus):
            raise TypeError(f"status must be a ToolStatus, got {type(self.status).__name__}")
        if not isinstance(self.allow_identity_parameters, bool):
            raise TypeError("allow_identity_parameters must be a bool")


class Registration:
    """Handle for one registration; ``dispose()`` removes exactly that one, once."""

    __slots__ = ("_dispose", "__weakref__")

    def __init__(self, dispose: Callable[[], None]) -> None:
        self._dispose: Callable[[], None] | None = dispose

    @property
    def is_disposed(self) -> bool:
        return self._dispose is None

    def dispose(self) -> None:
        dispose, self._dispose = self._dispose, None
        if dispose is not None:
            dispose()

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


@dataclass(frozen=True, slots=True)
class ToolsChangedEvent:
    """``tools/change``: what some scope may see or call changed.

    ``change`` is ``added`` / ``removed`` (a registration), ``status``,
    ``metadata``, ``pin`` (``name`` is the logical name), ``deny_rule`` or
    ``authority`` (``name`` is empty: registry-wide). ``revision`` is the
    registry revision the change produced.
    """

    scope: AgentPipelineScope | None
    name: str
    change: ChangeKind
    method: str = "tools/change"
    revision: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class _Listener:
    scope: AgentPipelineScope | None
    fn: Callable[..., Any]


class ListenerSnapshot:
    """Listeners as they were when a batch started, ordered per call scope.

    Order of a waterfall: global listeners first, then each scope from the root
    down to the call's own scope, so an outer policy always sees a call before
    an inner one can answer it; within one scope, registration order (prepend
    puts a listener first).
    """

    __slots__ = ("_by_kind", "_memo")

    # A registry hands the same snapshot to every batch until a listener is registered or
    # disposed, so the memo outlives batches; bounded, because hosts may make a scope per request.
    _MEMO_LIMIT = 256

    def __init__(self, by_kind: Mapping[ListenerKind, tuple[_Listener, ...]]) -> None:
        self._by_kind = by_kind
        self._memo: dict[tuple[ListenerKind, int], tuple[AgentPipelineScope | None, tuple[Callable[..., Any], ...]]] = {}

    def chain(self, kind: ListenerKind, scope: AgentPipelineScope | None) -> tuple[Callable[..., Any], ...]:
        key = (kind, id(scope))
        found = self._memo.get(key)
        if found is not None and found[0] is scope:  # the same scope, not a new one at a reused id
            return found[1]
        lineage = [] if scope is None else list(scope.lineage())
        applicable = [
            (-1 if item.scope is None else item.scope.depth, order, item.fn)
            for order, item in enumerate(self._by_kind[kind])
            if item.scope is None or any(item.scope is s for s in lineage)
        ]
        applicable.sort(key=lambda triple: (triple[0], triple[1]))
        chain = tuple(fn for _, _, fn in applicable)
        if len(self._memo) >= self._MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = (scope, chain)
        return chain


class ToolRegistry:
    """The catalog's control plane plus the listener chains of the execution pipeline.

    A new registry installs the invariant result policy (non-empty name and call
    id, outcome call id equal to the execution's); ``invariant_policy.dispose()``
    removes it. ``argument_limits`` bound the argument text a model may send
    (:class:`~tether_clr.schema.ArgumentLimits`); a view takes them when sealed.

    Layers: the global layer and one per scope. A layer holds one registration
    per (model name, version): several versions of a tool may live side by
    side, and the assembly picks one per request.
    """

    def __init__(self, *, invariant_policy: bool = True, argument_limits: ArgumentLimits | None = None) -> None:
        if argument_limits is not None and not isinstance(argument_limits, ArgumentLimits):
            raise TypeError(f"argument_limits must be ArgumentLimits, got {type(argument_limits).__name__}")
        self.argument_limits: ArgumentLimits = argument_limits or DEFAULT_ARGUMENT_LIMITS
        self._lock = threading.RLock()
        self._layers: dict[AgentPipelineScope | None, dict[tuple[str, str], _Record]] = {}
        # Index: logical name -> its registrations in every layer (lifecycle calls and the
        # compatibility check look a name up instead of scanning the catalog).
        self._by_logical_name: dict[str, list[_Record]] = {}
        # seal()'s last selection per scope, valid while the revision is unchanged (weak: scopes come and go).
        self._sealed: weakref.WeakKeyDictionary[Any, tuple[int, dict[str, _ToolEntry], Mapping[str, str] | None]] = (
            weakref.WeakKeyDictionary()
        )
        self._pins: dict[tuple[str, str | None, str | None], ToolPin] = {}
        self._deny_rules: tuple[DenyRule, ...] = ()
        self._authority: Authority | None = None
        self._revision = 0
        self._policy_revision = 0
        self._listeners: dict[ListenerKind, tuple[_Listener, ...]] = {kind: () for kind in _KINDS}
        self._listener_snapshot: ListenerSnapshot | None = None  # rebuilt after a listener change
        self._change_callbacks: tuple[Callable[[ToolsChangedEvent], Any], ...] = ()
        self.approval: ApprovalProvider | None = None
        self.invariant_policy: Registration | None = (
            self.register_result_policy(None, check_invariants) if invariant_policy else None
        )

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
        record = _Record()
        entry = _make_entry(tool, scope, options, record)
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
            versions = self._by_logical_name.get(candidate.logical_name, [])
            _check_compatible([r for r in versions if r.current.scope is scope], candidate)
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

    def _visible_entries(self, scope: AgentPipelineScope | None) -> list[_ToolEntry]:
        """Every registered version visible from ``scope``, outermost layer first. Call with the lock held."""
        return [record.current for layer_scope in self._lineage(scope) for record in self._layers.get(layer_scope, {}).values()]

    def _records_of(self, logical_name: str, version: str) -> list[_Record]:
        """Every registration of (logical name, version), in any layer; ``LookupError`` if none. Lock held."""
        found = [r for r in self._by_logical_name.get(logical_name, ()) if r.current.candidate.version == version]
        if not found:
            raise LookupError(f"no tool {logical_name!r} is registered in version {version!r}")
        return found

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
                return SealedToolCatalogView(self, scope, cached[1], self.argument_limits, cached[2])
            entries = [e for e in self._visible_entries(scope) if e.candidate.status.is_callable]
        chosen: dict[str, _ToolEntry] = {}
        for entry in entries:
            if chosen.setdefault(entry.name, entry) is not entry:  # a name with several candidates: the full rule
                by_candidate = {id(e.candidate): e for e in entries}
                unshadowed, _ = shadow(e.candidate for e in entries)
                chosen = {c.model_name: by_candidate[id(c)] for c in choose_versions(unshadowed)[0]}
                break
        aliased = [e.candidate for e in chosen.values() if e.candidate.metadata.aliases]
        aliases = resolve_aliases(aliased, primary=chosen) if aliased else None
        with self._lock:
            self._sealed[scope if scope is not None else _GLOBAL] = (revision, chosen, aliases)
        return SealedToolCatalogView(self, scope, chosen, self.argument_limits, aliases)

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
        """
        if not isinstance(context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(context).__name__}")
        with self._lock:
            entries = self._visible_entries(scope)
            pins = tuple(self._pins.values())
            deny_rules = self._deny_rules
            authority = self._authority
            revision, policy_revision = self._revision, self._policy_revision
        selection = assemble_catalog(
            [e.candidate for e in entries],
            context,
            scopes=assembly_scopes(authority, context),
            pins=pins,
            deny_rules=deny_rules,
            query=query,
        )
        by_candidate = {id(e.candidate): e for e in entries}
        bound = {c.model_name: by_candidate[id(c)] for c in selection.chosen}
        return ToolAssembly(self, scope, bound, selection, revision, policy_revision)

    # ------------------------------------------------------------ lifecycle
    def set_status(self, logical_name: str, version: str, status: ToolStatus) -> None:
        """Move every registration of (logical name, version) to ``status``.

        The rule is :func:`~tether_clr.status_transition`: the same status is a
        no-op, DRAFT -> VALIDATED runs the checks (the schema is valid, the
        tool is bound), forward moves from VALIDATED on, DISABLED -> ACTIVE;
        anything else raises ``ValueError`` and changes nothing.
        ``LookupError`` if no such version is registered.
        """
        if not isinstance(status, ToolStatus):
            raise TypeError(f"status must be a ToolStatus, got {type(status).__name__}")
        with self._lock:
            records = self._records_of(logical_name, version)
            moves = [status_transition(r.current.candidate.status, status) for r in records]
            if all(move is StatusTransition.NOOP for move in moves):
                return
            if StatusTransition.VALIDATE in moves:
                for record in records:
                    _validation_checks(record)
            for record in records:
                entry = record.current
                record.entry = replace(entry, candidate=replace(entry.candidate, status=status))
            revision = self._bump()
        for record in records:
            self._emit(ToolsChangedEvent(record.current.scope, logical_name, "status", revision=revision))

    def update_metadata(self, logical_name: str, version: str, /, **changes: Any) -> None:
        """Change governance fields of (logical name, version) everywhere it is registered.

        Applies from the next assembly and to re-authorization of calls bound
        in older snapshots (tenants, required scopes). ``logical_name``,
        ``version`` and ``origin`` cannot change: a new schema or identity is a
        new version. Refused changes raise and change nothing.
        """
        with self._lock:
            records = self._records_of(logical_name, version)
            updated = [(r, r.current.candidate.metadata.updated(**changes)) for r in records]
            for record, metadata in updated:
                entry = record.current
                record.entry = replace(entry, candidate=replace(entry.candidate, metadata=metadata))
            revision = self._bump()
        for record in records:
            self._emit(ToolsChangedEvent(record.current.scope, logical_name, "metadata", revision=revision))

    def pin(
        self, logical_name: str, version: str, tenant_id: str | None = None, agent_version: str | None = None
    ) -> Registration:
        """Use ``version`` of ``logical_name`` for a tenant, an agent version, both, or everyone.

        The version must be ACTIVE now (``ValueError`` otherwise); a pin then
        survives the deprecation of its version. A new pin for the same
        (logical name, tenant, agent version) replaces the old one. The
        returned registration removes the pin.
        """
        pin = ToolPin(logical_name, version, tenant_id, agent_version)
        key = (logical_name, tenant_id, agent_version)
        with self._lock:
            records = self._records_of(logical_name, version)
            if not any(r.current.candidate.status is ToolStatus.ACTIVE for r in records):
                states = sorted({r.current.candidate.status.name for r in records})
                raise ValueError(f"cannot pin {logical_name!r} {version}: it is {', '.join(states)}, not ACTIVE")
            self._pins[key] = pin
            revision = self._bump()

        def unpin() -> None:
            with self._lock:
                if self._pins.get(key) is not pin:
                    return
                del self._pins[key]
                revision = self._bump()
            self._emit(ToolsChangedEvent(None, logical_name, "pin", revision=revision))

        self._emit(ToolsChangedEvent(None, logical_name, "pin", revision=revision))
        return Registration(unpin)

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

    def classify(self, call: ToolCall, view: SealedToolCatalogView) -> ToolExecutionMode:
        """PARALLEL only on an exact ``True`` from the visible tool's predicate.

        Arguments the pipeline would refuse (see :func:`~tether_clr.schema.read_arguments`)
        mean EXCLUSIVE; classifying never raises.
        """
        return classify_reading(call, view)[0]

    # ------------------------------------------------------------- listeners
    def _add_listener(self, kind: ListenerKind, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool) -> Registration:
        if not callable(fn):
            raise TypeError(f"{kind} listener must be callable, got {type(fn).__name__}")
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        item = _Listener(scope, fn)
        with self._lock:
            current = self._listeners[kind]
            self._listeners[kind] = (item, *current) if prepend else (*current, item)
            self._listener_snapshot = None

        def dispose() -> None:
            with self._lock:
                self._listeners[kind] = tuple(x for x in self._listeners[kind] if x is not item)
                self._listener_snapshot = None

        return Registration(dispose)

    def register_pre_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, next) -> ToolPreDecision``; ``await next()`` asks the rest of the chain."""
        return self._add_listener("pre_execute", scope, fn, prepend)

    def register_guard(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``(execution) -> str | None``: a string vetoes with that reason; nothing can un-veto."""
        return self._add_listener("guard", scope, fn, prepend)

    def register_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (dispatch, next) -> ToolExecutionOutcome`` around the tool body."""
        return self._add_listener("execute", scope, fn, prepend)

    def register_post_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, outcome, next) -> ToolPostDecision``."""
        return self._add_listener("post_execute", scope, fn, prepend)

    def register_result_policy(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, outcome) -> None``; raising rejects the outcome and aborts the batch."""
        return self._add_listener("result_policy", scope, fn, prepend)

    def register_result_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``(outcome) -> None``: observes recorded outcomes; its failures are logged, never raised."""
        return self._add_listener("result_listener", scope, fn, prepend)

    def register_audit_listener(self, fn: Callable[..., Any]) -> Registration:
        """``(ToolAuditRecord) -> None`` (sync or async): one record per call of every batch.

        Its failures are logged and contained, like a result listener's; with
        no audit listener, no audit record is built at all.
        """
        return self._add_listener("audit", None, fn, False)

    def listener_snapshot(self) -> ListenerSnapshot:
        """The listeners as they are now; one immutable snapshot is shared until a listener
        is registered or disposed, so a running batch keeps the one it took."""
        with self._lock:
            snapshot = self._listener_snapshot
            if snapshot is None:
                snapshot = self._listener_snapshot = ListenerSnapshot(dict(self._listeners))
            return snapshot

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

    # -------------------------------------------------------------- execution
    async def execute_batch(
        self,
        calls: Sequence[ToolCall] | Iterable[ToolCall],
        view: SealedToolCatalogView,
        max_parallelism: int = 4,
        sink: ToolCallSink | None = None,
        cancellation: CancellationToken | None = None,
    ) -> list[ToolExecutionOutcome] | BatchSuspended:
        """Run one model step's calls against ``view`` (a ``seal()`` view or a :class:`ToolAssembly`).

        Outcomes come back in the model's order. Refusals and failures are
        outcomes. When the approval provider answers ``DEFERRED`` (and the sink
        can hold a parked call, as a session store's can), the call is parked and a
        :class:`~tether_clr.BatchSuspended` comes back instead of the list: see
        :meth:`resume`. Only infrastructure faults raise:
        :class:`~tether_clr.errors.ResultPolicyError` and
        :class:`~tether_clr.errors.SinkError`, after every dispatched body has
        finished. A thin hand-off to the executor floor (:mod:`tether_clr.batch`).
        """
        executor = _batch_executor
        if executor is None:  # pragma: no cover - tether_clr/__init__ always imports the executor
            raise RuntimeError("no batch executor is installed: import tether_clr (or tether_clr.batch)")
        return await executor(self, list(calls), view, max_parallelism, sink, cancellation)

    async def resume(
        self,
        store: SessionStore,
        session_id: str,
        decisions: Mapping[str, Any],
        view: SealedToolCatalogView | None = None,
        *,
        max_parallelism: int = 4,
        cancellation: CancellationToken | None = None,
        wrap_sink: Callable[[ToolCallSink], ToolCallSink] | None = None,
    ) -> list[ToolExecutionOutcome] | BatchSuspended:
        """Continue the session's suspended step from its log, with the approvers' decisions.

        ``decisions`` maps the call id of every parked call to an
        :class:`ApprovalResult` (``APPROVED``, ``REJECTED`` or ``UNAVAILABLE``), or
        to ``(ApprovalResult, fingerprint)`` to bind the decision to the arguments
        the approver saw (:attr:`PendingApproval.fingerprint`). The parked call
        gets its decision as its approval step; approved calls still pass the
        pre-execute listeners, the guards and re-authorization against the live
        catalog; the calls after it run through the full pipeline (and may park
        in turn: another :class:`BatchSuspended`). Each body runs at most once,
        outcomes are recorded in model order, and the step ends as an
        uninterrupted one would have. Returns the step's full outcome list.

        ``view``: the catalog to run against; by default the catalog is assembled
        again for the request context recorded when approval was asked (or the
        root scope's sealed view when none was recorded), in a scope of this
        session owned by the recorded owner. Pass a view for tools registered in
        other scopes. With the default, a parked call whose tool is no longer in
        the catalog ends UNKNOWN_TOOL; with the view of the original step,
        re-authorization refuses it (DENIED, with the reason). ``wrap_sink``
        wraps the step's session sink (a live display, say); the wrapper must
        forward every hook.

        Raises ``ValueError``, running nothing and writing nothing, for a session
        with no suspended step (finished or cancelled), a decision for a call
        that is not parked or missing for one that is, a fingerprint that differs
        from the recorded one, or a log whose recorded arguments no longer match
        their fingerprint; :class:`SessionLeasedError` while another writer holds
        the session.
        """
        return await _resumer().resume(self, store, session_id, decisions, view, max_parallelism, cancellation, wrap_sink)

    async def cancel_suspended(self, store: SessionStore, session_id: str, reason: str) -> list[ToolExecutionOutcome]:
        """Abandon the session's suspended step: its parked call and the calls never admitted
        end ABORTED_BEFORE_DISPATCH (``reason`` in their message), the step ends.

        Returns the step's full outcome list. ``ValueError`` (writing nothing) when
        the session has no suspended step.
        """
        return await _resumer().cancel(store, session_id, reason)


def _make_entry(tool: Tool, scope: AgentPipelineScope | None, options: ToolRegistrationOptions, record: _Record) -> _ToolEntry:
    if not isinstance(tool, Tool):
        raise TypeError(f"{type(tool).__name__} does not implement the Tool protocol (name, description, json_schema, invoke)")
    if scope is not None and not isinstance(scope, AgentPipelineScope):
        raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
    name = tool.name
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a tool needs a non-empty string name, got {name!r}")
    if not is_valid_text(name):
        raise ValueError(f"tool name {safe_text(name)!r} is not valid Unicode text (it holds a lone surrogate)")
    description = tool.description or ""
    if not isinstance(description, str):
        raise TypeError(f"tool {name!r}: description must be a string")
    if not is_valid_text(description):
        raise ValueError(f"tool {name!r}: description is not valid Unicode text (it holds a lone surrogate)")
    try:
        validator = ArgumentValidator(tool.json_schema)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"tool {name!r}: {exc}") from None
    schema = validator.schema
    try:
        refuse_identity_parameters(schema, allow=options.allow_identity_parameters)
    except ValueError as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None
    concurrency: Callable[[Any], Any] | None
    if options.is_concurrency_safe is not None:
        concurrency = as_concurrency_predicate(options.is_concurrency_safe)
    else:
        own = getattr(tool, "is_concurrency_safe", None)
        concurrency = own if callable(own) else None
    candidate = ToolCandidate(
        ToolSchemaSnapshot(name=name, description=description, parameters=schema),
        options.metadata or ToolMetadata(),
        options.status or ToolStatus.ACTIVE,
        0 if scope is None else scope.depth + 1,
    )
    approval = tuple(
        as_approval_predicate(source)
        for source in (getattr(tool, "requires_approval", None), options.requires_approval)
        if source is not None
    )
    return _ToolEntry(
        tool, scope, validator, name, description, concurrency, candidate, record, approval,
        options.allow_identity_parameters,
    )


def _check_compatible(versions: Iterable[_Record], candidate: ToolCandidate) -> None:
    """Refuse a version whose schema breaks the highest registered one of the same major version.

    ``versions`` are the registrations of the same logical name in the same layer.
    """
    same_major = [r.current.candidate for r in versions if r.current.candidate.semver.major == candidate.semver.major]
    if not same_major:
        return
    highest = max(same_major, key=lambda c: c.semver)
    require_compatible(highest.definition.parameters, candidate.definition.parameters, candidate.metadata.compatibility)


def _validation_checks(record: _Record) -> None:
    """DRAFT -> VALIDATED: the schema is valid (and asks for no identity) and the tool is bound; ``ValueError`` if not."""
    entry = record.current
    if not record.alive:
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: it is no longer registered")
    if not callable(getattr(entry.tool, "invoke", None)):
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: the tool has no callable invoke")
    try:
        ArgumentValidator(entry.candidate.definition.parameters)
        refuse_identity_parameters(entry.candidate.definition.parameters, allow=entry.allow_identity_parameters)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: {exc}") from None


async def check_invariants(execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
    """The built-in result policy: records must be attributable to their call."""
    if not execution.name:
        raise InvariantViolation("execution name is empty")
    if not execution.call_id:
        raise InvariantViolation("execution call_id is empty")
    if outcome.call_id != execution.call_id:
        raise InvariantViolation(
            f"outcome call_id {outcome.call_id!r} does not match execution call_id {execution.call_id!r}"
        )


def _resumer() -> StepResumer:
    if _step_resumer is None:  # pragma: no cover - tether_clr/__init__ always imports the session layer
        raise RuntimeError("no step resumer is installed: import tether_clr (or tether_clr.session)")
    return _step_resumer


def classify_reading(call: ToolCall, view: SealedToolCatalogView) -> tuple[ToolExecutionMode, ParsedArguments | None]:
    """:meth:`ToolRegistry.classify`, plus the arguments it read when nobody else saw them.

    The second value is the :func:`~tether_clr.schema.read_arguments` result of
    ``call.arguments`` under the view's limits when the tool's classifier is a
    constant (a bool, which never reads the arguments), so the batch need not
    parse them again; None otherwise (a callable classifier was handed that value
    and may have changed it).
    """
    entry = view.resolve(call.name)
    concurrency = None if entry is None else entry.concurrency
    if concurrency is None:
        return ToolExecutionMode.EXCLUSIVE, None
    try:
        parsed = read_arguments(call.arguments, view.argument_limits)
    except InvalidArgumentsJson:
        return ToolExecutionMode.EXCLUSIVE, None
    if isinstance(concurrency, ConstantPredicate):
        return (ToolExecutionMode.PARALLEL if concurrency.value is True else ToolExecutionMode.EXCLUSIVE), parsed
    try:
        verdict = concurrency(parsed.value)
    except Exception:
        logger.warning("concurrency classifier of %r raised; running the call exclusively", call.name, exc_info=True)
        return ToolExecutionMode.EXCLUSIVE, None
    return (ToolExecutionMode.PARALLEL if verdict is True else ToolExecutionMode.EXCLUSIVE), None
