"""The listeners of the execution pipeline, and the snapshot one batch runs with.

Seven kinds (:data:`ListenerKind`): the pre-execute, execute and post-execute
waterfalls, guards, result policies, result listeners and audit listeners.
:class:`Listeners` holds the registered ones (thread-safe, cheap to change);
:meth:`Listeners.snapshot` hands every batch one immutable
:class:`ListenerSnapshot`, shared until a listener is registered or disposed,
so a running batch keeps the listeners it started with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tether_clr.catalog.registration import Registration
from tether_clr.records.scope import AgentPipelineScope

__all__ = ["LISTENER_KINDS", "Listener", "ListenerKind", "ListenerSnapshot", "Listeners"]

ListenerKind = Literal["pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener", "audit"]
LISTENER_KINDS: tuple[ListenerKind, ...] = (
    "pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener", "audit",
)

@dataclass(frozen=True, slots=True, eq=False)
class Listener:
    """One registered listener: the scope it applies to (None: every scope) and the function."""

    scope: AgentPipelineScope | None
    fn: Callable[..., Any]


class ListenerSnapshot:
    """Listeners as they were when a batch started, ordered per call scope.

    Order of a waterfall: global listeners first, then each scope from the root
    down to the call's own scope, so an outer policy always sees a call before
    an inner one can answer it; within one scope, registration order (prepend
    puts a listener first).
    """

    __slots__ = ("_by_kind", "_memo", "_stage_memo")

    # A registry hands the same snapshot to every batch until a listener is registered or
    # disposed, so the memo outlives batches; bounded, because hosts may make a scope per request.
    _MEMO_LIMIT = 256

    def __init__(self, by_kind: Mapping[ListenerKind, tuple[Listener, ...]]) -> None:
        self._by_kind = by_kind
        self._memo: dict[tuple[ListenerKind, int], tuple[AgentPipelineScope | None, tuple[Callable[..., Any], ...]]] = {}
        self._stage_memo: dict[int, tuple[AgentPipelineScope | None, dict[ListenerKind, tuple[Callable[..., Any], ...]]]] = {}

    def stage_chains(self, scope: AgentPipelineScope | None) -> dict[ListenerKind, tuple[Callable[..., Any], ...]]:
        """Every kind's :meth:`chain` for ``scope`` at once, made once per snapshot and scope (a batch's
        pipeline takes its view's scope's chains with one lookup). Callers must not change the dict."""
        found = self._stage_memo.get(id(scope))
        if found is not None and found[0] is scope:
            return found[1]
        chains = {kind: self.chain(kind, scope) for kind in LISTENER_KINDS}
        if len(self._stage_memo) >= self._MEMO_LIMIT:
            self._stage_memo.clear()
        self._stage_memo[id(scope)] = (scope, chains)
        return chains

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


class Listeners:
    """The registered listeners of one registry, by kind; :meth:`snapshot` is what a batch runs with."""

    __slots__ = ("_lock", "_by_kind", "_snapshot")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_kind: dict[ListenerKind, tuple[Listener, ...]] = {kind: () for kind in LISTENER_KINDS}
        self._snapshot: ListenerSnapshot | None = None  # rebuilt after a change

    def add(self, kind: ListenerKind, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """Register ``fn`` for ``kind`` in ``scope`` (None: every scope); first in its scope with ``prepend``."""
        if not callable(fn):
            raise TypeError(f"{kind} listener must be callable, got {type(fn).__name__}")
        if scope is not None and not isinstance(scope, AgentPipelineScope):
            raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
        item = Listener(scope, fn)
        with self._lock:
            current = self._by_kind[kind]
            self._by_kind[kind] = (item, *current) if prepend else (*current, item)
            self._snapshot = None

        def dispose() -> None:
            with self._lock:
                self._by_kind[kind] = tuple(x for x in self._by_kind[kind] if x is not item)
                self._snapshot = None

        return Registration(dispose)

    def snapshot(self) -> ListenerSnapshot:
        """The listeners as they are now; one immutable snapshot is shared until a listener
        is registered or disposed, so a running batch keeps the one it took."""
        with self._lock:
            snapshot = self._snapshot
            if snapshot is None:
                snapshot = self._snapshot = ListenerSnapshot(dict(self._by_kind))
            return snapshot
