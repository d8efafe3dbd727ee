"""One host following a shared control store: ``registry.attach_control(control, max_staleness=1.0)``.

Attaching loads the store's whole log and applies it, then a background thread
(a plain daemon thread, so it serves asyncio, trio and loop-less hosts alike)
applies every later change, strictly in revision order: it always reads
``revision > last_applied`` and stops at a gap, so lost, late or reordered
notifications never reorder or skip a change. PostgreSQL's LISTEN/NOTIFY wakes
it at once; otherwise it polls every quarter of ``max_staleness``.

**Freshness, the fail-closed rule.** :attr:`ControlAttachment.fresh_as_of` is
the monotonic time at which the last successful read of the store *began*:
every change committed before it has been applied. Before each body,
re-authorization refuses the call UNAVAILABLE ``control_stale`` when that is
more than ``max_staleness`` seconds ago (the store unreachable, the thread
starved, notifications and polls failing): one clock read and a subtraction,
no round trip. So a change is in force on every host within ``max_staleness``
of its commit, or the host runs nothing.

Writes go through the store first: :meth:`ControlAttachment.commit` commits one
change in one transaction, then catches up (which applies it, in its place
among the others); nothing is applied locally before the commit.

Floor 3 (the catalog): it drives a :class:`~tether_clr.catalog.control.CatalogControl`
through its protocol and runs no call.
"""

from __future__ import annotations

import getpass
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tether_clr.catalog.control import CatalogControl, ControlChange, ControlFeed, check_actor, recordable_actor
from tether_clr.catalog.control_state import ControlState, decode_metadata
from tether_clr.catalog.lifecycle import ToolStatus

__all__ = ["ControlAttachment", "ControlTarget", "default_actor"]

logger = logging.getLogger("tether_clr")


def default_actor() -> str:
    """``user@host``: who a change made from this process is recorded as, when no actor is given.

    Always an actor :func:`~tether_clr.catalog.control.check_actor` accepts
    (:func:`~tether_clr.catalog.control.recordable_actor`): an odd login name
    in the environment never makes this host's changes fail.
    """
    try:
        user = getpass.getuser()
    except Exception:  # no login name, no USER variable: still record something true
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return recordable_actor(f"{user}@{socket.gethostname()}")


class ControlTarget(Protocol):
    """What an attachment changes: the catalog (a :class:`~tether_clr.catalog.store.ToolCatalog`)."""

    def apply_control_change(self, change: ControlChange) -> Callable[[], None]:
        """Apply one change locally (bumping the revision); returns what emits its ``tools/change`` events."""
        ...

    def detach_control(self, attachment: ControlAttachment) -> None: ...


