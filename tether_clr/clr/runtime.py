"""Choosing and loading the .NET runtime that pythonnet hosts.

pythonnet can host exactly one runtime per process, for the life of the
process, so the choice is made once and remembered; asking for a different
kind later is an error that says so instead of a crash.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Literal

from tether_clr.foundations.errors import TetherError

__all__ = ["ClrRuntime", "ClrUnavailableError", "current_runtime", "load_runtime", "skip_runtime_shutdown"]

logger = logging.getLogger("tether_clr")

RuntimeKind = Literal["auto", "mono", "coreclr"]

INSTALL_HINT = (
    "install a .NET runtime: on Debian `apt-get install mono-devel` (what ./tasks.sh setup does), "
    "or a .NET SDK from Microsoft"
)


class ClrUnavailableError(TetherError, RuntimeError):
    """No usable .NET runtime, assembly or package: the message names what to install."""


@dataclass(frozen=True, slots=True)
class ClrRuntime:
    kind: Literal["mono", "coreclr"]
    description: str


_lock = threading.Lock()
_loaded: ClrRuntime | None = None


def _coreclr_spec() -> Any:
    """The newest Microsoft.NETCore.App 8.0 or later that ``DOTNET_ROOT`` or ``dotnet`` on PATH offers."""
    try:
        from clr_loader.util.find import find_runtimes
    except ImportError:  # pragma: no cover - clr_loader ships with pythonnet
        return None
    try:
        specs = [spec for spec in find_runtimes() if spec.name == "Microsoft.NETCore.App" and spec.version_info[0] >= 8]
    except Exception:  # a broken dotnet install must not stop Mono from being used
        logger.debug("probing for CoreCLR failed", exc_info=True)
        return None
    return max(specs, key=lambda spec: spec.version_info, default=None)


def _libmono() -> str | None:
    try:
        from clr_loader.util.find import find_libmono

        found = find_libmono()
    except Exception:
        found = None
    return None if found is None else str(found)


def _choose(kind: RuntimeKind) -> Literal["mono", "coreclr"]:
    if kind == "coreclr":
        if _coreclr_spec() is None:
            raise ClrUnavailableError(
                f"kind='coreclr' was asked for but no Microsoft.NETCore.App 8.0+ runtime was found "
                f"(DOTNET_ROOT or dotnet on PATH); {INSTALL_HINT}"
            )
        return "coreclr"
    if kind == "mono":
        if _libmono() is None:
            raise ClrUnavailableError(f"kind='mono' was asked for but libmono was not found; {INSTALL_HINT}")
        return "mono"
    if _coreclr_spec() is not None:
        return "coreclr"
    if _libmono() is not None:
        return "mono"
    raise ClrUnavailableError(f"no .NET runtime found (neither CoreCLR nor Mono); {INSTALL_HINT}")


def _describe(kind: str) -> str:
    import System

    if kind == "mono":
        mono = System.Type.GetType("Mono.Runtime")
        display = mono.GetMethod("GetDisplayName", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static)
        version = display.Invoke(None, None) if display is not None else str(System.Environment.Version)
        return f"Mono {version}"
    return f".NET {System.Environment.Version} (CoreCLR)"


def current_runtime() -> ClrRuntime | None:
    return _loaded


def load_runtime(kind: RuntimeKind | None = None) -> ClrRuntime:
    """Load (once) and describe the .NET runtime.

    ``kind`` defaults to ``$TETHER_CLR_RUNTIME``, else ``auto``. ``auto`` picks
    CoreCLR when a .NET 8+ install is found (``DOTNET_ROOT``, or ``dotnet`` on
    ``PATH``), else Mono. Raises :class:`ClrUnavailableError` when nothing usable
    is installed or when a different runtime is already loaded in this process.
    """
    global _loaded
    if kind is None:
        kind = os.environ.get("TETHER_CLR_RUNTIME") or "auto"  # type: ignore[assignment]
    if kind not in ("auto", "mono", "coreclr"):
        raise ValueError(f"kind must be 'auto', 'mono' or 'coreclr', got {kind!r}")
    with _lock:
        if _loaded is not None:
            if kind not in ("auto", _loaded.kind):
                raise ClrUnavailableError(f"{_loaded.kind} is already loaded in this process and pythonnet cannot switch to {kind}")
            return _loaded
        import pythonnet

        info = pythonnet.get_runtime_info()
        if info is not None:  # someone loaded pythonnet before us: adopt it
            chosen: Literal["mono", "coreclr"] = "mono" if "mono" in info.kind.lower() else "coreclr"
            if kind not in ("auto", chosen):
                raise ClrUnavailableError(f"pythonnet already hosts {info.kind}; cannot switch to {kind}")
        else:
            chosen = _choose(kind)
            with warnings.catch_warnings():
                # clr_loader warns about Mono < 6.12; Debian 12 ships 6.8, which this project tests against.
                warnings.filterwarnings("ignore", message="Hosting Mono versions before", category=UserWarning)
                try:
                    if chosen == "coreclr":
                        pythonnet.load("coreclr", runtime_spec=_coreclr_spec())
                    else:
                        pythonnet.load("mono")
                except Exception as exc:
                    raise ClrUnavailableError(f"loading {chosen} through pythonnet failed: {exc}; {INSTALL_HINT}") from exc
        import clr  # noqa: F401  (makes .NET namespaces importable)

        _loaded = ClrRuntime(chosen, _describe(chosen))
        logger.info("hosting %s", _loaded.description)
        return _loaded



def skip_runtime_shutdown() -> bool:
    """Take the .NET runtime's shutdown out of the interpreter's exit handlers; True if pythonnet is imported.

    Only for a process that ends with ``os._exit`` right after (what
    ``tether_clr.cli.exiting.exit_now`` does): the interpreter must not go on to
    finalize while the runtime it hosts is still running.

    Why skip it: pythonnet registers ``pythonnet.unload`` (``PythonEngine.Shutdown``)
    and clr_loader registers Mono's ``mono_jit_cleanup`` with :mod:`atexit`. Both run
    Python's full garbage collection over and over while the runtime releases its
    Python objects: measured 3.3 s at the exit of ``mcp serve`` with a small assembly
    (0.2 s without .NET), longer than the MCP SDK's stdio client waits before it kills
    the process. Neither writes anything durable: they free memory the process's end
    frees anyway, and run .NET finalizers, which CoreCLR itself never runs at a
    process's exit, so a tool must not rely on them.
    """
    pythonnet = sys.modules.get("pythonnet")
    if pythonnet is not None:  # unregistering what was never registered does nothing
        atexit.unregister(pythonnet.unload)
    mono = sys.modules.get("clr_loader.mono")
    release = getattr(mono, "_release", None)  # clr_loader's private Mono cleanup (mono_jit_cleanup)
    if release is not None:
        atexit.unregister(release)
    return pythonnet is not None
