"""Loading the compiled bridge assembly (once) into the hosted runtime."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tether_clr.clr.build import build_bridge
from tether_clr.clr.runtime import load_runtime

__all__ = ["bridge", "clr_add_reference"]

_lock = threading.Lock()
_bridge: Any = None


def clr_add_reference(path: Path) -> Any:
    """``clr.AddReference`` by path: loads the assembly and makes its namespaces importable."""
    import clr

    return clr.AddReference(str(path))


def bridge() -> Any:
    """The ``Tether.Bridge`` namespace; loads the runtime and builds the bridge on first use."""
    global _bridge
    with _lock:
        if _bridge is None:
            load_runtime()
            clr_add_reference(build_bridge())
            from Tether import Bridge

            _bridge = SimpleNamespace(
                TaskBridge=Bridge.TaskBridge,
                # Looked up once: on Mono a pythonnet attribute lookup costs as much as the call.
                calls=SimpleNamespace(
                    start=Bridge.PendingCall.Start, finish=Bridge.PendingCall.Finish, cancel=Bridge.PendingCall.Cancel,
                    start_traced=Bridge.PendingCall.StartTraced,
                ),
                Discovery=Bridge.Discovery,
                DescribedFunction=Bridge.DescribedFunction,
                AIFunctionHandle=Bridge.AIFunctionHandle,
                Records=Bridge.Records,
                AssemblyProbe=Bridge.AssemblyProbe,
            )
        return _bridge
