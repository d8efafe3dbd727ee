"""The shared control plane, two hosts in one process (each its own registry and store connection), on both stores.

The cross-process cases (real subprocesses, a SIGKILLed writer, a network cut)
are in ``test_control_processes.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tether_clr.control.sql import SqlCatalogControl

from tests.support.control_doubles import CutOff, FaultyControl
from tests.support.control_hosts import ACME, call_echo, host_registry
from tests.support.control_stores import attached_hosts, attachment_of, open_control
from tether_clr import (
    ControlChange,
    KillSwitch,
    RequestContext,
    ToolRegistry,
    ToolsChangedEvent,
    ToolStatus,
)

WAIT = 10.0  # the bound of every wait for another host's change; never reached when it works

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def hosts(kind: str, spec: str) -> Iterator[tuple[ToolRegistry, ToolRegistry]]:
    """Two hosts attached to the same fresh store."""
    with attached_hosts(kind, spec, ("tester", "tester")) as (first, second):
        yield first, second


_attached = attachment_of


def _caught_up(registry: ToolRegistry, other: ToolRegistry) -> None:
    assert _attached(registry).wait_for_revision(_attached(other).revision, WAIT)


def _wait_until(predicate: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not {what} within {WAIT} s"
        time.sleep(0.01)


@pytest.mark.anyio
async def test_a_disable_on_one_host_refuses_the_call_on_another_even_in_an_older_snapshot(
    hosts: tuple[ToolRegistry, ToolRegistry],
) -> None:
    writer, reader = hosts
    old = reader.assemble(ACME)
    assert await call_echo(reader, old) == {"ran": "1.1.0"}
    writer.set_status("echo", "1.1.0", ToolStatus.DISABLED, reason="incident 42")
    _caught_up(reader, writer)
    assert await call_echo(reader, old) == {"code": "DENIED", "reason": "tool_disabled"}
    assert await call_echo(reader, reader.seal()) == {"ran": "1.0.0"}  # a new view falls back to 1.0.0
    assert await call_echo(reader, reader.assemble(ACME)) == {"ran": "1.0.0"}
    writer.set_status("echo", "1.1.0", ToolStatus.ACTIVE, reason="fixed")
    _caught_up(reader, writer)
    assert await call_echo(reader, old) == {"ran": "1.1.0"}
    [disable, enable] = writer.control.control.changes(0)  # type: ignore[union-attr]
    assert (disable.actor, disable.reason, disable.data, disable.revision) == ("tester", "incident 42", {"status": "disabled"}, 1)
    assert (enable.reason, enable.revision) == ("fixed", 2) and enable.at is not None and enable.at >= (disable.at or 0)


@pytest.mark.anyio
async def test_a_pin_applies_on_every_host_and_unpinning_lifts_it_everywhere(hosts: tuple[ToolRegistry, ToolRegistry]) -> None:
    writer, reader = hosts
    pin = writer.pin("echo", "1.0.0", tenant_id="acme", reason="canary")
    _caught_up(reader, writer)
    for host in (writer, reader):
        assert await call_echo(host, host.assemble(ACME)) == {"ran": "1.0.0"}
        assert await call_echo(host, host.assemble(RequestContext("globex", "bob"))) == {"ran": "1.1.0"}
    pin.dispose()
    _caught_up(reader, writer)
    assert await call_echo(reader, reader.assemble(ACME)) == {"ran": "1.1.0"}
    assert [c.kind for c in _attached(reader).control.changes(0)] == ["pin", "unpin"]


@pytest.mark.anyio
async def test_a_kill_switch_refuses_matching_calls_on_every_host_until_it_is_lifted(
    hosts: tuple[ToolRegistry, ToolRegistry],
) -> None:
    writer, reader = hosts
    old = reader.assemble(ACME)
    other = reader.assemble(RequestContext("globex", "bob"))
    switch = writer.add_kill_switch(KillSwitch("data leak", logical_name="echo", versions=">=1.1.0", tenant_id="acme"))
    _caught_up(reader, writer)
    assert await call_echo(reader, old) == {"code": "DENIED", "reason": "kill_switch"}
    assert await call_echo(reader, other) == {"ran": "1.1.0"}  # another tenant: not matched
    assert await call_echo(reader, reader.seal()) == {"code": "DENIED", "reason": "kill_switch"}  # no tenant: fail closed
    fresh = reader.assemble(ACME)
    assert [(o.version, o.reason) for o in fresh.omitted if o.reason == "kill_switch"] == [("1.1.0", "kill_switch")]
    assert await call_echo(reader, fresh) == {"ran": "1.0.0"}
    switch.dispose()
    _caught_up(reader, writer)
    assert reader.kill_switches == ()
    assert await call_echo(reader, old) == {"ran": "1.1.0"}


@pytest.mark.anyio
async def test_metadata_changes_are_shared_as_data_and_code_is_refused(hosts: tuple[ToolRegistry, ToolRegistry]) -> None:
    writer, reader = hosts
    old = reader.assemble(ACME)
    writer.update_metadata("echo", "1.1.0", tenants={"globex"}, required_scopes={"echo:use"}, reason="lock down")
    _caught_up(reader, writer)
    assert await call_echo(reader, old) == {"code": "DENIED", "reason": "tenant_denied"}
    allowed = reader.discover(RequestContext("globex", "bob", scopes=frozenset({"echo:use"})))
    assert [(b.version) for b in allowed.tools] == ["1.1.0"]
    revision = _attached(writer).revision
    with pytest.raises(ValueError, match="enabled_when is code"):
        writer.update_metadata("echo", "1.1.0", enabled_when=lambda context: True)
    assert _attached(writer).revision == revision  # nothing committed


def test_a_write_is_committed_before_it_applies_and_a_failed_commit_changes_nothing(kind: str, spec: str) -> None:
    registry = host_registry()
    with open_control(kind, spec) as store:
        faulty = FaultyControl(store)
        with registry.attach_control(faulty, max_staleness=5.0) as attachment:
            revision = registry.revision
            faulty.cut.set()
            with pytest.raises(CutOff):
                registry.set_status("echo", "1.1.0", ToolStatus.DISABLED)
            with pytest.raises(CutOff):
                registry.add_kill_switch(KillSwitch("nope"))
            assert registry.seal().get_tool("echo") is not None and registry.revision == revision
            assert registry.kill_switches == () and attachment.revision == 0
            faulty.cut.clear()
            assert store.changes(0) == []


def test_the_store_checks_each_change_against_what_it_holds_in_the_same_transaction(control: SqlCatalogControl) -> None:
    def status(target: ToolStatus) -> ControlChange | None:
        return control.commit(ControlChange.status("echo", "1.0.0", target, actor="op"))

    assert status(ToolStatus.RETIRED) is not None
    with pytest.raises(ValueError, match="RETIRED version is final"):
        status(ToolStatus.ACTIVE)
    assert status(ToolStatus.RETIRED) is None  # the same status: no change, no revision
    with pytest.raises(ValueError, match="no pin"):
        control.commit(ControlChange.unpin("echo", "acme", actor="op"))
    with pytest.raises(ValueError, match="no live kill switch"):
        control.commit(ControlChange.unkill("ks-x", actor="op"))
    with pytest.raises(ValueError, match="not a metadata field"):
        control.commit(ControlChange.metadata("echo", "1.0.0", {"enabled_when": "x"}, actor="op"))
    switch = KillSwitch("why", switch_id="ks-1")
    assert control.commit(ControlChange.kill(switch, actor="op")) is not None
    with pytest.raises(ValueError, match="already set"):
        control.commit(ControlChange.kill(switch, actor="op"))
    assert [c.revision for c in control.changes(0)] == [1, 2]  # refused changes took no revision


@pytest.mark.anyio
async def test_a_host_cut_off_from_the_store_goes_control_stale_and_recovers_when_it_returns(kind: str, spec: str) -> None:
    registry = host_registry()
    with open_control(kind, spec) as store:
        faulty = FaultyControl(store)
        with registry.attach_control(faulty, max_staleness=0.2) as attachment:
            old = registry.assemble(ACME)
            assert await call_echo(registry, old) == {"ran": "1.1.0"}
            faulty.cut.set()
            _wait_until(lambda: attachment.stale, "stale")
            assert await call_echo(registry, old) == {"code": "UNAVAILABLE", "reason": "control_stale"}
            assert await call_echo(registry, registry.seal()) == {"code": "UNAVAILABLE", "reason": "control_stale"}
            with open_control(kind, spec) as writer:  # while it is cut off, another host disables the version
                writer.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
            faulty.cut.clear()
            assert attachment.wait_until_fresh(WAIT)
            assert attachment.revision == 1
            assert await call_echo(registry, old) == {"code": "DENIED", "reason": "tool_disabled"}
            assert await call_echo(registry, registry.assemble(ACME)) == {"ran": "1.0.0"}


def test_changes_apply_strictly_in_revision_order_when_notifications_are_lost_or_rows_come_out_of_order(
    kind: str, spec: str
) -> None:
    registry = host_registry()
    seen: list[int] = []
    with open_control(kind, spec) as store, open_control(kind, spec) as writer:
        faulty = FaultyControl(store)
        faulty.deaf, faulty.scramble = True, True
        apply = registry.catalog.apply_control_change

        def applied(change: ControlChange) -> object:
            seen.append(change.revision)
            return apply(change)

        registry.catalog.apply_control_change = applied  # type: ignore[method-assign,assignment]
        with registry.attach_control(faulty, max_staleness=2.0) as attachment:
            statuses = [ToolStatus.DISABLED, ToolStatus.ACTIVE] * 5
            for status in statuses:
                writer.commit(ControlChange.status("echo", "1.1.0", status, actor="op"))
            writer.commit(ControlChange.pin("echo", "1.0.0", actor="op"))
            assert attachment.wait_for_revision(len(statuses) + 1, WAIT)
            assert seen == list(range(1, len(statuses) + 2))  # one by one, none skipped or repeated
            assert registry.seal().resolve("echo") is not None
            assert registry.assemble(ACME).bindings["echo"].version == "1.0.0"


def test_each_applied_change_bumps_the_revision_and_emits_tools_change(hosts: tuple[ToolRegistry, ToolRegistry]) -> None:
    writer, reader = hosts
    events: list[ToolsChangedEvent] = []
    written: list[ToolsChangedEvent] = []
    reader.on_change(events.append)
    writer.on_change(written.append)
    before = reader.revision
    writer.set_status("echo", "1.0.0", ToolStatus.DEPRECATED, reason="superseded")
    writer.pin("echo", "1.1.0")
    writer.add_kill_switch(KillSwitch("test", principal_id="mallory"))
    _caught_up(reader, writer)
    # events are emitted by whichever thread applied the change, just after it applied it
    _wait_until(lambda: len(events) == 3 and len(written) == 3, "every event emitted on both hosts")
    assert [(e.method, e.change, e.name) for e in events] == [
        ("tools/change", "status", "echo"), ("tools/change", "pin", "echo"), ("tools/change", "kill_switch", ""),
    ]
    assert [e.revision for e in events] == [before + 1, before + 2, before + 3] and reader.revision == before + 3
    # every host can audit what it applied: the committed change, with its control revision, actor, time and reason
    for seen in (events, written):
        assert [e.control.revision if e.control else None for e in seen] == [1, 2, 3]
        assert all(e.control is not None and e.control.actor == "tester" and e.control.at is not None for e in seen)
        assert [e.control.reason if e.control else None for e in seen] == ["superseded", "", "test"]


def test_a_listener_that_changes_the_control_change_it_got_changes_nothing_the_host_holds(
    hosts: tuple[ToolRegistry, ToolRegistry],
) -> None:
    writer, reader = hosts
    events: list[ToolsChangedEvent] = []
    reader.on_change(events.append)
    writer.update_metadata("echo", "1.1.0", tenants={"acme"})
    _caught_up(reader, writer)
    _wait_until(lambda: len(events) == 1, "the event emitted")
    control = events[0].control
    assert control is not None and control.kind == "metadata"
    control.data["changes"]["tenants"].append("globex")  # a listener gone wrong
    attachment = _attached(reader)
    assert attachment.overlay("echo", "1.1.0")[1] == {"tenants": frozenset({"acme"})}
    assert attachment.state.latest[control.subject].data["changes"]["tenants"] == ["acme"]


def test_a_registry_without_a_control_plane_emits_changes_with_no_control_change() -> None:
    registry = host_registry()
    events: list[ToolsChangedEvent] = []
    registry.on_change(events.append)
    registry.set_status("echo", "1.0.0", ToolStatus.DEPRECATED)
    assert [(e.change, e.control) for e in events] == [("status", None)]


@pytest.mark.anyio
async def test_a_version_registered_after_attaching_takes_the_shared_status_and_metadata(kind: str, spec: str) -> None:
    with open_control(kind, spec) as store:
        store.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        store.commit(ControlChange.metadata("echo", "1.0.0", {"tenants": ["globex"]}, actor="op"))
        registry = ToolRegistry()
        with registry.attach_control(store, max_staleness=2.0):
            host_registry(registry)  # registered after attaching
            assert registry.discover(ACME).tools == ()
            assert await call_echo(registry, registry.seal()) == {"ran": "1.0.0"}
            assert await call_echo(registry, registry.assemble(RequestContext("globex", "g"))) == {"ran": "1.0.0"}


def test_postgres_notifications_with_false_or_reordered_payloads_change_nothing_but_latency(kind: str, spec: str) -> None:
    if kind != "postgres":
        pytest.skip("SQLite has no notifications")
    import psycopg
    from tether_clr.control.sql import CHANNEL

    registry = host_registry()
    with open_control(kind, spec) as store, registry.attach_control(store, max_staleness=2.0) as attachment:
        with psycopg.connect(spec, autocommit=True) as db:
            for payload in ("999", "3", "not a number", "1"):
                db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        store.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        assert attachment.wait_for_revision(1, WAIT)
        assert attachment.revision == 1 and not attachment.stale


def test_detaching_stops_following_and_writes_are_local_again(kind: str, spec: str) -> None:
    registry = host_registry()
    with open_control(kind, spec) as store:
        attachment = registry.attach_control(store, max_staleness=0.2)
        with pytest.raises(RuntimeError, match="already attached"):
            registry.attach_control(store)
        attachment.dispose()
        assert registry.control is None
        registry.set_status("echo", "1.1.0", ToolStatus.DISABLED)
        assert store.changes(0) == []
        with pytest.raises(ValueError, match="max_staleness"):
            registry.attach_control(store, max_staleness=0)
