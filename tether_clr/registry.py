"""The tool registry: scoped registrations, declarations, sealed views, classification,
listeners and change events.

Registration is cheap and thread-safe; execution never reads the live registry.
A batch works on a :class:`SealedToolCatalogView` (tools) and a
:class:`ListenerSnapshot` (listeners) taken when it starts, so what a model was
shown and what runs cannot drift apart mid-step.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .cancellation import CancellationToken
from .decisions import ApprovalResult, ToolExecutionMode
from .errors import DuplicateToolError, InvariantViolation
from .schema import (
    DEFAULT_ARGUMENT_LIMITS,
    ArgumentLimits,
    ArgumentValidator,
    InvalidArgumentsJson,
    ToolSchemaSnapshot,
    parse_arguments,
)
from .scope import AgentPipelineScope
from .text import is_valid_text, safe_text
from .tools import Tool, as_approval_predicate, as_concurrency_predicate

if TYPE_CHECKING:
    from .batch import ToolCallSink
    from .outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = [
    "ApprovalProvider",
    "ListenerKind",
    "ListenerSnapshot",
    "Registration",
    "SealedToolCatalogView",
    "ToolRegistrationOptions",
    "ToolRegistry",
    "ToolsChangedEvent",
]

logger = logging.getLogger("tether_clr")

ListenerKind = Literal["pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener"]
_KINDS: tuple[ListenerKind, ...] = ("pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener")


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
    """

    is_concurrency_safe: Callable[[Any], Any] | bool | None = None
    requires_approval: Callable[[Any], Any] | bool | None = None


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
    """``tools/change``: the set of tools visible from some scope changed."""

    scope: AgentPipelineScope | None
    name: str
    change: Literal["added", "removed"]
    method: str = "tools/change"


@dataclass(frozen=True, slots=True, eq=False)
class _ToolEntry:
    tool: Tool
    scope: AgentPipelineScope | None
    validator: ArgumentValidator
    name: str
    description: str
    concurrency: Callable[[Any], Any] | None
    approval: tuple[Callable[[Any], Any], ...] = ()

    def declaration(self) -> ToolSchemaSnapshot:
        return ToolSchemaSnapshot(name=self.name, description=self.description, parameters=self.validator.schema)


def _ordinal(name: str) -> bytes:
    """.NET's ordinal order compares UTF-16 code units; so do we."""
    return name.encode("utf-16-be", "surrogatepass")


