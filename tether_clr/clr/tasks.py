"""Awaiting a .NET tool call from anyio: two crossings per call, no thread parked per call.

The bridge's ``PendingCall`` starts the call (its own ``CancellationTokenSource``
lives on the .NET side) and, once the call has finished, writes one byte to a
pipe; the event loop waits for the read end with ``anyio.wait_readable``
(asyncio and trio alike), then ``Finish()`` hands back the result JSON, or a
status letter and a message the .NET side already classified. So a call
crosses into .NET twice (start, finish), plus once to cancel it.

No .NET thread calls back into Python: a callback would need the GIL on a .NET
thread, and a Mono garbage collection that waits for that thread while the GIL
holder waits for the collection deadlocks the process. The caller's
cancellation token, and anyio cancellation of the awaiting task, both become
``PendingCall.Cancel()``; the .NET task is then drained, so no body is left
running behind the pipeline's back.

The pipes are reused: one is taken per call in flight and put back once its
byte has been read, so a pipe goes back only when the .NET side is done with it.

A call the Python side traces (:mod:`tether_clr.foundations.trace_context` holds
the body span's W3C trace context) starts through ``PendingCall.StartTraced``,
which invokes the tool under an ``Activity`` with that parent
(``bridge/Tracing.cs``), so the tool's own ``ActivitySource`` spans join the
trace. Where the tool's runtime has no System.Diagnostics.DiagnosticSource, the
call runs all the same and a warning says so, once per process.

One exception to the drain: a timed call whose body ignored its cancelled token
past the grace period is *abandoned* (:mod:`tether_clr.foundations.abandonment`):
the wait ends, and a Python thread of its own waits for the body's byte, then
finishes the call and puts the pipe back, so nothing leaks once the body ends.
"""

from __future__ import annotations

import json
import logging
import os
import select
import threading
from typing import Any

import anyio

from tether_clr.foundations.abandonment import abandon_token
from tether_clr.foundations.cancellation import (
    CancellationToken,
    OperationCancelledError,
)
from tether_clr.foundations.errors import ToolArgumentError, ToolError
from tether_clr.foundations.trace_context import current_trace_context

__all__ = ["call_dotnet_json"]

# The status letters of ``PendingCall.Finish()`` (bridge/Calls.cs); anything else is result JSON.
_CANCELLED, _ARGUMENT_ERROR, _TOOL_ERROR = "C", "A", "E"
_FAILURES = {
    _CANCELLED: OperationCancelledError,
    _ARGUMENT_ERROR: ToolArgumentError,
    _TOOL_ERROR: ToolError,
}

logger = logging.getLogger("tether_clr")

_told_no_activity = False


def _no_activity_parent(function: Any) -> None:
    """Say once per process that a traced .NET call could not be handed its trace context."""
    global _told_no_activity
    if _told_no_activity:
        return
    _told_no_activity = True
    logger.warning(
        "System.Diagnostics.DiagnosticSource cannot be loaded for .NET tool %r: it runs without the caller's "
        "trace context, so the spans it emits itself start traces of their own (put the assembly beside the "
        "tool, or in a probe folder, to join the trace); said once",
        str(getattr(function, "Name", "?")),
    )


class _SignalPipes:
    """Idle pipes for completion signals; at most ``keep`` are kept, the rest are closed."""

    def __init__(self, keep: int = 64) -> None:
        self._idle: list[tuple[int, int]] = []
        self._keep = keep
        self._lock = threading.Lock()

    def take(self) -> tuple[int, int]:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        return read_end, write_end

    def put_back(self, pipe: tuple[int, int]) -> None:
        """Only for a pipe whose signal was read (or never promised): it must be empty and unwatched."""
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(pipe)
                return
        for fd in pipe:
            os.close(fd)

    def forget(self) -> None:
        """In a forked child: the parent's pipes are not ours to reuse."""
        idle, self._idle = self._idle, []
        self._lock = threading.Lock()
        for pipe in idle:
            for fd in pipe:
                os.close(fd)


_pipes = _SignalPipes()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pipes.forget)


