"""The parity engine: one list of function calls run through Microsoft.Extensions.AI's own
``FunctionInvokingChatClient`` and through tether_clr, with the same ``AIFunction``s, compared call by call.

The public face is :mod:`tether_clr.testing.parity` (``assert_parity``) and ``tether-clr parity``;
this module lives in the .NET adapter so that both can use it without the command line importing
the test kit. See docs/csharp-tools.md (Parity) for the calls format and the deliberate differences.
The calls come in either of two formats: its own (``call_id``) or a ``tether-clr run`` script's rows
(``kind``, ``callId``), read by that command's own parser (:mod:`tether_clr.records.script`).

The MEAI side is ``bridge/parity/ScriptedChatClient.cs``, compiled at run time against the real
assemblies (``TETHER_MEAI_DIR`` or ``meai_dir=``): a scripted ``IChatClient`` answers the first
request with one call's ``FunctionCallContent`` and captures the ``FunctionResultContent`` the invoker
sends back in the next. Each call runs alone, on both sides, so an approval request or a cancelled
request touches exactly one call. Per call the comparison is: the ``CallId`` came back, the
``Result`` JSON (as MEAI serializes it, ``AIJsonUtilities.DefaultOptions``; tether_clr's through
:func:`~tether_clr.clr.to_clr_function_result`), and whether an ``Exception`` is present.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from tether_clr.clr.build import ClrBuildError, compile_library, source_root
from tether_clr.clr.functions import ClrFunction, discover_functions, find_meai_directories, load_assembly, wrap_aifunction
from tether_clr.clr.records import to_clr_function_result
from tether_clr.clr.runtime import ClrUnavailableError, load_runtime
from tether_clr.foundations.cancellation import CancellationSource
from tether_clr.foundations.json_values import canonical_json
from tether_clr.records.outcomes import ToolCall
from tether_clr.records.script import Script, ScriptError, parse_script
from tether_clr.registry import ToolRegistry

__all__ = [
    "DELIBERATE_DIFFERENCES",
    "CallComparison",
    "ParityCall",
    "ParityCallsError",
    "ParityReport",
    "SideResult",
    "build_parity_client",
    "load_parity_calls",
    "parse_parity_calls",
    "run_parity",
]

Category = Literal["approval", "parse_error", "unknown_arguments", "failure_text", "cancellation"]

#: Every deliberate difference, with the reason it exists (docs/csharp-tools.md (Parity) says the same at length).
DELIBERATE_DIFFERENCES: Mapping[str, str] = {
    "approval": "an approval-required function fails closed (DENIED) without an approval provider; "
    "FunctionInvokingChatClient hands a FunctionApprovalRequestContent back to the caller instead of a result",
    "parse_error": "argument text that does not parse ends INVALID_ARGS and the function never runs; "
    "FunctionInvokingChatClient invokes the function with no arguments",
    "unknown_arguments": "an argument name the schema does not list is refused (INVALID_ARGS) before the body; "
    "MEAI drops the name and runs the function",
    "failure_text": "a failed call's Result is {\"message\": ...} with Exception \"CODE: message\" (a stable code); "
    "MEAI's Result is its own error text (\"Error: Function failed.\", no Exception for an unknown function)",
    "cancellation": "a call whose request is already cancelled is not dispatched (ABORTED_BEFORE_DISPATCH); "
    "FunctionInvokingChatClient still invokes the function with the cancelled token: its body runs, or, "
    "when it observes the token, the whole request throws and the call gets no result",
}

_FIELDS = ("call_id", "result", "exception")


class ParityCallsError(ValueError):
    """A calls list (calls.json) that is neither a list of ``{call_id, name, arguments}`` objects nor
    a ``tether-clr run`` script with at least one tool row; the message names the entry or row."""


@dataclass(frozen=True, slots=True)
class ParityCall:
    """One function call as a model proposed it.

    ``arguments`` is the argument text exactly as the model wrote it (it may be malformed);
    ``cancelled`` runs the call with its request's cancellation already signalled.
    """

    call_id: str
    name: str
    arguments: str = "{}"
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class SideResult:
    """What one side handed back for a call: whether a result with the call's ``CallId`` exists,
    its ``Result`` as JSON, its ``Exception`` (``Type: message`` / ``CODE: message``) and a note
    (what happened instead of a result: an approval request, an exception the request threw)."""

    present: bool
    result: Any = None
    exception: str | None = None
    note: str | None = None
    code: str | None = None  # tether_clr's side: the failure code

    def cell(self) -> str:
        if not self.present:
            return f"(no result: {self.note})" if self.note else "(no result)"
        text = canonical_json(self.result)
        return text if self.exception is None else f"{text}  [exception {' '.join(self.exception.split())}]"


@dataclass(frozen=True, slots=True)
class CallComparison:
    """One call on both sides: ``fields`` lists what differs (``call_id``, ``result``, ``exception``);
    ``category`` names the deliberate difference that explains it (None: unexpected); ``accepted``
    is set when the caller's ``expected_differences`` lists the call."""

    call: ParityCall
    meai: SideResult
    tether: SideResult
    fields: tuple[str, ...]
    category: Category | None
    accepted: bool = False

    @property
    def differs(self) -> bool:
        return bool(self.fields)

    @property
    def unexpected(self) -> bool:
        return self.differs and self.category is None and not self.accepted

    @property
    def status(self) -> str:
        if not self.differs:
            return "same"
        if self.category is not None:
            return f"deliberate: {self.category}"
        return "accepted" if self.accepted else "UNEXPECTED"


