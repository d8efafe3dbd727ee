"""Attribution per change: every call that changes shared state, and its removal, records who made it (``actor=``).

An admin service acting for several operators goes through one host; each
change must be recorded as its operator's, in the control store and on every
host's ``tools/change`` event. On both stores (SQLite, PostgreSQL).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tether_clr.catalog.attachment import default_actor
from tether_clr.catalog.control import MAX_ACTOR_LENGTH, check_actor
from tether_clr.catalog import control as control_module
from tether_clr.control import sql
from tether_clr.control.sql import SqlCatalogControl

from tests.support.control_hosts import host_registry
from tests.support.control_stores import attached_hosts, attachment_of, open_control
from tether_clr import ControlChange, KillSwitch, ToolRegistry, ToolsChangedEvent, ToolStatus

WAIT = 10.0  # the bound of every wait for another host's change; never reached when it works

pytestmark = pytest.mark.timeout(60)

INVALID_ACTORS = [
    pytest.param("", id="empty"),
    pytest.param("   ", id="blank"),
    pytest.param("a" * (MAX_ACTOR_LENGTH + 1), id="too-long"),
    pytest.param("alice\nby root: forged line", id="line-break"),
    pytest.param("nul\x00", id="nul"),
    pytest.param("tab\there", id="tab"),
    pytest.param("\x1b[31mred", id="terminal-escape"),
    pytest.param("para\u2029graph", id="paragraph-separator"),
    pytest.param("\ud800", id="lone-surrogate"),
    pytest.param("alice\u202eecila", id="bidi-override"),
    pytest.param("ad\u200bmin", id="zero-width-space"),
    pytest.param("\ufeff", id="only-a-format-character"),
    pytest.param(42, id="not-a-str"),
]


@pytest.fixture
def hosts(kind: str, spec: str) -> Iterator[tuple[ToolRegistry, ToolRegistry]]:
    """Two hosts attached to the same fresh store, as actors ``host-a`` and ``host-b``."""
    with attached_hosts(kind, spec, ("host-a", "host-b")) as (first, second):
        yield first, second


_attached = attachment_of


def _logged(registry: ToolRegistry) -> list[tuple[str, str, str]]:
    """(kind, actor, reason) of every change in the store, read through ``registry``'s own connection."""
    return [(c.kind, c.actor, c.reason) for c in _attached(registry).control.changes(0)]


def _seen_by(reader: ToolRegistry, writer: ToolRegistry, events: list[ToolsChangedEvent]) -> list[tuple[str, str, str]]:
    """(kind, actor, reason) of the committed change each ``tools/change`` on ``reader`` carried, once it applied them all."""
    revision = _attached(writer).revision
    assert _attached(reader).wait_for_revision(revision, WAIT)
    deadline = time.monotonic() + WAIT  # events are emitted by whichever thread applied the change, just after it
    while len(events) < revision:
        assert time.monotonic() < deadline, f"not every event emitted within {WAIT} s"
        time.sleep(0.01)
    return [(e.control.kind, e.control.actor, e.control.reason) for e in events if e.control is not None]


def test_two_operators_changes_through_one_host_are_recorded_as_theirs_and_read_back_on_another_host(
    hosts: tuple[ToolRegistry, ToolRegistry],
) -> None:
    service, other = hosts  # an admin service acting for alice, bob and carol; another replica
    events: list[ToolsChangedEvent] = []
    other.on_change(events.append)
    service.set_status("echo", "1.0.0", ToolStatus.DEPRECATED, actor="alice", reason="superseded")
    service.update_metadata("echo", "1.1.0", tenants={"acme", "globex"}, actor="bob", reason="scope it")
    alices_pin = service.pin("echo", "1.1.0", tenant_id="acme", actor="alice")
    service.pin("echo", "1.1.0", agent_version="2", actor="bob")
    bobs_switch = service.add_kill_switch(KillSwitch("leak", principal_id="mallory", switch_id="k1"), actor="bob")
    service.add_kill_switch(KillSwitch("abuse", principal_id="eve", switch_id="k2"), actor="alice")
    alices_pin.dispose()  # a registration's removal is recorded as whoever made it
    assert service.unpin("echo", agent_version="2", actor="carol", reason="rollout done") is True  # or as named
    bobs_switch.dispose()
    assert service.remove_kill_switch("k2", actor="carol", reason="cleared") is True
    expected = [
        ("status", "alice", "superseded"), ("metadata", "bob", "scope it"), ("pin", "alice", ""), ("pin", "bob", ""),
        ("kill", "bob", "leak"), ("kill", "alice", "abuse"), ("unpin", "alice", ""), ("unpin", "carol", "rollout done"),
        ("unkill", "bob", ""), ("unkill", "carol", "cleared"),
    ]  # fmt: skip
    assert _seen_by(other, service, events) == expected
    assert _logged(other) == expected
    assert other.kill_switches == () and _attached(other).state.pins == {}


