"""The Tool protocol: what the registry can host.

A tool only describes itself (name, description, JSON schema) and runs. It never
decides whether it may run: that is the pipeline's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from tether_clr.foundations.cancellation import CancellationToken

__all__ = ["Tool"]


@runtime_checkable
class Tool(Protocol):
    """Anything the registry can host.

    A tool may also define ``is_concurrency_safe(arguments) -> bool``; the
    registration option of the same name takes precedence over it. A tool may
    define ``requires_approval`` (a bool, or a predicate over the parsed
    arguments): a real ``ApprovalRequiredAIFunction`` does; it adds to, and is
    never loosened by, the registration option of the same name. A tool whose
    body calls other tools says ``makes_child_calls = True`` and reads
    :func:`~tether_clr.current_child_calls` in ``invoke`` (a ``PythonFunction``
    does this for a parameter annotated ``ChildCalls``).
    A tool hosted in another runtime may say ``language = "dotnet"`` (a
    ``ClrFunction`` does): telemetry reports it as ``tether.tool.language``
    (``python`` otherwise).
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def json_schema(self) -> Mapping[str, Any]: ...

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any: ...
