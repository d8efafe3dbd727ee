"""What a model and a host see of a failed outcome, the same in every framework adapter.

The model sees the failure as the projections show it on an API with no error
flag: its model-facing content (the message, or what a content hook made of
it: a redaction stays a redaction) led by the outcome's
:attr:`~tether_clr.ToolExecutionOutcome.failure_marker`: ``Error [DENIED]:
<message>``, or ``Error [DENIED/<reason>]: <message>`` when the pipeline gave a
machine-readable reason, so the code comes first and the reason stays readable.
The host reads the same facts as fields: :class:`GovernedFailure` (code,
reason, message, call id, tool name, and the text the model was shown), from
:func:`failure_of`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether_clr.records.content import TextPart
from tether_clr.records.outcomes import ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.wire import failure_marked

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
    text: str


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
    marked = failure_marked(outcome.content, outcome.failure_marker)
    text = "\n".join(part.text for part in marked if isinstance(part, TextPart))
    return GovernedFailure(outcome.call_id, outcome.name, failure.code, failure.reason, failure.message, text)


def failure_text(outcome: ToolExecutionOutcome) -> str:
    """The text the model is shown of a failed ``outcome`` (see the module docstring); ``ValueError`` for a success."""
    found = failure_of(outcome)
    if found is None:
        raise ValueError(f"call {outcome.call_id!r} succeeded: it has no failure text")
    return found.text
