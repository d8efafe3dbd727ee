"""Kill-and-repair on both stores: a child process running a batch SIGKILLs itself at a
seeded random point; the parent repairs the session and checks the log's invariants
(every tool/call has exactly one tool/result, results in model order, no result
without a call, every step and turn closed), with call ids reused across steps."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import SessionLeasedError, log_violations

from tests.support import ROOT
from tests.support.session_child import kill_point
from tests.support.session_stores import new_session, open_store

SEEDS = [*range(10), 42, 43]  # 42, 43: killed in the retried call's second attempt (step 1, step 2)


async def _repair_once_the_lease_runs_out(store: SqlSessionStore, session: str) -> int:
    """The child held the lease (0.3 s) when it died: repair is refused until it runs out, then runs."""
    with anyio.fail_after(30):
        while True:
            try:
                return await store.repair(session)
            except SessionLeasedError:
                await anyio.sleep(0.05)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_writer_killed_at_a_random_point_is_repaired_into_a_sound_log(kind: str, seed: int, spec: str) -> None:
    session = new_session()
    backend = "trio" if seed % 2 else "asyncio"
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.session_child", kind, spec, session, str(seed), backend],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.returncode == -9, f"kill point {kill_point(seed)} not reached: rc={child.returncode}\n{child.stderr}"

    async def check() -> None:
        with open_store(kind, spec) as store:
            before = await store.events(session)
            if kill_point(seed)[0::2] == ("body", 5):  # in the retried call's second attempt: the first is durable
                assert [e.payload["attempt"] for e in before if e.kind == "tool/attempt"][-1:] == [1]
            await _repair_once_the_lease_runs_out(store, session)
            events = await store.events(session)
            assert events[: len(before)] == before  # repair only appends
            assert log_violations(events) == []
            # Whatever the batch recorded before dying stays as it was; the rest is synthesized.
            for event in events[len(before):]:
                if event.kind == "tool/result":
                    assert event.payload["code"] in ("ABORTED", "ABORTED_BEFORE_DISPATCH")
                    assert event.payload["reason"] == "interrupted"
            assert await store.repair(session) == 0
            assert await store.events(session) == events

    anyio.run(check)


def test_a_resumer_killed_in_the_approved_body_is_repaired_and_the_step_cannot_be_resumed_twice(kind: str, spec: str) -> None:
    """Parked in one process, approved in a second that dies inside the body: repair answers the
    approved call ABORTED (its body ran) and the calls after it, closes the step, and nothing is
    parked any more, so the decision can never run the body a second time."""
    session = new_session()

    def child(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tests.support.session_resume_child", kind, spec, session, mode],
            cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    parked = child("park")
    assert parked.returncode == 0, parked.stderr
    killed = child("resume")
    assert killed.returncode == -9, killed.stderr

    async def check() -> None:
        from tether_clr import ApprovalResult, ToolRegistry

        with open_store(kind, spec) as store:
            await _repair_once_the_lease_runs_out(store, session)
            events = await store.events(session)
            assert log_violations(events) == []
            results = [(e.call_id, e.payload.get("code")) for e in events if e.kind == "tool/result"]
            assert results == [("call_0", None), ("call_1", "ABORTED"), ("call_2", "ABORTED")]
            decisions = [e.payload["decision"] for e in events if e.kind == "approval/decided"]
            assert decisions == ["deferred", "approved"]
            with pytest.raises(ValueError, match="no suspended step"):
                await ToolRegistry().resume(store, session, {"call_1": ApprovalResult.APPROVED})

    anyio.run(check)
