"""The catalog's side of a shared control plane: attaching, kill switches, and applying a committed change.

:class:`ControlledCatalog` is the part of :class:`~tether_clr.catalog.store.ToolCatalog`
that a :class:`~tether_clr.catalog.attachment.ControlAttachment` drives: it
applies each committed :class:`~tether_clr.catalog.control.ControlChange` to
the live registrations (every registration of the version, in any layer),
pins and kill switches, bumping the revision and emitting ``tools/change``
once per change; and it overlays the shared status and metadata on a version
registered after attaching.

Who made a change: every call that changes shared state (``set_status``,
``update_metadata``, ``pin``, ``unpin``, ``add_kill_switch``,
``remove_kill_switch``, and the removal a pin's or a switch's registration
makes) takes ``actor=``, checked by :func:`~tether_clr.catalog.control.check_actor`
whether or not a control plane is attached (an invalid one changes nothing);
``None`` records the attachment's actor (the host's). Without a control plane
there is no control log: the actor is checked and recorded nowhere.

Applying fails closed: a status the local lifecycle rule would refuse is
applied when it takes a version out of use (DISABLED, RETIRED, or any move
to a status that is not callable) and otherwise kept out (a RETIRED version
is never brought back; logged); metadata that cannot apply to a local
registration holds that registration DISABLED (logged).

Floor 3 (the catalog).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tether_clr.catalog.attachment import ControlAttachment
from tether_clr.catalog.control import CatalogControl, ControlChange, check_actor
from tether_clr.catalog.control_state import decode_metadata
from tether_clr.catalog.entries import LiveRecord, ToolEntry, validation_checks
from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from tether_clr.catalog.records import ToolPin
from tether_clr.catalog.registration import ChangeKind, Registration, ToolsChangedEvent

if TYPE_CHECKING:
    from tether_clr.records.scope import AgentPipelineScope

__all__ = ["ControlledCatalog", "checked_actor", "overlaid", "recorded_actor"]

logger = logging.getLogger("tether_clr")

_EVENT_KINDS: dict[str, ChangeKind] = {
    "status": "status", "metadata": "metadata", "pin": "pin", "unpin": "pin", "kill": "kill_switch", "unkill": "kill_switch",
}  # fmt: skip


def checked_actor(actor: str | None) -> str | None:
    """``actor=`` of a change: ``None`` (the host's actor) or a valid actor (:func:`~tether_clr.catalog.control.check_actor`)."""
    return None if actor is None else check_actor(actor)


def recorded_actor(control: ControlAttachment, actor: str | None) -> str:
    """Who the control log records a change as: the call's ``actor``, or the attachment's when it names none."""
    return control.actor if actor is None else actor


def overlaid(entry: ToolEntry, control: ControlAttachment) -> ToolEntry:
    """``entry`` with the shared status and metadata of its version (a registration made after attaching)."""
    candidate = entry.candidate
    try:
        status, changes = control.overlay(candidate.logical_name, candidate.version)
        metadata = candidate.metadata if changes is None else candidate.metadata.updated(**changes)
    except (TypeError, ValueError) as exc:
        logger.error("shared metadata of %r %s cannot apply (%s); it is held DISABLED here", entry.name, candidate.version, exc)
        return replace(entry, candidate=replace(candidate, status=ToolStatus.DISABLED))
    if status is None and changes is None:
        return entry
    return replace(entry, candidate=replace(candidate, status=status or candidate.status, metadata=metadata))


def _admits(record: LiveRecord, target: ToolStatus) -> bool:
    """Whether a shared status applies to a local registration (see the module docstring)."""
    current = record.current.candidate.status
    try:
        move = status_transition(current, target)
    except ValueError:
        move = None
    if move is StatusTransition.VALIDATE:
        try:
            validation_checks(record)
        except ValueError as exc:
            logger.warning("shared status VALIDATED not applied to %r: %s", record.current.name, exc)
            return False
        return True
    if move is None and target.is_callable:
        logger.warning("shared status %s not applied to %r: it is %s here", target.name, record.current.name, current.name)
        return False
    return True


class ControlledCatalog:
    """The control-plane methods of :class:`~tether_clr.catalog.store.ToolCatalog` (a base class of it)."""

    _lock: threading.RLock
    _by_logical_name: dict[str, list[LiveRecord]]
    _pins: dict[tuple[str, str | None, str | None], ToolPin]
    _kill_switches: tuple[KillSwitch, ...]
    _control: ControlAttachment | None

    def _bump(self, policy: bool = False) -> int:
        raise NotImplementedError

    def _emit(self, event: ToolsChangedEvent) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ attaching
    @property
    def control(self) -> ControlAttachment | None:
        """The attached control plane (:meth:`attach_control`), or ``None``."""
        return self._control

    def attach_control(self, control: CatalogControl, max_staleness: float = 1.0, *, actor: str | None = None) -> ControlAttachment:
        """Follow the shared control store ``control``; see :mod:`tether_clr.catalog.attachment`.

        Loads and applies its whole log now (raising, attaching nothing, when
        the store cannot be read), then applies every later change in revision
        order. From then on status changes, metadata updates, pins and kill
        switches made here are committed to the store first, recorded as the
        call's ``actor=``, else as ``actor`` (default ``user@host``; an invalid
        one is refused before attaching). ``RuntimeError`` when already attached.
        """
        attachment = ControlAttachment(self, control, max_staleness, actor)
        with self._lock:
            if self._control is not None:
                raise RuntimeError("this registry is already attached to a control plane; dispose that attachment first")
            self._control = attachment
        try:
            attachment.start()
        except BaseException:
            with self._lock:
                self._control = None
            raise
        return attachment

    def detach_control(self, attachment: ControlAttachment) -> None:
        """Called by :meth:`ControlAttachment.dispose`: stop checking freshness and writing through."""
        with self._lock:
            if self._control is attachment:
                self._control = None

    # --------------------------------------------------------- kill switches
    @property
    def kill_switches(self) -> tuple[KillSwitch, ...]:
        """The live kill switches: set here, or shared by the control plane."""
        return self._kill_switches

    def add_kill_switch(self, switch: KillSwitch, *, actor: str | None = None) -> Registration:
        """Stop every call ``switch`` matches, when assembling and before each body; the registration lifts it.

        Attached to a control plane, the switch (and lifting it) is committed
        there first, recorded as ``actor`` (default: the attachment's actor),
        and applies on every attached host; the registration's ``dispose()``
        records the lifting as the same ``actor`` (:meth:`remove_kill_switch`
        names another). ``ValueError`` when a switch with its id is already
        set, or ``actor`` is not a valid actor.
        """
        if not isinstance(switch, KillSwitch):
            raise TypeError(f"switch must be a KillSwitch, got {type(switch).__name__}")
        actor = checked_actor(actor)
        with self._lock:
            if any(s.switch_id == switch.switch_id for s in self._kill_switches):
                raise ValueError(f"kill switch {switch.switch_id!r} is already set")
            control = self._control
            if control is None:
                self._kill_switches = (*self._kill_switches, switch)
                revision = self._bump(policy=True)
        if control is not None:
            control.commit(ControlChange.kill(switch, actor=recorded_actor(control, actor)))
        else:
            self._emit(ToolsChangedEvent(None, "", "kill_switch", revision=revision))

        def lift() -> None:
            self._lift(switch.switch_id, actor)

        return Registration(lift)

    def remove_kill_switch(self, switch_id: str, *, reason: str = "", actor: str | None = None) -> bool:
        """Lift the kill switch ``switch_id``, wherever it was set; ``False`` when no such switch is live here.

        A switch set on another host or by ``tether-clr catalog kill`` has no
        registration here: this lifts it. Attached to a control plane, the
        lifting is committed there first, recorded as ``actor`` (default: the
        attachment's actor) with ``reason``, and applies on every attached host.
        """
        if not isinstance(switch_id, str):
            raise TypeError(f"switch_id must be a str, got {type(switch_id).__name__}")
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, got {type(reason).__name__}")
        return self._lift(switch_id, checked_actor(actor), reason)

    def _lift(self, switch_id: str, actor: str | None, reason: str = "") -> bool:
        with self._lock:
            if not any(s.switch_id == switch_id for s in self._kill_switches):
                return False
            control = self._control
            if control is None:
                self._kill_switches = tuple(s for s in self._kill_switches if s.switch_id != switch_id)
                revision = self._bump(policy=True)
        if control is not None:
            try:
                control.commit(ControlChange.unkill(switch_id, actor=recorded_actor(control, actor), reason=reason))
            except ValueError:  # lifted meanwhile, on another host
                control.sync()
                return False
            return True
        self._emit(ToolsChangedEvent(None, "", "kill_switch", revision=revision))
        return True

    # ------------------------------------------------------------- applying
    def apply_control_change(self, change: ControlChange) -> Callable[[], None]:
        """Apply one committed change here and bump the revision; returns what emits its ``tools/change``.

        The attachment calls it in revision order, after its
        :class:`~tether_clr.catalog.control_state.ControlState` accepted the change.
        """
        kind, name = change.kind, change.logical_name
        scopes: list[AgentPipelineScope | None] = []
        with self._lock:
            records = [r for r in self._by_logical_name.get(name, ()) if r.current.candidate.version == change.version]
            if kind == "status":
                status = ToolStatus(change.data["status"])
                for record in records:
                    if _admits(record, status):
                        entry = record.current
                        record.entry = replace(entry, candidate=replace(entry.candidate, status=status))
                        scopes.append(entry.scope)
            elif kind == "metadata":
                changes = decode_metadata(change.data["changes"])
                for record in records:
                    entry = record.current
                    try:
                        candidate = replace(entry.candidate, metadata=entry.candidate.metadata.updated(**changes))
                    except (TypeError, ValueError) as exc:
                        logger.error("shared metadata of %r %s cannot apply (%s); held DISABLED here", name, change.version, exc)
                        candidate = replace(entry.candidate, status=ToolStatus.DISABLED)
                    record.entry = replace(entry, candidate=candidate)
                    scopes.append(entry.scope)
            elif kind in ("pin", "unpin"):
                if kind == "pin":
                    assert change.version is not None
                    self._pins[change.pin_key] = ToolPin(name, change.version, *change.pin_key[1:])
                else:
                    self._pins.pop(change.pin_key, None)
            else:
                switch_id = change.data["switch"]["switch_id"] if kind == "kill" else change.data["switch_id"]
                kept = tuple(s for s in self._kill_switches if s.switch_id != switch_id)
                self._kill_switches = (*kept, KillSwitch.from_json(change.data["switch"])) if kind == "kill" else kept
            revision = self._bump(policy=kind in ("kill", "unkill"))
        event_kind = _EVENT_KINDS[kind]
        shared = copy.deepcopy(change)  # the listeners' own copy: nothing they do reaches this host's state
        events = [ToolsChangedEvent(scope, name, event_kind, revision=revision, control=shared) for scope in scopes or [None]]

        def emit() -> None:
            for event in events:
                self._emit(event)

        return emit