@dataclass(frozen=True, slots=True)
class ParityReport:
    """Every call compared, in the calls' order; :meth:`render` is the report text."""

    comparisons: tuple[CallComparison, ...]
    runtime: str = ""
    stale_expectations: tuple[str, ...] = field(default=())

    @property
    def differences(self) -> tuple[CallComparison, ...]:
        return tuple(c for c in self.comparisons if c.differs)

    @property
    def unexpected(self) -> tuple[CallComparison, ...]:
        return tuple(c for c in self.comparisons if c.unexpected)

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.stale_expectations

    def accepting(self, expected_differences: Mapping[str, str] | Iterable[str] = ()) -> ParityReport:
        """This report with the calls ``expected_differences`` names accepted; a named call that
        does not differ, or differs only deliberately, is a stale expectation (the report is not ok)."""
        expected = set(expected_differences)
        comparisons = tuple(
            CallComparison(c.call, c.meai, c.tether, c.fields, c.category, c.call.call_id in expected)
            for c in self.comparisons
        )
        known = {c.call.call_id for c in comparisons if c.differs and c.category is None}
        return ParityReport(comparisons, self.runtime, tuple(sorted(expected - known)))

    def notes(self) -> list[str]:
        """The reason for each deliberate difference shown, the stale expectations, the summary line."""
        used = sorted({c.category for c in self.differences if c.category is not None})
        lines = [f"deliberate ({category}): {DELIBERATE_DIFFERENCES[category]}" for category in used]
        if self.stale_expectations:
            lines.append(f"expected differences that did not happen: {', '.join(self.stale_expectations)}")
        lines.append(f"{len(self.comparisons)} call(s), {len(self.differences)} differ, {len(self.unexpected)} unexpected")
        return lines

    def render(self) -> str:
        """The report as text: per call its verdict (with what differs) and both sides, then :meth:`notes`."""
        lines = [f"parity with Microsoft.Extensions.AI's FunctionInvokingChatClient{f' on {self.runtime}' if self.runtime else ''}:"]
        for c in self.comparisons:
            lines.append(f"- {c.call.call_id} {c.call.name}: {c.status}" + (f" ({', '.join(c.fields)})" if c.differs else ""))
            lines.append(f"    MEAI:       {c.meai.cell()}")
            lines.append(f"    tether_clr: {c.tether.cell()}")
        return "\n".join(lines + self.notes())


# ------------------------------------------------------------------------------------------- calls
def _is_script_row(row: Any) -> bool:
    """A row with ``kind`` is a ``tether-clr run`` script row; any other object is a parity call."""
    return isinstance(row, dict) and "kind" in row


def _script_calls(script: Script) -> list[ParityCall]:
    calls = script.calls
    if not calls:
        raise ParityCallsError("the tether-clr run script has no tool rows: there is no call to compare")
    return [ParityCall(call.call_id, call.name, call.arguments) for call in calls]


