"""run_with_retries: what is retried, what is read back instead of written twice, and failing fast during an incident."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from tether_clr import StoreUnavailableError
from tether_clr.foundations.incidents import IncidentLog
from tether_clr.recording.transient import Applied, OutcomeUnknown, RetryPolicy, is_transient, run_with_retries

POLICY = RetryPolicy(deadline=0.2, first_delay=0.001, max_delay=0.005)
LOCKED = sqlite3.OperationalError("database is locked")


class Flaky:
    """An action failing with the given exceptions in turn, then answering ``value``; counts its runs."""

    def __init__(self, *failures: BaseException, value: str = "done") -> None:
        self.failures, self.value, self.runs = list(failures), value, 0

    def __call__(self) -> str:
        self.runs += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.value


def incidents() -> IncidentLog:
    return IncidentLog(logging.getLogger("tests.transient"), "store")


def test_a_transient_fault_is_retried_until_the_action_succeeds_and_the_incident_closes() -> None:
    action, log = Flaky(LOCKED, LOCKED), incidents()
    assert run_with_retries(action, incidents=log, policy=POLICY, idempotent=True, sleep=lambda _: None) == "done"
    assert action.runs == 3 and not log.open


def test_a_fault_that_is_not_transient_is_raised_as_it_is_at_once() -> None:
    action = Flaky(ValueError("a constraint"))
    with pytest.raises(ValueError, match="a constraint"):
        run_with_retries(action, incidents=incidents(), policy=POLICY, idempotent=True)
    assert action.runs == 1


def test_past_the_deadline_the_caller_gets_store_unavailable_with_the_cause_and_an_open_incident() -> None:
    action, log = Flaky(*[LOCKED] * 10_000), incidents()
    with pytest.raises(StoreUnavailableError) as refused:
        run_with_retries(action, incidents=log, policy=POLICY, idempotent=True)
    assert str(refused.value) == "the store cannot reach its database" and refused.value.__cause__ is LOCKED
    assert action.runs > 1 and log.open


def test_while_an_incident_is_open_one_attempt_is_made_then_the_next_success_closes_it() -> None:
    log = incidents()
    log.failed(LOCKED)  # an earlier operation ran out of retries
    action = Flaky(*[LOCKED] * 10_000)
    with pytest.raises(StoreUnavailableError):
        run_with_retries(action, incidents=log, policy=RetryPolicy(deadline=60), idempotent=True)
    assert action.runs == 1  # failed fast, not after its own minute of retries
    assert run_with_retries(Flaky(), incidents=log, policy=POLICY, idempotent=True) == "done"
    assert not log.open


def test_a_commit_whose_outcome_is_unknown_is_read_back_and_not_run_again_when_it_was_applied() -> None:
    action = Flaky(OutcomeUnknown("lost while committing"))
    applied = run_with_retries(action, incidents=incidents(), policy=POLICY, read_back=lambda: Applied("from the log"),
                               sleep=lambda _: None)  # fmt: skip
    assert applied == "from the log" and action.runs == 1


def test_a_commit_whose_outcome_is_unknown_runs_again_only_when_the_read_back_finds_nothing() -> None:
    action = Flaky(OutcomeUnknown("lost while committing"))
    assert run_with_retries(action, incidents=incidents(), policy=POLICY, read_back=lambda: None, sleep=lambda _: None) == "done"
    assert action.runs == 2


def test_a_write_with_no_read_back_is_never_run_twice() -> None:
    action = Flaky(OutcomeUnknown("lost while committing"))
    with pytest.raises(StoreUnavailableError):
        run_with_retries(action, incidents=incidents(), policy=POLICY, sleep=lambda _: None)
    assert action.runs == 1


@pytest.mark.parametrize(
    ("fault", "transient"),
    [
        (sqlite3.OperationalError("database is locked"), True),
        (sqlite3.OperationalError("database table is busy"), True),
        (sqlite3.OperationalError("no such table: x"), False),
        (OutcomeUnknown("lost"), True),
        (ValueError("locked"), False),
        (RuntimeError("connection lost"), False),
    ],
)
def test_which_faults_are_transient(fault: BaseException, transient: bool) -> None:
    assert is_transient(fault) is transient


def test_an_unknown_outcome_is_read_back_even_while_failing_fast_in_an_incident() -> None:
    log = incidents()
    log.failed(LOCKED)
    reads: list[int] = []

    def read_back() -> Applied[str]:
        reads.append(1)
        return Applied("applied before the answer was lost")

    action = Flaky(OutcomeUnknown("lost while committing"))
    assert run_with_retries(action, incidents=log, policy=POLICY, read_back=read_back) == "applied before the answer was lost"
    assert action.runs == 1 and reads == [1]


class UniqueViolation(Exception):
    sqlstate = "23505"


def test_a_write_id_found_taken_after_a_lost_answer_is_read_back_not_written_again() -> None:
    """The lost commit landed after the first read-back looked (on another connection): running the write again
    collides with its own write id, and the store reads the result back instead."""
    answers: list[Applied[str] | None] = [None, Applied("landed late")]
    action = Flaky(OutcomeUnknown("lost while committing"), UniqueViolation("write id taken"))
    assert run_with_retries(action, incidents=incidents(), policy=POLICY, read_back=lambda: answers.pop(0),
                            sleep=lambda _: None) == "landed late"  # fmt: skip
    assert action.runs == 2 and answers == []


def test_a_unique_violation_that_is_not_a_lost_write_is_raised_as_it_is() -> None:
    action = Flaky(UniqueViolation("a real constraint"))
    with pytest.raises(UniqueViolation):
        run_with_retries(action, incidents=incidents(), policy=POLICY, read_back=lambda: Applied("never asked"))
    assert action.runs == 1
