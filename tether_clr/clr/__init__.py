"""The .NET side: host Microsoft.Extensions.AI tools from loaded assemblies through pythonnet.

Importing this package loads nothing; the runtime starts on first use
(``load_runtime`` or anything that needs it), and the C# bridge is compiled
from ``bridge/`` into a cache the first time it is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether_clr.clr.build import (
    ClrBuildError,
    build_bridge,
    build_fixtures,
    build_meai_fixtures,
    cache_dir,
    compile_library,
)
from tether_clr.clr.functions import (
    ClrFunction,
    add_probe_directory,
    discover_functions,
    find_meai_directories,
    load_assembly,
    wrap_aifunction,
)
from tether_clr.clr.records import function_call_to_tool_call, to_clr_function_result
from tether_clr.clr.runtime import (
    ClrRuntime,
    ClrUnavailableError,
    current_runtime,
    load_runtime,
)

__all__ = [
    "ClrBuildError",
    "ClrFunction",
    "ClrRuntime",
    "ClrUnavailableError",
    "add_probe_directory",
    "build_bridge",
    "build_fixtures",
    "build_meai_fixtures",
    "cache_dir",
    "compile_library",
    "current_runtime",
    "discover_functions",
    "find_meai_directories",
    "function_call_to_tool_call",
    "load_assembly",
    "load_meai",
    "load_runtime",
    "to_clr_function_result",
    "wrap_aifunction",
]


def load_meai() -> Any:
    """Load Microsoft.Extensions.AI.Abstractions from ``TETHER_MEAI_DIR`` or a NuGet cache.

    Registers the folders for dependency resolution and returns the loaded
    assembly; raises :class:`ClrUnavailableError` naming what to provide.
    """
    folders = find_meai_directories()
    if not folders:
        raise ClrUnavailableError(
            "Microsoft.Extensions.AI.Abstractions.dll not found: set TETHER_MEAI_DIR to a folder holding it and its "
            "dependencies (System.Text.Json, Microsoft.Bcl.AsyncInterfaces, ...), or restore the NuGet package"
        )
    for folder in folders:
        add_probe_directory(folder)
    dll = next(Path(f) / "Microsoft.Extensions.AI.Abstractions.dll" for f in folders
               if (Path(f) / "Microsoft.Extensions.AI.Abstractions.dll").is_file())
    return load_assembly(dll)
