"""One host process attached to a control store: ``python -m tests.support.control_host_child KIND SPEC MAX_STALENESS BACKEND``.

It registers ``echo`` 1.0.0 and 1.1.0 (:mod:`tests.support.control_hosts`),
attaches, prints ``{"ready": revision}``, then answers one JSON command per
line of stdin with one JSON line on stdout, until stdin closes:

* ``{"op": "snapshot"}``: assemble for tenant acme and keep it; ``{"id": n}``;
* ``{"op": "call", "snapshot": n | null}``: call ``echo`` against that snapshot
  (``null``: a fresh one), under BACKEND (asyncio or trio); ``{"ran": version}``
  or ``{"code", "reason"}``;
* ``{"op": "wait", "revision": n}``: wait (bounded) until it is applied; ``{"ok", "revision"}``;
* ``{"op": "wait_stale"}`` / ``{"op": "wait_fresh"}``: wait (bounded) for the view to go stale / fresh again;
* ``{"op": "set_status", "version", "status"}``, ``{"op": "pin", "version", "tenant"}``,
  ``{"op": "kill", "versions", "reason"}``: write through this host; ``{"revision"}``;
* ``{"op": "wipe", "session", "answer"}``: call ``wipe`` (it requires approval) in alice's session
  ``session``, recorded in the hosts' shared session log (:func:`~tests.support.control_hosts.session_location`);
  this host's approval provider answers ``answer``: ``"always"`` (an ``ApprovalGrant`` for the
  principal) or ``"reject"``; ``{"asked": n, "ran"...}`` or ``{"asked": n, "code", "reason"}``;
* ``{"op": "hang_in_commit", "version", "status"}``: commit a status change but stop inside its
  transaction, after the row is inserted and before the commit; prints ``{"inside": true}`` and
  waits to be SIGKILLed.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio

from tests.support.control_hosts import ACME, call_echo, call_wipe, host_registry, register_wipe, session_location
from tests.support.control_stores import open_control
from tests.support.doubles import Approver
from tests.support.session_stores import open_store
from tether_clr import ApprovalGrant, ApprovalResult, GrantScope, KillSwitch, SealedToolCatalogView, ToolStatus
from tether_clr.recording.session.sql_store import SqlSessionStore

WAIT = 15.0


def _print(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def main(kind: str, spec: str, max_staleness: float, backend: str) -> None:
    registry = host_registry()
    register_wipe(registry)
    session_store: SqlSessionStore | None = None
    store = open_control(kind, spec)
    attachment = registry.attach_control(store, max_staleness=max_staleness, actor=f"host-{backend}")
    snapshots: list[SealedToolCatalogView] = []
    _print({"ready": attachment.revision})
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "snapshot":
            snapshots.append(registry.assemble(ACME))
            _print({"id": len(snapshots) - 1})
        elif op == "call":
            chosen = command.get("snapshot")
            view = registry.assemble(ACME) if chosen is None else snapshots[chosen]
            _print(anyio.run(call_echo, registry, view, backend=backend))
        elif op == "wait":
            ok = attachment.wait_for_revision(command["revision"], WAIT)
            _print({"ok": ok, "revision": attachment.revision})
        elif op in ("wait_stale", "wait_fresh"):
            deadline = time.monotonic() + WAIT
            while attachment.stale is (op == "wait_fresh") and time.monotonic() < deadline:
                time.sleep(0.01)
            _print({"stale": attachment.stale, "revision": attachment.revision})
        elif op == "set_status":
            registry.set_status("echo", command["version"], ToolStatus(command["status"]), reason="test")
            _print({"revision": attachment.revision})
        elif op == "pin":
            registry.pin("echo", command["version"], tenant_id=command.get("tenant"), reason="test")
            _print({"revision": attachment.revision})
        elif op == "kill":
            registry.add_kill_switch(KillSwitch(command["reason"], logical_name="echo", versions=command["versions"]))
            _print({"revision": attachment.revision})
        elif op == "wipe":
            if session_store is None:
                session_store = open_store(kind, session_location(kind, spec))
            answer = ApprovalGrant.approve(GrantScope.PRINCIPAL) if command["answer"] == "always" else ApprovalResult.REJECTED
            approver = registry.approval = Approver(answer)
            ended = anyio.run(call_wipe, registry, session_store, command["session"], backend=backend)
            _print({"asked": len(approver.requests), **ended})
        elif op == "hang_in_commit":

            def inside(execute: Any, change: Any) -> None:
                _print({"inside": True})
                time.sleep(600)

            store._inserted = inside  # type: ignore[method-assign]
            registry.set_status("echo", command["version"], ToolStatus(command["status"]))
        else:
            _print({"error": f"unknown op {op!r}"})
    attachment.dispose()
    store.close()
    if session_store is not None:
        session_store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4])