async def _signalled(read_end: int) -> None:
    """Wait until the .NET side has written its byte, and read it."""
    while True:
        await anyio.wait_readable(read_end)
        try:
            if os.read(read_end, 16):
                return
        except BlockingIOError:  # woken without data: wait again
            continue


def _reap_when_done(calls: Any, write_end: int, pipe: tuple[int, int]) -> None:
    """Finish an abandoned call once its body ends, on a Python thread (never a .NET one), and reuse its pipe."""

    def reap() -> None:
        read_end = pipe[0]
        while True:
            select.select([read_end], [], [])
            try:
                if os.read(read_end, 16):
                    break
            except BlockingIOError:
                continue
        try:
            calls.finish(write_end)
        except Exception:  # pragma: no cover - Finish() classifies every failure itself
            logger.warning("finishing an abandoned .NET call failed", exc_info=True)
        _pipes.put_back(pipe)

    threading.Thread(target=reap, name="tether-clr-abandoned-call", daemon=True).start()


async def call_dotnet_json(calls: Any, function: Any, arguments_json: str, cancellation: CancellationToken) -> Any:
    """Run one call of ``function`` (a bridge ``IJsonFunction``) and return its parsed JSON result.

    ``calls`` holds the bridge's ``PendingCall.Start``, ``.Finish`` and ``.Cancel``
    (looked up once: a pythonnet attribute lookup costs as much as a call). Raises
    ``ToolArgumentError`` when the .NET side could not bind the arguments,
    ``OperationCancelledError`` when the call was cancelled, ``ToolError`` for any
    other .NET failure; cancellation of the awaiting task cancels the call and
    waits for it to end. A token cancelled before the start reaches the tool
    already cancelled, as a linked ``CancellationTokenSource`` would.

    Text holding a lone surrogate is refused here (``ToolArgumentError``, as the
    pipeline refuses such arguments): a .NET string cannot hold one, and pythonnet
    turns the failed conversion into an unhandled .NET exception that ends the process.
    """
    if not arguments_json.isascii():
        try:
            arguments_json.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolArgumentError(f"arguments are not valid Unicode text (a lone surrogate at {exc.start})") from None
    read_end, write_end = pipe = _pipes.take()
    trace = current_trace_context()
    handed = True
    try:
        if trace is None:
            calls.start(function, arguments_json, write_end, cancellation.is_cancelled)
        else:
            handed = calls.start_traced(function, arguments_json, write_end, cancellation.is_cancelled, trace.traceparent, trace.tracestate)
    except BaseException:
        _pipes.put_back(pipe)  # refused before the call started: nothing will write to it
        raise
    if not handed:
        _no_activity_parent(function)
    cancel = calls.cancel
    link = cancellation.register(lambda: cancel(write_end)) if cancellation.can_be_cancelled else None
    signalled = False
    try:
        try:
            await _signalled(read_end)
        except anyio.get_cancelled_exc_class():
            # Cancel() runs the .NET token's callbacks; one that throws must not skip the
            # drain, or the body would go on running after the batch returned.
            try:
                cancel(write_end)
            except Exception:
                logger.warning("a .NET cancellation callback threw; draining the task anyway", exc_info=True)
            abandon = abandon_token()
            with anyio.CancelScope(shield=True) as drain:  # drain: the body ends before we do
                with abandon.register(drain.cancel):  # ... unless the pipeline abandons it
                    await _signalled(read_end)
            if drain.cancelled_caught:  # abandoned: the body runs on; a thread reaps the call when it ends
                _reap_when_done(calls, write_end, pipe)
                raise
            signalled = True
            raise
        signalled = True
    finally:
        if link is not None:
            link.dispose()
        # A pipe whose byte was not read (a fault while waiting, not cancellation) may still be
        # written to: the call stays registered and the pipe is neither reused nor closed.
        if signalled:
            text = calls.finish(write_end)  # also forgets the call, so the pipe can serve another
            _pipes.put_back(pipe)
    if text and text[0] in _FAILURES:
        raise _FAILURES[text[0]](text[1:])
    return json.loads(text)
