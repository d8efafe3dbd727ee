"""The PostgreSQL stores survive their database: a real restart and a real stop of a private cluster
(``tests/support/pg_cluster.py``), a backend killed while its commit waits, a lost answer.

Bounds are configuration, never timed asserts: a store whose retry deadline is 2 s (``RetryPolicy(deadline=2)``)
that succeeds after the server is back recovered within 2 s; pytest-timeout catches anything that hangs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tether_clr.recording.session.encoding import PendingEvent
from tether_clr.recording.session.events import TURN_START
from tether_clr.recording.transient import RetryPolicy

from tests.support import call, echo_registry
from tests.support.control_hosts import call_echo, host_registry
from tests.support.pg_cluster import PgCluster
from tests.support.session_stores import new_session
from tether_clr import (
    ControlChange,
    PostgresCatalogControl,
    PostgresSessionStore,
    SinkError,
    StoreUnavailableError,
    ToolStatus,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.anyio]

BACK_WITHIN = RetryPolicy(deadline=2.0)  # the target: the next operation succeeds within 2 s of the server's return


@pytest.fixture
def dsn(pg_cluster: PgCluster) -> str:
    if not pg_cluster.running:
        pg_cluster.start()
    return pg_cluster.new_database()


@pytest.fixture
def store(dsn: str) -> Iterator[PostgresSessionStore]:
    with PostgresSessionStore(dsn, retry=BACK_WITHIN) as opened:
        yield opened


def _note(text: str) -> PendingEvent:
    return PendingEvent(1, None, "user/message", None, None, '{"text": "%s"}' % text)


async def test_a_store_serves_again_after_a_restart_without_being_reopened(
    store: PostgresSessionStore, pg_cluster: PgCluster
) -> None:
    session = new_session()
    assert await store.begin_turn(session) == 1
    pg_cluster.restart()  # every pooled connection is terminated
    assert await store.begin_turn(session) == 2  # within the 2 s deadline of the server's return
    assert [event.turn for event in await store.events(session) if event.kind == TURN_START] == [1, 2]


async def test_a_stopped_database_refuses_with_store_unavailable_a_fixed_message_and_its_cause(
    store: PostgresSessionStore, pg_cluster: PgCluster
) -> None:
    session = new_session()
    await store.begin_turn(session)
    with pg_cluster.stopped():
        with pytest.raises(StoreUnavailableError) as refused:
            await store.begin_turn(session)
        assert str(refused.value) == "the store cannot reach its database"
        assert refused.value.__cause__ is not None  # the driver's error, for the server's own log only
        with pytest.raises(StoreUnavailableError):
            await store.events(session)
    assert await store.begin_turn(session) == 2  # the refused turn was never written


async def test_while_the_log_cannot_be_written_no_body_runs(store: PostgresSessionStore, pg_cluster: PgCluster) -> None:
    ran: list[str] = []  # the bodies that ran
    registry = echo_registry(ran)
    session = new_session()
    turn = await store.begin_turn(session)
    with pg_cluster.stopped():
        with pytest.raises(SinkError) as refused:
            await registry.execute_batch([call("c1", "echo", {"text": "hi"})], registry.seal(), sink=store.sink(session, turn, 1))
        assert isinstance(refused.value.__cause__, StoreUnavailableError)
        assert "psycopg" not in str(refused.value) and "postgres" not in str(refused.value).lower()
    assert ran == []
    assert [event.kind for event in await store.events(session)] == [TURN_START]


async def test_a_commit_whose_answer_was_lost_is_read_back_and_never_written_twice(store: PostgresSessionStore) -> None:
    import psycopg

    session = new_session()
    turn = await store.begin_turn(session)
    lost = [True]

    def lose_the_answer(db: Any) -> None:  # the commit is applied; its answer never reaches the client
        if lost[0]:
            lost[0] = False
            raise psycopg.OperationalError("server closed the connection unexpectedly (injected)")

    store._sent = lose_the_answer  # type: ignore[method-assign]
    holder = new_session()
    await store.append(session, holder, [_note("once")], first=True, release=True)
    assert lost == [False]
    notes = [event.payload for event in await store.events(session) if event.kind == "user/message"]
    assert notes == [{"text": "once"}] and turn == 1


async def test_a_backend_killed_while_its_commit_waits_is_resolved_without_a_duplicate(
    store: PostgresSessionStore, pg_cluster: PgCluster, dsn: str
) -> None:
    """A real kill (pg_terminate_backend) of the connection whose autocommit append is in flight, blocked
    on the lease row another transaction holds: the store reads back, finds nothing applied, and appends once."""
    import psycopg

    session, holder = new_session(), new_session()
    await store.begin_turn(session)
    await store.append(session, holder, [_note("first")], first=True, release=False)
    with psycopg.connect(dsn, autocommit=True) as blocker, psycopg.connect(dsn, autocommit=True) as admin:
        blocker.execute("BEGIN")
        blocker.execute("SELECT 1 FROM session_leases WHERE session_id = %s FOR UPDATE", (session,))
        killed = threading.Event()

        def kill_the_waiting_append() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                rows = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%tether_session_append%'"
                ).fetchall()
                if rows:
                    admin.execute("SELECT pg_terminate_backend(%s)", (rows[0][0],))
                    blocker.execute("ROLLBACK")  # the retry then runs unblocked
                    killed.set()
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_the_waiting_append)
        killer.start()
        await store.append(session, holder, [_note("second")], first=False, release=True)
        killer.join()
    assert killed.is_set()
    notes = [event.payload["text"] for event in await store.events(session) if event.kind == "user/message"]
    assert notes == ["first", "second"]


async def test_concurrent_sessions_write_on_distinct_connections(dsn: str) -> None:
    """Eight sessions' commits each reach the end of their commit holding their connection, all at once
    (a barrier that only opens when all eight are there: one shared connection or lock would never open it)."""
    writers = 8
    with PostgresSessionStore(dsn, max_connections=writers) as store:
        barrier = threading.Barrier(writers, timeout=30)
        connections: set[int] = set()

        def meet(db: Any) -> None:
            connections.add(id(db))
            barrier.wait()

        sessions = [new_session() for _ in range(writers)]
        for session in sessions:
            await store.begin_turn(session)
        store._sent = meet  # type: ignore[method-assign]

        async def write(session: str) -> None:
            await store.append(session, new_session(), [_note(session)], first=True, release=True)

        async with anyio.create_task_group() as group:
            for session in sessions:
                group.start_soon(write, session)
        assert len(connections) == writers
        assert store.pool.get_stats()["pool_max"] == writers


async def test_the_control_store_and_its_feed_recover_after_a_restart(dsn: str, pg_cluster: PgCluster) -> None:
    registry = host_registry()
    with PostgresCatalogControl(dsn, retry=BACK_WITHIN) as control, registry.attach_control(
        control, max_staleness=1.0, actor="op"
    ) as attachment:
        view = registry.seal()
        assert await call_echo(registry, view) == {"ran": "1.1.0"}
        pg_cluster.restart()
        committed = control.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        assert committed is not None and committed.revision == 1
        assert attachment.wait_for_revision(1, 30)  # the feed was replaced
        assert attachment.wait_until_fresh(30)
        assert await call_echo(registry, view) == {"code": "DENIED", "reason": "tool_disabled"}
        assert control.changes(0)[0].revision == 1


async def test_a_control_commit_whose_answer_was_lost_is_read_back_and_never_committed_twice(dsn: str) -> None:
    import psycopg

    with PostgresCatalogControl(dsn) as control:
        original = control._transaction
        lost = [True]

        def losing_transaction() -> Any:  # the commit is applied; its answer is lost on the way back
            from contextlib import contextmanager

            @contextmanager
            def wrapped() -> Iterator[Any]:
                with original() as execute:
                    yield execute
                if lost[0]:
                    lost[0] = False
                    from tether_clr.recording.transient import OutcomeUnknown

                    raise OutcomeUnknown("injected") from psycopg.OperationalError("connection lost (injected)")

            return wrapped()

        control._transaction = losing_transaction  # type: ignore[method-assign]
        committed = control.commit(ControlChange.status("echo", "1.1.0", ToolStatus.DISABLED, actor="op"))
        assert committed is not None and committed.revision == 1
        assert [change.revision for change in control.changes(0)] == [1]
