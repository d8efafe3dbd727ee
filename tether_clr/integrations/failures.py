"""What a model and a host see of a failed outcome, the same in every framework adapter.

The model sees one line of text that starts with the code, so it can tell a
refusal from a result: ``Error [DENIED]: <message>``, or, when the pipeline
gave a machine-readable reason, ``Error [DENIED/<reason>]: <message>``. The
first form is the one the OpenAI projections use (issue 29); the reason is
added after a slash so the code stays the first word inside the brackets. The
host reads the same facts as fields: :class:`GovernedFailure` (code, reason,
message, call id, tool name), from :func:`failure_of`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether_clr.records.outcomes import ToolExecutionOutcome, ToolFailureCodes

__all__ = ["GovernedFailure", "GovernedToolError", "failure_of", "failure_text"]


@dataclass(frozen=True, slots=True)
class GovernedFailure:
    """A failed call as a host reads it: ``code`` (one of the eight), ``reason`` (or None), ``message``;
    ``text`` is exactly what the model was shown (:func:`failure_text`)."""

    call_id: str
    name: str
    code: ToolFailureCodes
    reason: str | None
    message: str

    @property
    def text(self) -> str:
        tag = str(self.code) if self.reason is None else f"{self.code}/{self.reason}"
        return f"Error [{tag}]: {self.message}"


class GovernedToolError(Exception):
    """An adapter's exception for a failed governed call, for frameworks whose failed tool is an exception
    (``str(error)`` is :attr:`GovernedFailure.text`; ``error.failure`` the fields)."""

    def __init__(self, failure: GovernedFailure) -> None:
        super().__init__(failure.text)
        self.failure = failure


def failure_of(outcome: ToolExecutionOutcome) -> GovernedFailure | None:
    """The failure of ``outcome`` as fields, or None for a success."""
    failure = outcome.failure
    if failure is None:
        return None
    return GovernedFailure(outcome.call_id, outcome.name, failure.code, failure.reason, failure.message)


def failure_text(outcome: ToolExecutionOutcome) -> str:
    """``Error [CODE]: message`` or ``Error [CODE/reason]: message``; ``ValueError`` for a success."""
    found = failure_of(outcome)
    if found is None:
        raise ValueError(f"call {outcome.call_id!r} succeeded: it has no failure text")
    return found.text
