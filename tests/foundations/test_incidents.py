"""IncidentLog: an infrastructure incident is logged once, summed up at most once per interval, and closed once."""

from __future__ import annotations

import logging

import pytest

from tether_clr.foundations.incidents import IncidentLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "tests.incidents"]


def test_a_thousand_failures_in_one_interval_log_one_line_with_one_traceback(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    incidents = IncidentLog(logging.getLogger("tests.incidents"), "session log unavailable", interval=30, clock=clock)
    with caplog.at_level(logging.DEBUG, logger="tests.incidents"):
        for _ in range(1000):
            incidents.failed(ConnectionError("server closed the connection"))
    (line,) = records(caplog)
    assert line.levelno == logging.ERROR and line.exc_info is not None
    assert "session log unavailable: ConnectionError: server closed the connection" in line.getMessage()
    assert incidents.open


def test_failures_that_go_on_are_summed_up_once_per_interval_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    incidents = IncidentLog(logging.getLogger("tests.incidents"), "log", interval=30, clock=clock)
    with caplog.at_level(logging.DEBUG, logger="tests.incidents"):
        for second in range(95):
            clock.now = 100.0 + second
            incidents.failed(OSError("down"))
    first, *summaries = records(caplog)
    assert len(summaries) == 3  # at 30 s, 60 s and 90 s
    assert all(line.levelno == logging.WARNING and line.exc_info is None for line in summaries)
    assert "30 more failure(s)" in summaries[0].getMessage()


def test_a_success_closes_the_incident_with_one_line_and_the_next_failure_opens_a_new_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    incidents = IncidentLog(logging.getLogger("tests.incidents"), "log", interval=30, clock=clock)
    with caplog.at_level(logging.DEBUG, logger="tests.incidents"):
        incidents.recovered()  # nothing open: nothing logged
        incidents.failed(OSError("down"))
        incidents.failed(OSError("down"))
        clock.now += 2.5
        incidents.recovered()
        incidents.recovered()
        incidents.failed(OSError("down again"))
    lines = [line.getMessage() for line in records(caplog)]
    assert len(lines) == 3
    assert lines[1] == "log: recovered after 2 failure(s) over 2.5s"
    assert "down again" in lines[2] and incidents.open


def test_a_hostile_message_is_cut_to_a_bounded_length(caplog: pytest.LogCaptureFixture) -> None:
    incidents = IncidentLog(logging.getLogger("tests.incidents"), "log")
    with caplog.at_level(logging.DEBUG, logger="tests.incidents"):
        incidents.failed(ValueError("x" * 1_000_000))
    (line,) = records(caplog)
    assert len(line.getMessage()) < 700


@pytest.mark.parametrize("interval", [0, -1, float("nan"), True, "30"])
def test_the_interval_must_be_a_positive_number(interval: object) -> None:
    with pytest.raises(ValueError, match="interval"):
        IncidentLog(logging.getLogger("tests.incidents"), "log", interval=interval)  # type: ignore[arg-type]


def test_a_library_line_repeated_through_an_outage_passes_once_per_interval_saying_how_many_were_dropped() -> None:
    from tether_clr.foundations.incidents import RateLimitFilter

    clock = Clock()
    limiter = RateLimitFilter(interval=30, clock=clock)

    def line(template: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("psycopg.pool", logging.WARNING, __file__, 1, template, args, None)

    passed = []
    for second in range(65):
        clock.now = 100.0 + second
        record = line("error connecting in %r: %s", "pool", "connection refused")
        if limiter.filter(record):
            passed.append(record.getMessage())
    other = line("reconnection attempt in pool %r failed after %s sec", "pool", 2.0)
    assert limiter.filter(other)  # another template has its own allowance
    assert passed[0] == "error connecting in 'pool': connection refused"
    assert passed[1:] == ["error connecting in 'pool': connection refused [29 more like this in the last 30s]"] * 2


def test_rate_limiting_a_logger_twice_adds_one_filter() -> None:
    from tether_clr.foundations.incidents import RateLimitFilter, rate_limit_logger

    rate_limit_logger("tests.incidents.limited")
    rate_limit_logger("tests.incidents.limited")
    filters = logging.getLogger("tests.incidents.limited").filters
    assert sum(isinstance(f, RateLimitFilter) for f in filters) == 1


def test_failures_interleaved_with_successes_stay_one_incident_until_it_settles(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    incidents = IncidentLog(logging.getLogger("tests.incidents"), "calls", interval=30, settle=10, clock=clock)
    with caplog.at_level(logging.DEBUG, logger="tests.incidents"):
        for second in range(20):  # one client failing every second among others' successes
            clock.now = 100.0 + second
            incidents.failed(OSError("refused"))
            incidents.recovered()
        assert incidents.open
        clock.now += 10
        incidents.recovered()
    lines = [line.getMessage() for line in records(caplog)]
    assert len(lines) == 2 and sum(line.exc_info is not None for line in records(caplog)) == 1
    assert lines[1] == "calls: recovered after 20 failure(s) over 29.0s" and not incidents.open
