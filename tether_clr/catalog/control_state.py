"""The control plane's current state, folded from its change log, and the metadata changes it carries as data.

:class:`ControlState` applies :class:`~tether_clr.catalog.control.ControlChange`
rows strictly in revision order (one after the other, no gap): the latest
status of each version, the metadata fields changed for it (merged, later
fields over earlier ones), the live pins and the live kill switches. An
attachment keeps one to overlay registrations made after it attached; the
command line folds the whole log to show it.

Metadata goes through the log as JSON: :func:`encode_metadata` turns the
keyword arguments ``update_metadata`` takes into JSON values,
:func:`decode_metadata` back. Only data can be shared: ``enabled_when`` (a
function) is code and is refused, as are the fields that name a version
(``logical_name``, ``version``, ``origin``).

Floor 3 (the catalog); pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether_clr.catalog.control import ControlChange
from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from tether_clr.catalog.metadata import IDENTITY_FIELDS, SideEffect
from tether_clr.catalog.records import ToolPin

__all__ = ["SHARED_METADATA_FIELDS", "ControlState", "admit", "decode_metadata", "encode_metadata"]


def _sorted_or_none(value: Any) -> Any:
    return None if value is None else sorted(value)


def _identity(value: Any) -> Any:
    return value


def _side_effect(value: Any) -> Any:
    return SideEffect(value).value


# field -> (encode, decode); sets travel as sorted lists, enums as their values.
_CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "tenants": (_sorted_or_none, lambda v: None if v is None else frozenset(v)),
    "environments": (_sorted_or_none, lambda v: None if v is None else frozenset(v)),
    "regions": (_sorted_or_none, lambda v: None if v is None else frozenset(v)),
    "required_scopes": (sorted, frozenset),
    "tags": (sorted, frozenset),
    "aliases": (list, tuple),
    "side_effect": (_side_effect, SideEffect),
    **{
        name: (_identity, _identity)
        for name in (
            "provider", "risk_level", "read_only", "destructive", "idempotent", "open_world", "domain",
            "compatibility", "max_result_bytes", "title", "deferred", "search_hint",
        )
    },
}  # fmt: skip

SHARED_METADATA_FIELDS: frozenset[str] = frozenset(_CODECS)
"""The metadata fields a control plane carries."""


def encode_metadata(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``update_metadata``'s keyword arguments as JSON values.

    ``ValueError`` for a field that is not data (``enabled_when``), names a
    version, or is unknown; the values themselves are checked by
    :meth:`~tether_clr.ToolMetadata.updated`, which the caller runs first.
    """
    encoded: dict[str, Any] = {}
    for name, value in changes.items():
        if name in IDENTITY_FIELDS:
            raise ValueError(f"{name!r} identifies a tool version and cannot be updated; register a new version")
        codec = _CODECS.get(name)
        if codec is None:
            if name == "enabled_when":
                raise ValueError(
                    "enabled_when is code, not data: a control plane cannot share it; "
                    "change it in each host's code, or use a kill switch"
                )
            raise ValueError(f"{name!r} is not a metadata field a control plane shares")
        try:
            encoded[name] = codec[0](value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata field {name!r} cannot be shared as data: {exc}") from exc
    return encoded


def decode_metadata(encoded: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments :func:`encode_metadata` encoded; ``ValueError`` for an unknown field or value."""
    if not isinstance(encoded, Mapping):
        raise ValueError(f"metadata changes must be a JSON object, got {type(encoded).__name__}")
    decoded: dict[str, Any] = {}
    for name, value in encoded.items():
        codec = _CODECS.get(name)
        if codec is None:
            raise ValueError(f"{name!r} is not a metadata field a control plane shares")
        try:
            decoded[name] = codec[1](value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata field {name!r} holds {value!r}: {exc}") from exc
    return decoded


@dataclass
class ControlState:
    """What the log says now, after applying its changes up to ``revision``.

    ``statuses`` and ``metadata`` (encoded fields, merged) by (logical name,
    version); ``pins`` by (logical name, tenant, agent version); ``switches``
    by id; ``latest`` the last change of each subject (who, when, why), for
    display. :meth:`apply` takes the change of revision ``revision + 1`` only.
    """

    revision: int = 0
    statuses: dict[tuple[str, str], ToolStatus] = field(default_factory=dict)
    metadata: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pins: dict[tuple[str, str | None, str | None], ToolPin] = field(default_factory=dict)
    switches: dict[str, KillSwitch] = field(default_factory=dict)
    latest: dict[str, ControlChange] = field(default_factory=dict)

    @classmethod
    def folded(cls, changes: Iterable[ControlChange]) -> ControlState:
        state = cls()
        for change in changes:
            state.apply(change)
        return state

    def apply(self, change: ControlChange) -> None:
        """Apply the next change; ``ValueError`` (changing nothing) if it is not revision ``revision + 1``
        or its data is malformed."""
        if change.revision != self.revision + 1:
            raise ValueError(f"control change {change.revision} applied after {self.revision}: out of order")
        kind, key = change.kind, (change.logical_name, change.version or "")
        if kind == "status":
            self.statuses[key] = ToolStatus(change.data["status"])
        elif kind == "metadata":
            changes = change.data["changes"]
            decode_metadata(changes)  # malformed data is refused before anything is kept
            self.metadata[key] = {**self.metadata.get(key, {}), **changes}
        elif kind == "pin":
            assert change.version is not None
            pin = ToolPin(change.logical_name, change.version, change.data.get("tenant_id"), change.data.get("agent_version"))
            self.pins[change.pin_key] = pin
        elif kind == "unpin":
            self.pins.pop(change.pin_key, None)
        elif kind == "kill":
            switch = KillSwitch.from_json(change.data["switch"])
            self.switches[switch.switch_id] = switch
        else:
            self.switches.pop(str(change.data["switch_id"]), None)
        self.latest[change.subject] = change
        self.revision = change.revision


def admit(change: ControlChange, latest: ControlChange | None) -> bool:
    """Whether a store writes ``change``, given the latest committed change of its subject.

    ``False`` for a change that changes nothing (the status it already has);
    ``ValueError`` for one that cannot follow: a status move
    :func:`~tether_clr.status_transition` refuses from the status last
    committed (with none committed yet, any status: the store does not know
    the hosts' code), an unpin with no live pin, an unkill with no live switch,
    a kill switch whose id is already set.
    """
    kind = change.kind
    if kind == "status":
        if latest is None:
            return True
        move = status_transition(ToolStatus(latest.data["status"]), ToolStatus(change.data["status"]))
        return move is not StatusTransition.NOOP
    live = latest is not None and latest.kind in ("pin", "kill")
    if kind == "unpin" and not live:
        raise ValueError(
            f"no pin of {change.logical_name!r} for tenant={change.data.get('tenant_id')!r}, "
            f"agent_version={change.data.get('agent_version')!r}"
        )
    if kind == "unkill" and not live:
        raise ValueError(f"no live kill switch {change.data.get('switch_id')!r}")
    if kind == "kill" and live:
        raise ValueError(f"kill switch {change.data['switch']['switch_id']!r} is already set")
    return True