def _parse_script_rows(rows: list[Any]) -> list[ParityCall]:
    """The tool rows of a ``tether-clr run`` script, as calls; its text rows are left out.

    Read by the command's own parser, so parity takes exactly the scripts ``run`` takes: a malformed
    row is refused naming it (``row N``, counted from 1), never dropped. Two formats in one list are
    refused too (a row without ``kind`` beside script rows), and so is ``cancelled`` on a script row
    (the run format has no such key; silently running the call uncancelled would check the wrong thing).
    A call id may repeat across steps, as ``run`` allows (some providers reuse them): each call is
    still compared alone, and ``--expect``/``expected_differences`` naming that id covers each of them.
    """
    first = next(index for index, row in enumerate(rows) if _is_script_row(row))
    for index, row in enumerate(rows):
        where = f"row {index + 1} (calls[{index}])"
        if isinstance(row, dict) and "kind" not in row:
            raise ParityCallsError(
                f"{where} has no 'kind' while row {first + 1} is a tether-clr run script row: a file holds either "
                "a script's rows or parity calls ({call_id, name, arguments}), not both"
            )
        if isinstance(row, dict) and "cancelled" in row:
            raise ParityCallsError(f"{where}: 'cancelled' is a key of the parity calls format, not of a script row; "
                                   "write that call as {call_id, name, arguments, cancelled}")
    try:
        script = parse_script(rows)
    except ScriptError as exc:
        raise ParityCallsError(f"the tether-clr run script: {exc}") from exc
    return _script_calls(script)


def parse_parity_calls(data: Any) -> list[ParityCall]:
    """The calls of a decoded calls.json, in either of two formats.

    * Parity calls: a list of ``{"call_id", "name", "arguments", "cancelled"?}``. ``arguments`` is
      an object (sent as its JSON text) or a string (the model's text exactly, malformed or not;
      absent means ``{}``). Call ids must be unique strings. An empty list is no calls.
    * A ``tether-clr run`` script (any row has ``kind``): its tool rows are the calls, in order; its
      text rows are ignored. See :func:`_parse_script_rows` for what is refused (a script with no
      tool row, a malformed row, a mix of the two formats).

    Anything else is a :class:`ParityCallsError` naming the entry.
    """
    if isinstance(data, list) and any(_is_script_row(row) for row in data):
        return _parse_script_rows(data)
    if not isinstance(data, list):
        raise ParityCallsError(f"calls must be a JSON list of {{call_id, name, arguments}} objects, got {type(data).__name__}")
    calls: list[ParityCall] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        where = f"calls[{index}]"
        if not isinstance(item, dict):
            raise ParityCallsError(f"{where} must be an object, got {type(item).__name__}")
        unknown = sorted(set(item) - {"call_id", "name", "arguments", "cancelled"})
        if unknown:
            raise ParityCallsError(f"{where} has unknown keys {unknown}")
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise ParityCallsError(f"{where}.call_id must be a non-empty string")
        if call_id in seen:
            raise ParityCallsError(f"{where}.call_id {call_id!r} is used twice")
        if not isinstance(name, str) or not name:
            raise ParityCallsError(f"{where}.name must be a non-empty string")
        arguments = item.get("arguments", {})
        if isinstance(arguments, dict):
            text = canonical_json(arguments)
        elif isinstance(arguments, str):
            text = arguments
        else:
            raise ParityCallsError(f"{where}.arguments must be an object or the argument text as a string")
        cancelled = item.get("cancelled", False)
        if not isinstance(cancelled, bool):
            raise ParityCallsError(f"{where}.cancelled must be true or false")
        seen.add(call_id)
        calls.append(ParityCall(call_id, name, text, cancelled))
    return calls


