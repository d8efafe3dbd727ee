"""The shared, data-only part of the catalog's control plane: the change record and the store protocol.

Tools, schemas and deny rules are code and stay in each host. What hosts share
is data, as a log of :class:`ControlChange` rows with a monotonically
increasing control ``revision``, each recording who (``actor``, checked by
:func:`check_actor`), when (``at``, the store's clock) and why (``reason``):

* ``status``: a (logical name, version)'s :class:`~tether_clr.ToolStatus`;
* ``metadata``: governance fields ``update_metadata`` may change, as data
  (:mod:`tether_clr.catalog.control_state` encodes them);
* ``pin`` / ``unpin``: a pin for a tenant, an agent version, both, or everyone;
* ``kill`` / ``unkill``: a :class:`~tether_clr.KillSwitch` set or lifted.

A :class:`CatalogControl` (``PostgresCatalogControl``, ``SqliteCatalogControl``)
commits one change per transaction and hands changes back in revision order;
a :class:`ControlFeed` is one reader's connection, which also waits for the
next change (PostgreSQL: LISTEN/NOTIFY; SQLite: a timed poll).
``registry.attach_control`` (:mod:`tether_clr.catalog.attachment`) follows it.

Floor 3 (the catalog): it defines the protocol; the stores live above it.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.foundations.checks import optional_str, require_str
from tether_clr.foundations.json_values import canonical_json

__all__ = [
    "CONTROL_CHANGE_KINDS", "MAX_ACTOR_LENGTH", "CatalogControl", "ControlChange", "ControlChangeKind", "ControlFeed",
    "check_actor", "recordable_actor",
]  # fmt: skip

ControlChangeKind = Literal["status", "metadata", "pin", "unpin", "kill", "unkill"]
CONTROL_CHANGE_KINDS: tuple[ControlChangeKind, ...] = get_args(ControlChangeKind)

MAX_ACTOR_LENGTH = 256
"""The longest ``actor`` a change may record, in characters (``user@host`` takes at most about 100)."""

# Control characters (NUL, newlines, tabs, escapes, C1), lone surrogates, line and paragraph separators.
_REFUSED_IN_ACTOR = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def check_actor(actor: Any) -> str:
    """``actor`` if it may be recorded as who made a change; ``TypeError`` / ``ValueError`` otherwise.

    An actor is one line of text naming a person or a service, shown by
    ``tether-clr catalog show``, in every host's log line and in every
    ``tools/change`` event: a ``str`` of 1 to :data:`MAX_ACTOR_LENGTH`
    characters, not only whitespace, with no control character (NUL, a line
    break, a tab, an escape), format character (a bidirectional override, a
    zero-width space: text that shows as someone else, or as nothing), line or
    paragraph separator or lone surrogate.
    Refusing them (rather than cleaning them) keeps the audit trail exactly
    what the caller said, and keeps a forged line or a terminal escape out of it.
    """
    if not isinstance(actor, str):
        raise TypeError(f"actor must be a str, got {type(actor).__name__}")
    if not actor.strip():
        raise ValueError("actor must not be empty or only whitespace")
    if len(actor) > MAX_ACTOR_LENGTH:
        raise ValueError(f"actor must be at most {MAX_ACTOR_LENGTH} characters, got {len(actor)}")
    if not (actor.isascii() and actor.isprintable()) and any(unicodedata.category(c) in _REFUSED_IN_ACTOR for c in actor):
        raise ValueError("actor must be one line of text: no control or format characters, line breaks or lone surrogates")
    return actor


def recordable_actor(text: str) -> str:
    """``text`` (a login or host name from the environment) made an actor :func:`check_actor` accepts.

    For the defaults only (``user@host``, the OS user), which the caller did not
    choose and which must never make a change fail: each refused character
    becomes ``?``, the text is cut to :data:`MAX_ACTOR_LENGTH`, and a blank one is ``unknown``.
    """
    cleaned = "".join("?" if unicodedata.category(c) in _REFUSED_IN_ACTOR else c for c in text)[:MAX_ACTOR_LENGTH]
    return cleaned if cleaned.strip() else "unknown"


@dataclass(frozen=True, slots=True)
class ControlChange:
    """One row of the control log; build it with the class methods, the store fills ``revision`` and ``at``.

    ``data`` is a JSON object whose form depends on ``kind``: ``{"status":
    "disabled"}``; ``{"changes": {field: value}}``; ``{"tenant_id", "agent_version"}``
    (a pin, ``version`` naming the pinned version; an unpin has none);
    ``{"switch": {...}}`` (:meth:`KillSwitch.as_json`); ``{"switch_id"}``.
    ``logical_name`` is ``""`` for kill switches. ``revision`` is 0 and
    ``at`` ``None`` until the store committed it. ``actor``: :func:`check_actor`
    refuses an invalid one in a change to commit (and the store before writing);
    a committed change read back is only required to name someone (an older
    version wrote it under a laxer rule, and a host that could not read the
    log would refuse every call).
    """

    kind: ControlChangeKind
    logical_name: str
    version: str | None
    data: Mapping[str, Any]
    actor: str
    reason: str = ""
    revision: int = 0
    at: float | None = None
    subject: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in CONTROL_CHANGE_KINDS:
            raise ValueError(f"kind must be one of {CONTROL_CHANGE_KINDS}, got {self.kind!r}")
        if not isinstance(self.logical_name, str):
            raise TypeError(f"logical_name must be a str, got {type(self.logical_name).__name__}")
        optional_str(self.version, "version")
        require_str(self.actor, "actor")
        if not isinstance(self.reason, str):
            raise TypeError(f"reason must be a str, got {type(self.reason).__name__}")
        if not isinstance(self.data, Mapping):
            raise TypeError(f"data must be a JSON object, got {type(self.data).__name__}")
        if type(self.revision) is not int or self.revision < 0:
            raise ValueError(f"revision must be a non-negative int, got {self.revision!r}")
        if self.revision == 0:  # a change to commit; a committed row reads back as it was written (an older writer's)
            check_actor(self.actor)
        object.__setattr__(self, "subject", _subject(self))

    # ------------------------------------------------------------ builders
    @classmethod
    def status(cls, logical_name: str, version: str, status: ToolStatus, *, actor: str, reason: str = "") -> ControlChange:
        return cls("status", require_str(logical_name, "logical_name"), version, {"status": ToolStatus(status).value}, actor, reason)

    @classmethod
    def metadata(
        cls, logical_name: str, version: str, changes: Mapping[str, Any], *, actor: str, reason: str = ""
    ) -> ControlChange:
        """``changes`` already encoded as JSON values (:func:`~tether_clr.catalog.control_state.encode_metadata`)."""
        return cls("metadata", require_str(logical_name, "logical_name"), version, {"changes": dict(changes)}, actor, reason)

    @classmethod
    def pin(
        cls, logical_name: str, version: str, tenant_id: str | None = None, agent_version: str | None = None,
        *, actor: str, reason: str = "",
    ) -> ControlChange:  # fmt: skip
        data = {"tenant_id": tenant_id, "agent_version": agent_version}
        return cls("pin", require_str(logical_name, "logical_name"), version, data, actor, reason)

    @classmethod
    def unpin(
        cls, logical_name: str, tenant_id: str | None = None, agent_version: str | None = None, *, actor: str, reason: str = ""
    ) -> ControlChange:
        data = {"tenant_id": tenant_id, "agent_version": agent_version}
        return cls("unpin", require_str(logical_name, "logical_name"), None, data, actor, reason)

    @classmethod
    def kill(cls, switch: KillSwitch, *, actor: str) -> ControlChange:
        if not isinstance(switch, KillSwitch):
            raise TypeError(f"switch must be a KillSwitch, got {type(switch).__name__}")
        return cls("kill", "", None, {"switch": switch.as_json()}, actor, switch.reason)

    @classmethod
    def unkill(cls, switch_id: str, *, actor: str, reason: str = "") -> ControlChange:
        return cls("unkill", "", None, {"switch_id": require_str(switch_id, "switch_id")}, actor, reason)

    # ------------------------------------------------------------- reading
    @property
    def data_json(self) -> str:
        """``data`` as canonical JSON text (what the store writes)."""
        return canonical_json(dict(self.data))

    @property
    def pin_key(self) -> tuple[str, str | None, str | None]:
        """(logical name, tenant, agent version) of a pin or unpin."""
        return (self.logical_name, self.data.get("tenant_id"), self.data.get("agent_version"))

    def committed(self, revision: int, at: float) -> ControlChange:
        """This change as the store committed it."""
        return ControlChange(self.kind, self.logical_name, self.version, self.data, self.actor, self.reason, revision, at)

    def describe(self) -> str:
        """One line: what changed (for the command line and the log)."""
        target = f"{self.logical_name} {self.version}" if self.version else self.logical_name
        if self.kind == "status":
            return f"{target}: status {self.data['status']}"
        if self.kind == "metadata":
            return f"{target}: metadata {canonical_json(dict(self.data['changes']))}"
        if self.kind in ("pin", "unpin"):
            who = ", ".join(f"{k}={v}" for k, v in self.data.items() if v is not None) or "everyone"
            return f"{target}: {self.kind} for {who}"
        if self.kind == "kill":
            switch = KillSwitch.from_json(self.data["switch"])
            return f"kill switch {switch.switch_id} on {switch.describe()}"
        return f"kill switch {self.data['switch_id']} lifted"


def _subject(change: ControlChange) -> str:
    """The state a change replaces: the latest change of one subject is that subject's current state."""
    kind = change.kind
    if kind in ("pin", "unpin"):
        return "pin:" + json.dumps(list(change.pin_key))
    if kind == "kill":
        return "kill:" + str(change.data.get("switch", {}).get("switch_id"))
    if kind == "unkill":
        return "kill:" + str(change.data.get("switch_id"))
    return f"{kind}:" + json.dumps([change.logical_name, change.version])


class ControlFeed(Protocol):
    """One reader's connection to a control store (a background thread's own)."""

    def changes(self, after: int) -> Sequence[ControlChange]:
        """Every committed change with ``revision > after``, in revision order."""
        ...

    def wait(self, timeout: float) -> None:
        """Return when a change may have been committed (a notification), or after ``timeout`` seconds."""
        ...

    def close(self) -> None: ...


class CatalogControl(Protocol):
    """A shared control store: one transaction per change, read back in revision order.

    ``commit`` checks the change against the store's current state inside its
    transaction (a status move follows :func:`~tether_clr.status_transition`
    from the status last committed; an unpin or unkill needs a live pin or
    switch; ``ValueError`` otherwise, nothing written), gives it the next
    revision and returns it as committed, or ``None`` when it changes nothing
    (the same status again). Revisions are gapless and commit in order, so a
    reader that always asks for ``revision > last_applied`` misses none.
    """

    def commit(self, change: ControlChange) -> ControlChange | None: ...

    def changes(self, after: int = 0) -> Sequence[ControlChange]: ...

    def feed(self) -> ControlFeed: ...

    def close(self) -> None: ...