def test_a_change_that_names_no_actor_is_recorded_as_the_hosts_actor_as_before(hosts: tuple[ToolRegistry, ToolRegistry]) -> None:
    service, other = hosts
    events: list[ToolsChangedEvent] = []
    other.on_change(events.append)
    service.set_status("echo", "1.0.0", ToolStatus.DEPRECATED)
    service.update_metadata("echo", "1.1.0", tenants={"acme"}, actor=None)  # None: the default, said explicitly
    service.pin("echo", "1.1.0").dispose()
    service.add_kill_switch(KillSwitch("test", principal_id="mallory")).dispose()
    service.pin("echo", "1.1.0", tenant_id="acme")
    assert service.unpin("echo", tenant_id="acme") is True
    service.add_kill_switch(KillSwitch("test", switch_id="k"))
    assert service.remove_kill_switch("k") is True
    assert _seen_by(other, service, events) == [
        ("status", "host-a", ""), ("metadata", "host-a", ""), ("pin", "host-a", ""), ("unpin", "host-a", ""),
        ("kill", "host-a", "test"), ("unkill", "host-a", ""), ("pin", "host-a", ""), ("unpin", "host-a", ""),
        ("kill", "host-a", "test"), ("unkill", "host-a", ""),
    ]  # fmt: skip


def test_a_pin_or_a_switch_set_elsewhere_is_removed_by_name_and_a_missing_one_is_false(
    hosts: tuple[ToolRegistry, ToolRegistry],
) -> None:
    service, other = hosts
    service.pin("echo", "1.1.0", tenant_id="acme", actor="alice")
    service.add_kill_switch(KillSwitch("leak", switch_id="k1"), actor="alice")
    assert _attached(other).wait_for_revision(2, WAIT)
    assert other.unpin("echo", tenant_id="acme", actor="bob", reason="no handle here") is True
    assert other.remove_kill_switch("k1", actor="bob") is True
    assert other.unpin("echo", tenant_id="acme", actor="bob") is False  # gone: nothing committed
    assert other.remove_kill_switch("k1", actor="bob") is False
    assert other.unpin("echo", tenant_id="globex") is False
    assert _logged(other)[2:] == [("unpin", "bob", "no handle here"), ("unkill", "bob", "")]
    assert _attached(service).wait_for_revision(4, WAIT) and service.kill_switches == ()


def _every_call(registry: ToolRegistry, actor: Any) -> list[Callable[[], object]]:
    """Every call that takes ``actor=``, each one a change (it sets the pin and the switch two of them remove)."""
    registry.pin("echo", "1.0.0", tenant_id="acme")
    registry.add_kill_switch(KillSwitch("set", switch_id="k"))
    return [
        lambda: registry.set_status("echo", "1.0.0", ToolStatus.DEPRECATED, actor=actor),
        lambda: registry.update_metadata("echo", "1.1.0", tenants={"acme"}, actor=actor),
        lambda: registry.pin("echo", "1.1.0", tenant_id="globex", actor=actor),
        lambda: registry.unpin("echo", tenant_id="acme", actor=actor),
        lambda: registry.add_kill_switch(KillSwitch("new", switch_id="k2"), actor=actor),
        lambda: registry.remove_kill_switch("k", actor=actor),
    ]


