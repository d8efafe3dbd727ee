"""Additional contexts: text a post-execute listener adds for the model, and the list a batch returns.

A post-execute listener may add model-facing context to a call ("the file
changed since you read it"): ``ToolPostDecision.accept(add_context=...)``. The
contexts of a batch form a FIFO in the model order of their calls, are handed
to the host with the outcomes (:class:`BatchOutcomes`, or
``BatchSuspended.additional_contexts``) and are recorded by the session log as
``user/message`` events after the step's last ``tool/result``, so the model
sees the results first. Child calls never add any.

Floor 2 (records).
"""

from __future__ import annotations

from collections.abc import Iterable

from tether_clr.foundations.text import is_valid_text
from tether_clr.records.outcomes import ToolExecutionOutcome

__all__ = ["BatchOutcomes", "check_context", "checked_contexts"]


def check_context(text: object) -> str:
    """``text`` when it is a non-empty string of valid Unicode; ``TypeError`` / ``ValueError`` otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"an additional context is a str, got {type(text).__name__}")
    if not text.strip() or not is_valid_text(text):
        raise ValueError("an additional context is non-empty, valid Unicode text")
    return text


def checked_contexts(contexts: object) -> tuple[str, ...]:
    """``contexts`` when it is a tuple of :func:`check_context` texts (a decision's, however it was built)."""
    if not isinstance(contexts, tuple):
        raise TypeError(f"contexts is a tuple of str, got {type(contexts).__name__}")
    for text in contexts:
        check_context(text)
    return contexts


class BatchOutcomes(list[ToolExecutionOutcome]):
    """What ``execute_batch`` returns: the outcomes in model order (a plain ``list`` in every way),
    and ``additional_contexts``, the texts post-execute listeners added, in the model order of their calls."""

    __slots__ = ("additional_contexts",)

    def __init__(self, outcomes: Iterable[ToolExecutionOutcome] = (), additional_contexts: Iterable[str] = ()) -> None:
        super().__init__(outcomes)
        self.additional_contexts: tuple[str, ...] = tuple(additional_contexts)

    def __repr__(self) -> str:
        return f"BatchOutcomes({list.__repr__(self)}, additional_contexts={self.additional_contexts!r})"
