"""Parity with Microsoft.Extensions.AI's own ``FunctionInvokingChatClient``.

The same list of function calls runs two ways with the same ``AIFunction``\\ s: through MEAI's
invoker, driven by a scripted ``IChatClient`` written in C# and compiled against the real assemblies
(``TETHER_MEAI_DIR``), and through tether_clr's ``execute_batch``. The results are compared call by
call (``CallId``, the ``Result`` JSON, whether an ``Exception`` is present) and every difference is
reported; the deliberate ones (:data:`DELIBERATE_DIFFERENCES`: approval, parse errors, unknown
arguments, failure texts, cancellation) are labelled as such, never hidden. See docs/csharp-tools.md (Parity).

Importable without pytest: :func:`assert_parity` raises a plain ``AssertionError`` whose message is
the report. The engine lives in :mod:`tether_clr.clr.parity`, so the ``tether-clr parity`` command
shares it without importing this kit.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anyio

from tether_clr.clr.parity import (
    DELIBERATE_DIFFERENCES,
    CallComparison,
    ParityCall,
    ParityCallsError,
    ParityReport,
    SideResult,
    build_parity_client,
    load_parity_calls,
    parse_parity_calls,
    run_parity,
)
from tether_clr.records.script import Script

__all__ = [
    "DELIBERATE_DIFFERENCES",
    "CallComparison",
    "ParityCall",
    "ParityCallsError",
    "ParityReport",
    "SideResult",
    "assert_parity",
    "build_parity_client",
    "load_parity_calls",
    "parse_parity_calls",
    "run_parity",
]


def _in_async_context() -> bool:
    """Whether this thread runs an event loop (asyncio or trio) right now."""
    try:
        anyio.get_current_task()
    except Exception:  # NoEventLoopError (anyio 4.11+) or sniffio's AsyncLibraryNotFoundError (older)
        return False
    return True


def _run_blocking(assembly_or_functions: Any, calls: Sequence[ParityCall | Mapping[str, Any]] | Script,
                  meai_dir: str | os.PathLike[str] | None, backend: str) -> ParityReport:
    """:func:`run_parity` to its end on a fresh event loop: on this thread, or, when this thread
    already runs one (an async test), on a thread of its own that this one waits for."""

    def run() -> ParityReport:
        report: ParityReport = anyio.run(lambda: run_parity(assembly_or_functions, calls, meai_dir=meai_dir), backend=backend)
        return report

    if not _in_async_context():
        return run()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["report"] = run()
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=target, name="tether-parity", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    result: ParityReport = box["report"]
    return result


def assert_parity(
    assembly_or_functions: Any,
    calls: Sequence[ParityCall | Mapping[str, Any]] | Script,
    expected_differences: Mapping[str, str] | Iterable[str] = (),
    *,
    meai_dir: str | os.PathLike[str] | None = None,
    backend: str = "asyncio",
) -> ParityReport:
    """Run ``calls`` both ways and raise ``AssertionError`` (the report as its message) on an unexpected difference.

    ``assembly_or_functions``: a tools assembly's path, a loaded assembly, or ClrFunctions / real
    ``AIFunction`` objects (see :func:`run_parity`). ``calls``: :class:`ParityCall` objects, the
    calls.json dicts (``{"call_id", "name", "arguments", "cancelled"?}``), or a ``tether-clr run``
    script, as its rows (``{"kind": "tool", "callId", ...}``; text rows are ignored) or as a parsed
    ``Script``: its tool rows are the calls (see :func:`parse_parity_calls`).

    A deliberate difference never fails. ``expected_differences`` names the calls (ids; a mapping's
    values say why) whose other differences this test accepts; a named call that does not differ
    that way fails too, so an expectation cannot go stale silently. Returns the report. Blocking:
    from an async test it runs on a thread of its own while the caller's thread waits.
    """
    report = _run_blocking(assembly_or_functions, calls, meai_dir, backend).accepting(expected_differences)
    if not report.ok:
        raise AssertionError(report.render())
    return report