@pytest.mark.parametrize("actor", INVALID_ACTORS)
def test_an_invalid_actor_is_refused_and_changes_nothing_attached_or_not(kind: str, spec: str, actor: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="actor"):
        check_actor(actor)
    with pytest.raises((TypeError, ValueError), match="actor"):
        ControlChange.status("echo", "1.0.0", ToolStatus.DISABLED, actor=actor)
    with open_control(kind, spec) as store:
        attached = host_registry()
        with pytest.raises((TypeError, ValueError), match="actor"):
            attached.attach_control(store, actor=actor)
        assert attached.control is None  # nothing attached
        with attached.attach_control(store, actor="host-a"):
            for registry in (host_registry(), attached):
                calls = _every_call(registry, actor)
                revision, committed = registry.revision, store.changes(0)
                for call in calls:
                    with pytest.raises((TypeError, ValueError), match="actor"):
                        call()
                assert registry.revision == revision and store.changes(0) == committed  # every change bumps the revision
                assert registry.kill_switches == (KillSwitch("set", switch_id="k"),)


def test_the_store_refuses_an_invalid_actor_even_in_a_change_built_as_committed(control: SqlCatalogControl) -> None:
    forged = ControlChange("status", "echo", "1.0.0", {"status": "disabled"}, "alice\nby root", "", 7, 0.0)
    with pytest.raises(ValueError, match="actor"):
        control.commit(forged)
    assert control.changes(0) == []


def test_a_row_an_older_version_wrote_with_an_actor_the_rule_now_refuses_still_reads_and_applies(
    kind: str, spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    legacy = "svc\tlegacy " + "x" * MAX_ACTOR_LENGTH  # a tab, and too long: refused today
    with open_control(kind, spec) as store:
        with monkeypatch.context() as older:  # an older writer: no actor rule but non-empty
            older.setattr(sql, "_check_data", lambda change: None)
            older.setattr(control_module, "check_actor", lambda actor: actor)
            store.commit(ControlChange.kill(KillSwitch("old", switch_id="k"), actor=legacy))
        [row] = store.changes(0)
        assert row.actor == legacy
        registry = host_registry()
        with registry.attach_control(store, max_staleness=1.0) as attachment:
            assert attachment.revision == 1 and registry.kill_switches == (KillSwitch("old", switch_id="k"),)
            assert registry.remove_kill_switch("k", actor="alice") is True  # and is followed as usual
        assert [c.actor for c in store.changes(0)] == [legacy, "alice"]


def test_an_actor_of_the_largest_length_and_any_printable_text_is_recorded_exactly(hosts: tuple[ToolRegistry, ToolRegistry]) -> None:
    service, other = hosts
    longest, accented = "x" * MAX_ACTOR_LENGTH, "Zoë Ünal <zoe@example.com> via admin-svc/β"
    service.set_status("echo", "1.0.0", ToolStatus.DEPRECATED, actor=longest)
    service.set_status("echo", "1.0.0", ToolStatus.DISABLED, actor=accented)
    assert _attached(other).wait_for_revision(2, WAIT)
    assert [actor for _, actor, _ in _logged(other)] == [longest, accented]


def test_without_a_control_plane_the_actor_is_checked_and_recorded_nowhere() -> None:
    registry = host_registry()
    events: list[ToolsChangedEvent] = []
    registry.on_change(events.append)
    registry.set_status("echo", "1.0.0", ToolStatus.DEPRECATED, actor="alice")
    pin = registry.pin("echo", "1.1.0", tenant_id="acme", actor="alice")
    assert registry.unpin("echo", tenant_id="acme", actor="bob") is True
    pin.dispose()  # removed already: nothing happens
    registry.add_kill_switch(KillSwitch("leak", switch_id="k"), actor="alice")
    assert registry.remove_kill_switch("k", actor="bob") is True and registry.remove_kill_switch("k") is False
    assert [(e.change, e.control) for e in events] == [("status", None), ("pin", None), ("pin", None)] + [("kill_switch", None)] * 2


def test_the_default_actor_is_user_at_host_and_always_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "@" in default_actor() and check_actor(default_actor()) == default_actor()
    monkeypatch.setenv("LOGNAME", "odd\nname\x1b")  # getpass reads the environment first
    assert default_actor().startswith("odd?name?@")
    monkeypatch.setenv("LOGNAME", "u" * 1000)
    assert len(default_actor()) == MAX_ACTOR_LENGTH
