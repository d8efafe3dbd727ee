"""Resolution, the first stage: the call's arguments read once, its tool resolved in the batch's view, its
arguments checked against the schema the model was shown. An early outcome means no dispatch. Floor 4."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether_clr.execution.stages import StageBase, fail
from tether_clr.foundations.arguments import InvalidArgumentsJson, ParsedArguments, read_arguments
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.json_values import canonical_json
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome, built_execution
from tether_clr.records.outcomes import ToolFailureCodes as Codes

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView

__all__ = ["Resolution"]


def _schema_not_loaded(execution: ToolExecution, entry: ToolEntry, view: SealedToolCatalogView) -> ToolExecutionOutcome:
    """INVALID_ARGS ``schema_not_loaded``: a deferred tool called before its schema was loaded, pointing to the search."""
    search = view.search_tool_name
    how = f"call {search!r} to find it and load its schema" if search is not None else "load its schema (with_loaded)"
    message = f"the schema of tool {entry.name!r} is not loaded in this request: {how}, then call it again"
    return fail(execution, Codes.INVALID_ARGS, message, "schema_not_loaded")

class Resolution(StageBase):
    """Builds a call's :class:`~tether_clr.ToolExecution` and resolves its tool (:meth:`begin`)."""

    __slots__ = ()

    def begin(
        self, call: ToolCall, token: CancellationToken, parsed: ParsedArguments | None = None
    ) -> tuple[ToolCall, ToolExecution, ToolEntry | None, dict[str, Any] | None, ToolExecutionOutcome | None]:
        """Build the execution and resolve the tool; an early outcome means no dispatch.

        Returns ``(declared, execution, entry, fresh, early)``. ``fresh``, when there is no early outcome,
        is the arguments object for the body's first attempt (:meth:`execute`'s ``arguments``): fresh
        from the parser and seen by no stage, so it is handed over instead of a copy; None with an early outcome.
        ``declared`` is the call as it is to be declared to the sink: ``call`` itself, or,
        when its text is not valid Unicode, its :meth:`ToolCall.recordable` copy,
        which the execution and the outcome then carry too (refused INVALID_ARGS); arguments refused before they
        parse: its :meth:`ToolCall.with_arguments_refused` form, whose bounded prefix the execution carries too.
        A ``null`` a strict-mode model sent for an optional property whose schema
        refuses null is read as absent (:meth:`ArgumentValidator.admit
        <tether_clr.foundations.validation.ArgumentValidator.admit>`): the
        execution then carries the arguments without those keys, while the
        declared call keeps the model's raw text.
        ``parsed``, when given, must be ``read_arguments(call.arguments,
        view.argument_limits)``, fresh and seen by no one else; it saves reading them again.
        """
        raw, invalid = call.arguments, call.invalid_text_fields()  # raw: a lone surrogate there refuses the text
        call = call.recordable() if invalid else call
        scope = call.scope if call.scope is not None else self._view.scope
        parse_error: str | None = call.argument_error
        arguments: Any = None
        try:
            if parse_error is not None:  # the client could not parse the model's text: never run it
                raise InvalidArgumentsJson(parse_error)
            if parsed is None or invalid:
                parsed = read_arguments(raw, self._view.argument_limits)
            arguments, arguments_json = parsed.value, parsed.json
        except InvalidArgumentsJson as exc:
            parse_error = str(exc)
            call = replace(call, arguments=raw).with_arguments_refused(parse_error, self._view.argument_limits.max_logged_bytes)
            arguments_json = canonical_json(call.arguments)
        execution = built_execution(
            call.call_id, call.name, arguments_json, scope, token, None if scope is None else scope.owner,
            call.parent_call_id, call.invocation_context, self._view.context,
        )
        if invalid:
            fields = " and ".join(invalid)
            return call, execution, None, None, fail(
                execution, Codes.INVALID_ARGS, f"the call's {fields} is not valid Unicode text (a lone surrogate)"
            )
        entry = self._view.resolve(call.name)
        if entry is None:
            return call, execution, None, None, fail(execution, Codes.UNKNOWN_TOOL, f"no tool named {call.name!r} is visible in this scope")
        unloaded = self._unloaded
        if unloaded and entry.name in unloaded:  # deferred, schema not loaded: the model never saw the parameters
            return call, execution, entry, None, _schema_not_loaded(execution, entry, self._view)
        if parse_error is not None:
            return call, execution, entry, None, fail(execution, Codes.INVALID_ARGS, parse_error)
        admitted, schema_error = entry.validator.admit(arguments)
        if schema_error is not None:
            return call, execution, entry, None, fail(execution, Codes.INVALID_ARGS, f"arguments do not match the schema of {call.name!r}: {schema_error}")
        if admitted is not arguments:  # strict-mode nulls read as absent: the body and approvers see the cleaned arguments
            execution = replace(execution, arguments_json=canonical_json(admitted))
        # The arguments object itself goes to the body (its first attempt): fresh from the parser, seen only by
        # the schema check, so the body needs no copy of its own (every other stage reads a detached copy).
        return call, execution, entry, admitted, None
