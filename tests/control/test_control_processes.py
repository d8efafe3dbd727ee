"""The control plane across real processes: host children (``tests.support.control_host_child``) on one store.

A disable, a pin and a kill switch made in one process apply in the others
(calls bound in older snapshots included); a writer SIGKILLed inside its
commit leaves nothing half-applied; a host whose network to PostgreSQL is cut
goes ``control_stale`` and recovers when it returns, and so does a host whose
SQLite file another process holds locked.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.control_hosts import session_location
from tests.support.control_stores import open_control
from tests.support.session_stores import open_store
from tests.support.socket_proxy import SocketProxy, postgres_upstream
from tests.support.sqlite_cutoff import SqliteCutOff
from tether_clr import ControlChange, ToolStatus

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0

pytestmark = pytest.mark.timeout(120)


class Host:
    """One child host process, driven one JSON command at a time."""

    def __init__(self, kind: str, spec: str, max_staleness: float = 1.0, backend: str = "asyncio") -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.control_host_child", kind, spec, str(max_staleness), backend],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        self.ready = self.read()["ready"]

    def read(self) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        found, _, _ = select.select([stdout], [], [], WAIT)
        line = stdout.readline() if found else ""
        if not line:
            self.process.kill()
            raise AssertionError(f"host said nothing within {WAIT} s: {self.process.stderr.read() if self.process.stderr else ''}")
        return dict(json.loads(line))

    def send(self, **command: Any) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()

    def ask(self, **command: Any) -> dict[str, Any]:
        self.send(**command)
        return self.read()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def hosts(kind: str, spec: str) -> Iterator[Any]:
    started: list[Host] = []

    def start(count: int, **options: Any) -> list[Host]:
        new = [Host(kind, spec, **options) for _ in range(count)]
        started.extend(new)
        return new

    yield start
    for host in started:
        host.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_disable_in_one_process_is_refused_in_the_others_including_a_call_bound_in_an_old_snapshot(
    hosts: Any, backend: str
) -> None:
    writer, *readers = hosts(3, backend=backend)
    snapshots = [reader.ask(op="snapshot")["id"] for reader in readers]
    for reader, snapshot in zip(readers, snapshots):
        assert reader.ask(op="call", snapshot=snapshot) == {"ran": "1.1.0"}
    assert writer.ask(op="set_status", version="1.1.0", status="disabled") == {"revision": 1}
    assert writer.ask(op="call", snapshot=None) == {"ran": "1.0.0"}
    for reader, snapshot in zip(readers, snapshots):
        assert reader.ask(op="wait", revision=1) == {"ok": True, "revision": 1}
        assert reader.ask(op="call", snapshot=snapshot) == {"code": "DENIED", "reason": "tool_disabled"}
        assert reader.ask(op="call", snapshot=None) == {"ran": "1.0.0"}


def test_a_pin_and_a_kill_switch_made_in_one_process_apply_in_every_other(hosts: Any) -> None:
    writer, *readers = hosts(3)
    assert writer.ask(op="pin", version="1.0.0", tenant="acme") == {"revision": 1}
    for reader in readers:
        assert reader.ask(op="wait", revision=1)["ok"]
        assert reader.ask(op="call", snapshot=None) == {"ran": "1.0.0"}
    old = [reader.ask(op="snapshot")["id"] for reader in readers]
    assert writer.ask(op="kill", versions="<1.1.0", reason="bad build") == {"revision": 2}
    for reader, snapshot in zip(readers, old):
        assert reader.ask(op="wait", revision=2)["ok"]
        assert reader.ask(op="call", snapshot=snapshot) == {"code": "DENIED", "reason": "kill_switch"}
        assert reader.ask(op="call", snapshot=None) == {"ran": "1.1.0"}  # the pinned version is killed: the next one


def test_an_approval_grant_given_on_one_host_decides_on_every_other_until_it_is_revoked_anywhere(
    hosts: Any, kind: str, spec: str
) -> None:
    """The grants of remembered approvals are shared through the session log's database, which every
    host of a deployment writes to (``--db``): no copy of them is kept in a host, so a revocation made
    anywhere holds for the next call everywhere."""
    giver, other = hosts(2)
    assert giver.ask(op="wipe", session="s-1", answer="always") == {"asked": 1, "ran": "wiped /tmp/x"}
    # another process, another session of alice: decided by the grant, its own provider (which would refuse) not asked
    assert other.ask(op="wipe", session="s-2", answer="reject") == {"asked": 0, "ran": "wiped /tmp/x"}

    async def revoke() -> None:
        with open_store(kind, session_location(kind, spec)) as store:  # an operator's connection
            [grant] = await store.grants(tenant_id="acme", principal_id="alice")
            assert (grant.session_id, grant.scope.value) == ("s-1", "principal")
            assert await store.revoke_grant(grant.grant_id, "incident 7") is True

    anyio.run(revoke)
    assert other.ask(op="wipe", session="s-2", answer="reject") == {"asked": 1, "code": "DENIED", "reason": None}
    assert giver.ask(op="wipe", session="s-1", answer="reject") == {"asked": 1, "code": "DENIED", "reason": None}
    assert giver.ask(op="wipe", session="s-3", answer="reject") == {"asked": 1, "code": "DENIED", "reason": None}


def test_a_writer_sigkilled_inside_its_commit_leaves_no_half_applied_change(hosts: Any, kind: str, spec: str) -> None:
    writer, reader = hosts(2)
    snapshot = reader.ask(op="snapshot")["id"]
    writer.send(op="hang_in_commit", version="1.1.0", status="disabled")
    assert writer.read() == {"inside": True}  # the row is inserted; the transaction is open
    writer.process.send_signal(signal.SIGKILL)
    assert writer.process.wait(timeout=WAIT) == -signal.SIGKILL
    with open_control(kind, spec) as store:
        assert store.changes(0) == []
        assert reader.ask(op="call", snapshot=snapshot) == {"ran": "1.1.0"}
        committed = store.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DEPRECATED, actor="op"))
        assert committed is not None and committed.revision == 1  # the dead writer's revision was rolled back with it
    assert reader.ask(op="wait", revision=1) == {"ok": True, "revision": 1}
    assert reader.ask(op="call", snapshot=snapshot) == {"ran": "1.1.0"}  # DEPRECATED still runs; DISABLED never applied


def test_a_host_cut_off_from_the_store_goes_control_stale_after_max_staleness_and_recovers_when_it_returns(
    kind: str, spec: str
) -> None:
    """PostgreSQL: its TCP connection runs through a proxy that is cut (a disable is committed meanwhile).
    SQLite: another process holds every WAL lock of the file, which cuts off every process, writers
    included, so the disable is committed after the locks are released."""
    cutter: SocketProxy | SqliteCutOff
    if kind == "postgres":
        from psycopg.conninfo import make_conninfo

        cutter = proxy = SocketProxy(postgres_upstream(spec))
        host = Host(kind, make_conninfo(spec, host="127.0.0.1", port=str(proxy.port)), max_staleness=0.3)
    else:
        cutter = SqliteCutOff(spec)
        host = Host(kind, spec, max_staleness=0.3)
    try:
        snapshot = host.ask(op="snapshot")["id"]
        assert host.ask(op="call", snapshot=snapshot) == {"ran": "1.1.0"}
        cutter.cut()
        assert host.ask(op="wait_stale") == {"stale": True, "revision": 0}
        assert host.ask(op="call", snapshot=snapshot) == {"code": "UNAVAILABLE", "reason": "control_stale"}
        assert host.ask(op="call", snapshot=None) == {"code": "UNAVAILABLE", "reason": "control_stale"}
        if kind == "postgres":  # meanwhile, elsewhere, the version is disabled
            with open_control(kind, spec) as store:
                store.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        cutter.restore()
        if kind == "sqlite":
            with open_control(kind, spec) as store:
                store.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        assert host.ask(op="wait", revision=1) == {"ok": True, "revision": 1}
        assert host.ask(op="wait_fresh")["stale"] is False
        assert host.ask(op="call", snapshot=snapshot) == {"code": "DENIED", "reason": "tool_disabled"}
        assert host.ask(op="call", snapshot=None) == {"ran": "1.0.0"}
    finally:
        host.close()
        cutter.close()