def load_parity_calls(path: str | os.PathLike[str]) -> list[ParityCall]:
    """:func:`parse_parity_calls` of a file: parity calls or a ``tether-clr run`` script."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParityCallsError(f"cannot read calls from {path}: {exc}") from exc
    return parse_parity_calls(data)


def _as_calls(calls: Sequence[ParityCall | Mapping[str, Any]] | Script) -> list[ParityCall]:
    if isinstance(calls, Script):
        return _script_calls(calls)
    if all(isinstance(c, ParityCall) for c in calls):
        return [c for c in calls if isinstance(c, ParityCall)]
    return parse_parity_calls([dict(c) if isinstance(c, Mapping) else c for c in calls])


# -------------------------------------------------------------------------------------- the MEAI side
_PARITY_REFERENCES = (
    "Microsoft.Extensions.AI.Abstractions.dll",
    "Microsoft.Extensions.AI.dll",
    "Microsoft.Extensions.Logging.Abstractions.dll",
    "System.Text.Json.dll",
)


def _meai_dir(meai_dir: str | os.PathLike[str] | None) -> Path:
    if meai_dir is not None:
        return Path(meai_dir).resolve()
    folders = [f for f in find_meai_directories() if (f / "Microsoft.Extensions.AI.dll").is_file()]
    if not folders:
        raise ClrUnavailableError(
            "parity needs Microsoft.Extensions.AI.dll (FunctionInvokingChatClient) and its dependencies: "
            "set TETHER_MEAI_DIR to their folder or pass meai_dir"
        )
    return folders[0].resolve()


def build_parity_client(meai_dir: str | os.PathLike[str] | None = None) -> Path:
    """Compile ``bridge/parity/`` against the MEAI assemblies in ``meai_dir`` (default ``TETHER_MEAI_DIR``)."""
    folder = _meai_dir(meai_dir)
    aliased = {"BCL": "Microsoft.Bcl.AsyncInterfaces.dll", "STTE": "System.Threading.Tasks.Extensions.dll", "SM": "System.Memory.dll"}
    missing = [name for name in (*_PARITY_REFERENCES, *aliased.values()) if not (folder / name).is_file()]
    if missing:
        raise ClrBuildError(f"{folder} lacks {', '.join(missing)}: point it at the Microsoft.Extensions.AI assemblies")
    sources = sorted((source_root() / "bridge" / "parity").glob("*.cs"))
    if not sources:
        raise ClrBuildError(f"no C# sources in {source_root() / 'bridge' / 'parity'}: reinstall tether_clr")
    references: list[str | Path] = [folder / name for name in _PARITY_REFERENCES]
    references += [f"{alias}={folder / name}" for alias, name in aliased.items()]
    return compile_library("TetherParity", sources, references)


def _load_parity_client(meai_dir: str | os.PathLike[str] | None) -> Any:
    from tether_clr.clr import load_meai

    load_runtime()
    if meai_dir is None:
        load_meai()
    else:
        from tether_clr.clr.functions import add_probe_directory

        add_probe_directory(meai_dir)
    load_assembly(build_parity_client(meai_dir))
    from Tether.Parity import ParityRun

    return ParityRun


def _meai_side(parity_run: Any, functions: Sequence[ClrFunction], call: ParityCall) -> SideResult:
    from System.Collections.Generic import List
    from Microsoft.Extensions.AI import AIFunction  # type: ignore[import-not-found]

    tools = List[AIFunction]()
    for function in functions:
        tools.Add(function.clr_object)
    report = json.loads(str(parity_run.Run(tools, call.call_id, call.name, call.arguments, call.cancelled)))
    results = report["results"]
    mine = [r for r in results if r["call_id"] == call.call_id]
    if mine:
        first = mine[0]
        return SideResult(True, json.loads(first["result"]), first["exception"])
    if report["approval_requested"]:
        return SideResult(False, note="FunctionApprovalRequestContent returned to the caller")
    if report["error"]:
        return SideResult(False, note=f"the request threw {report['error']}")
    others = ", ".join(repr(r["call_id"]) for r in results)
    return SideResult(False, note=f"results for {others}" if others else "no FunctionResultContent was sent back")


# ----------------------------------------------------------------------------------- tether_clr's side
async def _tether_side(registry: ToolRegistry, parity_run: Any, call: ParityCall) -> SideResult:
    source = CancellationSource()
    if call.cancelled:
        source.cancel("parity: a cancelled call")
    outcomes = await registry.execute_batch([ToolCall(call.call_id, call.name, call.arguments)], registry.seal(), cancellation=source.token)
    if not isinstance(outcomes, list) or len(outcomes) != 1:  # pragma: no cover - no sink can park a call here
        return SideResult(False, note=f"execute_batch returned {type(outcomes).__name__}")
    outcome = outcomes[0]
    content = to_clr_function_result(outcome)
    exception = None if outcome.failure is None else f"{outcome.failure.code}: {outcome.failure.message}"
    code = None if outcome.failure is None else str(outcome.failure.code)
    return SideResult(str(content.CallId) == call.call_id, json.loads(str(parity_run.ResultJson(content))), exception, code=code)


# ------------------------------------------------------------------------------------------ comparing
def _extra_argument_names(function: ClrFunction | None, arguments: str) -> bool:
    if function is None:
        return False
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    schema = function.json_schema
    if not isinstance(value, dict) or schema.get("additionalProperties", False) not in (False, None) or "patternProperties" in schema:
        return False
    return bool(set(value) - set(schema.get("properties", {})))


def _parses_as_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def _category(call: ParityCall, function: ClrFunction | None, meai: SideResult, tether: SideResult, fields: tuple[str, ...]) -> Category | None:
    """The deliberate difference that explains ``fields``, or None: each needs the call's trait and
    the tether_clr outcome that rule gives (a DENIED approval-required call, an INVALID_ARGS parse
    error...), so a difference of another kind on the same call stays unexpected. Checked in this
    order, so a cancelled approval-required call is a cancellation. An unknown tool is refused by its
    name on both sides before its argument text is read, so its text never makes it a parse error."""
    if not fields:
        return None
    if call.cancelled:
        return "cancellation" if tether.code in ("ABORTED_BEFORE_DISPATCH", "ABORTED") else None
    if function is not None and function.requires_approval:
        return "approval" if tether.code == "DENIED" and not meai.present else None
    if not _parses_as_object(call.arguments) and tether.code != "UNKNOWN_TOOL":
        return "parse_error" if tether.code == "INVALID_ARGS" else None
    if _extra_argument_names(function, call.arguments) and tether.code == "INVALID_ARGS":
        return "unknown_arguments"
    meai_failed = meai.exception is not None or (isinstance(meai.result, str) and meai.result.startswith("Error:"))
    if "call_id" not in fields and meai_failed and tether.code is not None:
        return "failure_text"
    return None


def _compare(call: ParityCall, function: ClrFunction | None, meai: SideResult, tether: SideResult) -> CallComparison:
    fields: list[str] = []
    if meai.present != tether.present:
        fields.append("call_id")
    if meai.present and tether.present:
        if canonical_json(meai.result) != canonical_json(tether.result):
            fields.append("result")
        if (meai.exception is None) != (tether.exception is None):
            fields.append("exception")
    found = tuple(fields)
    return CallComparison(call, meai, tether, found, _category(call, function, meai, tether, found))


# --------------------------------------------------------------------------------------------- running
def _functions(assembly_or_functions: Any, parity_run: Any) -> list[ClrFunction]:
    """The AIFunctions both sides run. A ``[Description]`` method becomes the AIFunction a MEAI user
    makes of it (``AIFunctionFactory.Create(method)``, under the name tether_clr gives it), wrapped for tether_clr as any AIFunction is,
    so both sides run the very same function object."""
    if isinstance(assembly_or_functions, str | os.PathLike):
        items: list[Any] = discover_functions(load_assembly(assembly_or_functions))
    elif isinstance(assembly_or_functions, ClrFunction):
        items = [assembly_or_functions]
    elif isinstance(assembly_or_functions, Iterable):
        items = list(assembly_or_functions)
    else:
        items = discover_functions(assembly_or_functions)  # a loaded System.Reflection.Assembly
    functions: list[ClrFunction] = []
    for item in items:
        if isinstance(item, ClrFunction) and item.kind == "aifunction":
            functions.append(item)
        elif isinstance(item, ClrFunction):
            try:
                functions.append(wrap_aifunction(parity_run.FromMethod(item.clr_object, item.name)))
            except Exception as exc:
                raise TypeError(f"{item.name}: AIFunctionFactory.Create cannot make an AIFunction of it: {exc}") from exc
        else:
            functions.append(wrap_aifunction(item))
    return functions


async def run_parity(
    assembly_or_functions: Any,
    calls: Sequence[ParityCall | Mapping[str, Any]] | Script,
    *,
    meai_dir: str | os.PathLike[str] | None = None,
) -> ParityReport:
    """Run ``calls`` through FunctionInvokingChatClient and through tether_clr; compare them.

    ``assembly_or_functions``: a path to a tools assembly (every function :func:`discover_functions`
    finds), a loaded assembly, or ClrFunctions / real ``AIFunction`` objects. ``calls``: :class:`ParityCall`
    objects, rows in either format :func:`parse_parity_calls` reads, or a parsed ``tether-clr run``
    :class:`~tether_clr.records.script.Script` (its tool rows). Each call runs alone on each side; the MEAI side runs on a worker thread (it blocks in .NET).
    """
    parity_calls = _as_calls(calls)
    parity_run = _load_parity_client(meai_dir)
    functions = _functions(assembly_or_functions, parity_run)
    registry = ToolRegistry()
    for function in functions:
        registry.register(function)
    by_name = {f.name: f for f in functions}
    comparisons: list[CallComparison] = []
    for call in parity_calls:
        meai = await anyio.to_thread.run_sync(_meai_side, parity_run, functions, call)
        tether = await _tether_side(registry, parity_run, call)
        comparisons.append(_compare(call, by_name.get(call.name), meai, tether))
    from tether_clr.clr.runtime import current_runtime

    runtime = current_runtime()
    return ParityReport(tuple(comparisons), "" if runtime is None else runtime.description)
