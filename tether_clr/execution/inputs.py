"""What a batch checks of its caller's inputs before anything runs: misuse by the host is raised, never an outcome."""

from __future__ import annotations

from collections.abc import Sequence

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.pool import Slot
from tether_clr.foundations.arguments import ArgumentLimits, InvalidArgumentsJson, read_arguments
from tether_clr.records.outcomes import ToolCall

__all__ = ["proposal", "validate_batch"]


def validate_batch(calls: list[ToolCall], view: SealedToolCatalogView, max_parallelism: int) -> None:
    """Misuse by the caller (not by the model) is a programming error, raised before anything runs."""
    if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int) or max_parallelism < 1:
        raise ValueError(f"max_parallelism must be a positive int, got {max_parallelism!r}")
    if not isinstance(view, SealedToolCatalogView):
        raise TypeError(f"execute_batch needs a sealed view or an assembly, got {type(view).__name__}")
    for call in calls:
        if not isinstance(call, ToolCall):
            raise TypeError(f"execute_batch takes ToolCall records, got {type(call).__name__}")
        _check_call_fields(call)
        if call.scope is not None and call.scope is not view.scope:
            raise ValueError(
                f"call {call.call_id!r} comes from scope {call.scope!r} but the view was sealed for {view.scope!r}"
            )


_TEXT_FIELDS = ("call_id", "name", "arguments")
_OPTIONAL_TEXT_FIELDS = ("parent_call_id", "argument_error")


def _check_call_fields(call: ToolCall) -> None:
    """A ToolCall's text fields are text: the host builds the record, so a dict or a list there is
    the host's bug (raised now), never something a sink or classifier should meet mid-batch."""
    if (  # the usual call, checked in one expression
        type(call.call_id) is str and type(call.name) is str and type(call.arguments) is str
        and call.parent_call_id is None and call.argument_error is None
    ):
        return
    for name in _TEXT_FIELDS:
        if not isinstance(getattr(call, name), str):
            raise TypeError(f"ToolCall.{name} must be str, got {type(getattr(call, name)).__name__}")
    for name in _OPTIONAL_TEXT_FIELDS:
        value = getattr(call, name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"ToolCall.{name} must be str or None, got {type(value).__name__}")


def proposal(groups: Sequence[Sequence[Slot]], limits: ArgumentLimits) -> list[ToolCall]:
    """The calls as ``batch_started`` is told them, in model order: each one whose arguments will be
    refused before they parse in its :meth:`~tether_clr.ToolCall.with_arguments_refused` form (size,
    hash, a prefix of at most ``limits.max_logged_bytes``), never in full. Reads each call's arguments
    at most once; a parse that succeeds is kept in its slot for the call's stages (fresh, unseen)."""
    proposed: list[ToolCall] = []
    for slot in (slot for group in groups for slot in group):
        call = slot.call
        if call.argument_error is not None:
            call = call.with_arguments_refused(call.argument_error, limits.max_logged_bytes)
        elif slot.parsed is None and call.arguments_refused is None:
            try:
                slot.parsed = read_arguments(call.arguments, limits)
            except InvalidArgumentsJson as exc:
                call = call.with_arguments_refused(str(exc), limits.max_logged_bytes)
        proposed.append(call)
    return proposed