class SealedToolCatalogView:
    """The catalog as one step of one scope sees it; immutable once made.

    ``argument_limits`` are the registry's :class:`ArgumentLimits` when it was sealed.
    """

    __slots__ = ("scope", "_entries", "_registry", "argument_limits")

    def __init__(
        self,
        registry: ToolRegistry,
        scope: AgentPipelineScope | None,
        entries: Mapping[str, _ToolEntry],
        argument_limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS,
    ) -> None:
        self._registry = registry
        self.scope = scope
        self._entries = MappingProxyType(dict(entries))
        self.argument_limits = argument_limits

    def resolve(self, name: str) -> _ToolEntry | None:
        return self._entries.get(name)

    def get_tool(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return None if entry is None else entry.tool

    @property
    def names(self) -> list[str]:
        return sorted(self._entries, key=_ordinal)

    def get_declarations(self) -> list[ToolSchemaSnapshot]:
        return [self._entries[name].declaration() for name in self.names]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"SealedToolCatalogView(scope={self.scope!r}, tools={self.names!r})"


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

    def __init__(self, by_kind: Mapping[ListenerKind, tuple[_Listener, ...]]) -> None:
        self._by_kind = by_kind
        self._memo: dict[tuple[ListenerKind, int], tuple[Callable[..., Any], ...]] = {}

    def chain(self, kind: ListenerKind, scope: AgentPipelineScope | None) -> tuple[Callable[..., Any], ...]:
        key = (kind, id(scope))
        found = self._memo.get(key)
        if found is None:
            lineage = [] if scope is None else list(scope.lineage())
            applicable = [
                (-1 if item.scope is None else item.scope.depth, order, item.fn)
                for order, item in enumerate(self._by_kind[kind])
                if item.scope is None or any(item.scope is s for s in lineage)
            ]
            applicable.sort(key=lambda triple: (triple[0], triple[1]))
            found = self._memo[key] = tuple(fn for _, _, fn in applicable)
        return found


class ToolRegistry:
    """Scoped tool catalog plus the listener chains of the execution pipeline.

    A new registry installs the invariant result policy (non-empty name and call
    id, outcome call id equal to the execution's); ``invariant_policy.dispose()``
    removes it. ``argument_limits`` bound the argument text a model may send
    (:class:`~tether_clr.schema.ArgumentLimits`); a view takes them when sealed.
    """

    def __init__(self, *, invariant_policy: bool = True, argument_limits: ArgumentLimits | None = None) -> None:
        if argument_limits is not None and not isinstance(argument_limits, ArgumentLimits):
            raise TypeError(f"argument_limits must be ArgumentLimits, got {type(argument_limits).__name__}")
        self.argument_limits: ArgumentLimits = argument_limits or DEFAULT_ARGUMENT_LIMITS
        self._lock = threading.RLock()
        self._layers: dict[AgentPipelineScope | None, dict[str, _ToolEntry]] = {}
        self._listeners: dict[ListenerKind, tuple[_Listener, ...]] = {kind: () for kind in _KINDS}
        self._change_callbacks: tuple[Callable[[ToolsChangedEvent], Any], ...] = ()
        self.approval: ApprovalProvider | None = None
        self.invariant_policy: Registration | None = (
            self.register_result_policy(None, check_invariants) if invariant_policy else None
        )

    # ----------------------------------------------------------------- tools
    def register(
        self,
        tool: Tool,
        scope: AgentPipelineScope | None = None,
        options: ToolRegistrationOptions | None = None,
    ) -> Registration:
        """Make ``tool`` visible from ``scope`` and its descendants (everywhere when None).

        The name, description and schema are read and validated once, here; a tool
        that changes them later does not change what was declared.
        """
        entry = _make_entry(tool, scope, options or ToolRegistrationOptions())
        with self._lock:
            layer = self._layers.setdefault(scope, {})
            if entry.name in layer:
                where = "globally" if scope is None else f"in scope {scope!r}"
                raise DuplicateToolError(f"a tool named {entry.name!r} is already registered {where}")
            layer[entry.name] = entry

        def dispose() -> None:
            with self._lock:
                current = self._layers.get(scope)
                if current is None or current.get(entry.name) is not entry:
                    return
                del current[entry.name]
                if not current:
                    del self._layers[scope]
            self._emit(ToolsChangedEvent(scope, entry.name, "removed"))

        self._emit(ToolsChangedEvent(scope, entry.name, "added"))
        return Registration(dispose)

    def _visible(self, scope: AgentPipelineScope | None) -> dict[str, _ToolEntry]:
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        chain: list[AgentPipelineScope | None] = [None]
        if scope is not None:
            chain.extend(reversed(list(scope.lineage())))
        visible: dict[str, _ToolEntry] = {}
        with self._lock:
            for layer_scope in chain:  # outermost first, so inner layers shadow
                visible.update(self._layers.get(layer_scope, {}))
        return visible

    def get_declarations(self, scope: AgentPipelineScope | None = None) -> list[ToolSchemaSnapshot]:
        """What the model may be told, in ordinal name order; fresh copies every call."""
        return self.seal(scope).get_declarations()

    def seal(self, scope: AgentPipelineScope | None = None) -> SealedToolCatalogView:
        return SealedToolCatalogView(self, scope, self._visible(scope), self.argument_limits)

    def classify(self, call: ToolCall, view: SealedToolCatalogView) -> ToolExecutionMode:
        """PARALLEL only on an exact ``True`` from the visible tool's predicate.

        Arguments the pipeline would refuse (see :func:`~tether_clr.schema.read_arguments`)
        mean EXCLUSIVE; classifying never raises.
        """
        entry = view.resolve(call.name)
        if entry is None or entry.concurrency is None:
            return ToolExecutionMode.EXCLUSIVE
        try:
            arguments = parse_arguments(call.arguments, view.argument_limits)
        except InvalidArgumentsJson:
            return ToolExecutionMode.EXCLUSIVE
        try:
            verdict = entry.concurrency(arguments)
        except Exception:
            logger.warning("concurrency classifier of %r raised; running the call exclusively", call.name, exc_info=True)
            return ToolExecutionMode.EXCLUSIVE
        return ToolExecutionMode.PARALLEL if verdict is True else ToolExecutionMode.EXCLUSIVE

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

        def dispose() -> None:
            with self._lock:
                self._listeners[kind] = tuple(x for x in self._listeners[kind] if x is not item)

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

    def listener_snapshot(self) -> ListenerSnapshot:
        with self._lock:
            return ListenerSnapshot(dict(self._listeners))

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
    ) -> list[ToolExecutionOutcome]:
        """Run one model step's calls; outcomes come back in the model's order.

        Refusals and failures are outcomes. Only infrastructure faults raise:
        :class:`~tether_clr.errors.ResultPolicyError` and
        :class:`~tether_clr.errors.SinkError`, after every dispatched body has
        finished.
        """
        from .batch import BatchRun

        return await BatchRun(self, list(calls), view, max_parallelism, sink, cancellation).run()


def _make_entry(tool: Tool, scope: AgentPipelineScope | None, options: ToolRegistrationOptions) -> _ToolEntry:
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
    concurrency: Callable[[Any], Any] | None
    if options.is_concurrency_safe is not None:
        concurrency = as_concurrency_predicate(options.is_concurrency_safe)
    else:
        own = getattr(tool, "is_concurrency_safe", None)
        concurrency = own if callable(own) else None
    approval = tuple(
        as_approval_predicate(source)
        for source in (getattr(tool, "requires_approval", None), options.requires_approval)
        if source is not None
    )
    return _ToolEntry(tool, scope, validator, name, description, concurrency, approval)


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

