"""Awaiting .NET work from anyio without blocking a thread per call.

The bridge's ``TaskBridge.SignalOnCompletion`` writes one byte to a pipe when a
Task finishes; the event loop waits for the read end with
``anyio.wait_readable`` (asyncio and trio alike). No .NET thread calls back into
Python: a callback would need the GIL on a .NET thread, and a Mono garbage
collection that waits for that thread while the GIL holder waits for the
collection deadlocks the process. The caller's cancellation token, and anyio
cancellation of the awaiting task, both become
``CancellationTokenSource.Cancel()``; the .NET task is then drained, so no body
is left running behind the pipeline's back.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

import anyio

from ..cancellation import CancellationToken, OperationCancelledError
from ..errors import ToolArgumentError, ToolError

__all__ = ["await_dotnet_json", "raise_for_clr_exception"]

logger = logging.getLogger("tether_clr")


def raise_for_clr_exception(error: Any, is_argument_error: Callable[[Any], bool]) -> None:
    """Map a .NET exception to what the pipeline understands; always raises."""
    from .bridge import bridge

    task_bridge = bridge().TaskBridge
    inner = task_bridge.Unwrap(error)
    if task_bridge.IsCancellation(inner):
        raise OperationCancelledError(f"{inner.GetType().FullName}: {inner.Message}")
    if is_argument_error(inner):
        raise ToolArgumentError(str(inner.Message))
    raise ToolError(str(task_bridge.Describe(inner)))


async def _completion(task: Any, source: Any) -> None:
    if task.IsCompleted:
        return
    from .bridge import bridge

    read_end, write_end = os.pipe()
    try:
        os.set_blocking(read_end, False)
        try:
            bridge().TaskBridge.SignalOnCompletion(task, write_end)  # .NET owns and closes write_end now
        except BaseException:
            os.close(write_end)
            raise
        try:
            await anyio.wait_readable(read_end)
        except anyio.get_cancelled_exc_class():
            # Cancel() runs the .NET token's callbacks; one that throws must not skip the
            # drain, or the body would go on running after the batch returned.
            try:
                source.Cancel()
            except Exception:
                logger.warning("a .NET cancellation callback threw; draining the task anyway", exc_info=True)
            with anyio.CancelScope(shield=True):
                await anyio.wait_readable(read_end)
            raise
    finally:
        os.close(read_end)


async def await_dotnet_json(
    start: Callable[[Any], Any],
    cancellation: CancellationToken,
    is_argument_error: Callable[[Any], bool],
) -> Any:
    """Start .NET work that returns ``Task<string>`` (JSON) and await its parsed result.

    ``start`` receives a .NET ``CancellationToken`` linked to ``cancellation``.
    """
    from System.Threading import CancellationTokenSource  # type: ignore[import-not-found]

    source = CancellationTokenSource()
    link = cancellation.register(source.Cancel)
    try:
        try:
            task = start(source.Token)
        except Exception as error:
            if hasattr(error, "GetType"):  # a .NET exception thrown synchronously
                raise_for_clr_exception(error, is_argument_error)
            raise
        await _completion(task, source)
        if task.IsFaulted:
            raise_for_clr_exception(task.Exception, is_argument_error)
        if task.IsCanceled:
            raise OperationCancelledError("the .NET task was cancelled")
        return json.loads(task.Result)
    finally:
        link.dispose()
        source.Dispose()