class ControlAttachment:
    """A registry attached to a control store; what ``registry.attach_control`` returns.

    ``revision``: the last control revision applied; ``fresh_as_of``: see the
    module docstring; ``stale``: whether calls are refused ``control_stale``
    now; ``actor``: who this host's changes are recorded as when a call names
    no ``actor=`` of its own (checked by :func:`~tether_clr.catalog.control.check_actor`:
    an invalid one is refused here, before attaching). :meth:`sync`
    catches up now, :meth:`wait_for_revision` waits for another host's change,
    :meth:`dispose` (or ``with``) detaches: the registry keeps the state it has
    and stops following the store (writes are local again). It does not
    close the store.
    """

    def __init__(self, target: ControlTarget, control: CatalogControl, max_staleness: float, actor: str | None = None) -> None:
        if isinstance(max_staleness, bool) or not isinstance(max_staleness, int | float):
            raise TypeError(f"max_staleness must be a number of seconds, got {type(max_staleness).__name__}")
        if not (math.isfinite(max_staleness) and max_staleness > 0):
            raise ValueError(f"max_staleness must be a positive, finite number of seconds, got {max_staleness!r}")
        for method in ("commit", "changes", "feed", "close"):
            if not callable(getattr(control, method, None)):
                raise TypeError(f"control must be a CatalogControl (no {method}()), got {type(control).__name__}")
        self.control = control
        self.max_staleness = float(max_staleness)
        self.actor = check_actor(actor) if actor is not None else default_actor()
        self.fresh_as_of = -math.inf
        self.state = ControlState()
        self._target = target
        self._apply_lock = threading.Lock()
        # Events of applied changes, in revision order, and whether a thread is emitting them (see _emit_pending).
        self._pending: list[Callable[[], None]] = []
        self._emitting = False
        self._pending_lock = threading.Lock()
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self._poll = min(max(self.max_staleness / 4, 0.005), 1.0)
        self._thread: threading.Thread | None = None
        self._failing = False

    # ------------------------------------------------------------ reading
    @property
    def revision(self) -> int:
        """The last control revision applied here."""
        return self.state.revision

    @property
    def stale(self) -> bool:
        """Whether this host's view is older than ``max_staleness`` (its calls are refused ``control_stale``)."""
        return time.monotonic() - self.fresh_as_of > self.max_staleness

    def overlay(self, logical_name: str, version: str) -> tuple[ToolStatus | None, dict[str, Any] | None]:
        """The shared status and metadata changes of a version, for a registration made after attaching."""
        key = (logical_name, version)
        encoded = self.state.metadata.get(key)
        return self.state.statuses.get(key), None if encoded is None else decode_metadata(encoded)

    # ------------------------------------------------------------ following
    def start(self) -> None:
        """Load and apply the whole log (raising if the store cannot be read), then follow it."""
        self._read(self.control.changes, 0)
        self._thread = threading.Thread(target=self._follow, name="tether-clr-control", daemon=True)
        self._thread.start()

    def sync(self) -> int:
        """Catch up with the store now, on the store's own connection; returns the revision applied."""
        self._read(self.control.changes, None)
        return self.state.revision

    def commit(self, change: ControlChange) -> ControlChange | None:
        """Commit ``change`` through the store, then catch up (applying it in its place); ``None``: a no-op."""
        committed = self.control.commit(change)
        self.sync()
        return committed

    def wait_for_revision(self, revision: int, timeout: float) -> bool:
        """Wait until control ``revision`` is applied here; ``False`` after ``timeout`` seconds without it."""
        with self._progress:
            return self._progress.wait_for(lambda: self.state.revision >= revision, timeout)

    def wait_until_fresh(self, timeout: float) -> bool:
        """Wait until this host's view is fresh again; ``False`` after ``timeout`` seconds."""
        with self._progress:
            return self._progress.wait_for(lambda: not self.stale, timeout)

    def _read(self, changes: Callable[[int], Sequence[ControlChange]], after: int | None) -> None:
        started = time.monotonic()
        found = changes(self.state.revision if after is None else after)
        emits: list[Callable[[], None]] = []
        with self._apply_lock:
            if self._stop.is_set():  # detached meanwhile: the registry no longer follows the store
                return
            complete = self._apply(found, emits)
            if complete and started > self.fresh_as_of:
                self.fresh_as_of = started
            with self._pending_lock:
                self._pending.extend(emits)  # in revision order: changes apply one at a time, under the lock
        self._emit_pending()
        with self._progress:
            self._progress.notify_all()

    def _emit_pending(self) -> None:
        """Emit the pending ``tools/change`` events in revision order, whichever thread applied them.

        Two threads apply changes (the follower, and a local write catching up), and listeners must
        see them in the order they were applied, as an audit trail would record them. One thread
        emits at a time, outside the apply lock (a listener may block on another event loop that
        is itself writing through this registry); a thread that finds another emitting leaves its
        events to it, which takes them before it stops.
        """
        while True:
            with self._pending_lock:
                if self._emitting or not self._pending:
                    return
                self._emitting = True
                emits, self._pending = self._pending, []
            try:
                for emit in emits:
                    emit()
            finally:
                with self._pending_lock:
                    self._emitting = False

    def _apply(self, changes: Sequence[ControlChange], emits: list[Callable[[], None]]) -> bool:
        """Apply ``changes`` in order from the next revision; ``False`` at a gap or a change that cannot apply."""
        for change in sorted(changes, key=lambda c: c.revision):
            if change.revision <= self.state.revision:
                continue  # applied already (another reader's catch-up)
            if change.revision != self.state.revision + 1:
                logger.warning("control log: revision %d after %d; waiting for the gap", change.revision, self.state.revision)
                return False
            try:
                self.state.apply(change)
            except (KeyError, TypeError, ValueError) as exc:
                logger.error("control change %d cannot be applied (%s); this host stays behind", change.revision, exc)
                return False
            emits.append(self._target.apply_control_change(change))
            logger.info(
                "control change %d applied: %s (by %s%s)",
                change.revision, change.describe(), change.actor, f": {change.reason}" if change.reason else "",
            )  # fmt: skip
        return True

    def _follow(self) -> None:
        feed: ControlFeed | None = None
        while not self._stop.is_set():
            try:
                if feed is None:
                    feed = self.control.feed()
                self._read(feed.changes, None)
                if self._failing:
                    self._failing = False
                    logger.warning("control store reachable again at revision %d", self.state.revision)
                feed.wait(self._poll)
            except Exception as exc:
                if not self._failing:
                    self._failing = True
                    logger.warning("control store unreachable (%s); calls go control_stale after %ss", exc, self.max_staleness)
                if feed is not None:
                    _close_quietly(feed)
                    feed = None
                self._stop.wait(self._poll)
        if feed is not None:
            _close_quietly(feed)

    # ------------------------------------------------------------ detaching
    @property
    def is_disposed(self) -> bool:
        return self._stop.is_set()

    def dispose(self) -> None:
        """Stop following the store; the registry keeps the state it has, and no longer checks freshness.

        Returns at once: the background thread applies nothing more and ends
        (closing its connection) when its current wait does, within a poll interval.
        """
        if self._stop.is_set():
            return
        with self._apply_lock:
            self._stop.set()
        self._target.detach_control(self)

    def __enter__(self) -> ControlAttachment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def __repr__(self) -> str:
        return f"ControlAttachment(revision={self.revision}, max_staleness={self.max_staleness}, stale={self.stale})"


def _close_quietly(feed: ControlFeed) -> None:
    try:
        feed.close()
    except Exception:
        logger.debug("closing a control feed failed", exc_info=True)
