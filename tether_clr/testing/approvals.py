"""Scripted approvals: an approval provider that answers from a script and records every question.

``ScriptedApprovals({"c1": "approved", "delete": "rejected"})`` answers by call
id first, then by tool name; ``ScriptedApprovals(["approved", "deferred"])``
answers the questions in the order they are asked. An answer is an
:class:`~tether_clr.ApprovalResult`, an :class:`~tether_clr.ApprovalGrant`, or
one of the words of :data:`ANSWER_WORDS` (``"approved"``, ``"rejected"``,
``"unavailable"``, ``"deferred"``, ``"always"``, ``"never"``, ...). A question
the script does not answer gets ``default`` (``REJECTED``: a test kit fails
closed too) and is recorded as unscripted, so a test can say no unexpected
question was asked (:meth:`ScriptedApprovals.unscripted`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import ApprovalGrant, GrantScope
from tether_clr.records.outcomes import ToolExecution

__all__ = ["ANSWER_WORDS", "Answer", "ApprovalQuestion", "ScriptedApprovals", "answer_of"]

Answer: TypeAlias = ApprovalResult | ApprovalGrant | str

ANSWER_WORDS: Mapping[str, ApprovalResult | ApprovalGrant] = {
    "approved": ApprovalResult.APPROVED,
    "rejected": ApprovalResult.REJECTED,
    "unavailable": ApprovalResult.UNAVAILABLE,
    "deferred": ApprovalResult.DEFERRED,
    "always": ApprovalResult.APPROVED_ALWAYS,
    "approved_always": ApprovalResult.APPROVED_ALWAYS,
    "never": ApprovalResult.REJECTED_ALWAYS,
    "rejected_always": ApprovalResult.REJECTED_ALWAYS,
    "always_for_principal": ApprovalGrant.approve(GrantScope.PRINCIPAL),
    "never_for_principal": ApprovalGrant.reject(GrantScope.PRINCIPAL),
}
"""The words a script may use for an answer (``always``: approved, remembered for the session; ``never``: rejected, remembered)."""


def answer_of(answer: Answer) -> ApprovalResult | ApprovalGrant:
    """The provider's answer a script entry stands for; ``ValueError`` for an unknown word or type."""
    if isinstance(answer, ApprovalResult | ApprovalGrant):
        return answer
    if isinstance(answer, str) and answer.lower() in ANSWER_WORDS:
        return ANSWER_WORDS[answer.lower()]
    raise ValueError(f"not an approval answer: {answer!r} (an ApprovalResult, an ApprovalGrant, or one of {sorted(ANSWER_WORDS)})")


@dataclass(frozen=True, slots=True)
class ApprovalQuestion:
    """One question the provider was asked, and what it answered (``scripted`` False: ``default`` answered)."""

    call_id: str
    name: str
    arguments: Any
    reason: str | None
    answer: ApprovalResult | ApprovalGrant
    scripted: bool


class ScriptedApprovals:
    """An :class:`~tether_clr.ApprovalProvider` answering from a mapping (call id, then tool name) or a sequence.

    ``questions`` records every question in the order asked; ``asked`` their call ids.
    """

    def __init__(
        self,
        answers: Mapping[str, Answer] | Sequence[Answer] | None = None,
        *,
        default: Answer = ApprovalResult.REJECTED,
    ) -> None:
        self.default = answer_of(default)
        self.questions: list[ApprovalQuestion] = []
        self._by_key: dict[str, ApprovalResult | ApprovalGrant] = {}
        self._queue: list[ApprovalResult | ApprovalGrant] = []
        self.script(answers)

    def script(self, answers: Mapping[str, Answer] | Sequence[Answer] | None) -> ScriptedApprovals:
        """Replace the script (a mapping or a sequence of answers); returns the provider, for chaining."""
        if isinstance(answers, str):
            raise TypeError("a script is a mapping or a sequence of answers, not one string")
        self._by_key = {} if not isinstance(answers, Mapping) else {str(k): answer_of(v) for k, v in answers.items()}
        self._queue = [] if answers is None or isinstance(answers, Mapping) else [answer_of(a) for a in answers]
        return self

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult | ApprovalGrant:
        scripted = True
        if execution.call_id in self._by_key:
            answer = self._by_key[execution.call_id]
        elif execution.name in self._by_key:
            answer = self._by_key[execution.name]
        elif self._queue:
            answer = self._queue.pop(0)
        else:
            answer, scripted = self.default, False
        self.questions.append(ApprovalQuestion(execution.call_id, execution.name, execution.arguments, reason, answer, scripted))
        return answer

    @property
    def asked(self) -> list[str]:
        """The call ids of the questions, in the order asked."""
        return [question.call_id for question in self.questions]

    def unscripted(self) -> list[ApprovalQuestion]:
        """The questions the script had no answer for (``default`` answered them)."""
        return [question for question in self.questions if not question.scripted]

    @property
    def remaining(self) -> int:
        """Answers of a sequence script not used yet."""
        return len(self._queue)
