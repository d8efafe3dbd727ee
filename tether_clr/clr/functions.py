"""C# tools as registry tools: loading assemblies, discovering functions, wrapping them.

A :class:`ClrFunction` implements the same :class:`~tether_clr.tools.Tool`
protocol as a Python tool, so it lives in the same registry, scope tree and
pipeline, and fails with the same codes:

* arguments the .NET side cannot bind -> INVALID_ARGS;
* a .NET exception -> TOOL_ERROR, message ``Full.Type.Name: message`` of the
  innermost exception (AggregateException / TargetInvocationException unwrapped);
* OperationCanceledException after dispatch -> ABORTED.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from tether_clr.clr.content import content_from_meai
from tether_clr.clr.bridge import bridge, clr_add_reference
from tether_clr.clr.runtime import ClrUnavailableError
from tether_clr.clr.tasks import call_dotnet_json
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.json_values import canonical_json
from tether_clr.tools.predicates import ConstantPredicate

__all__ = [
    "ClrFunction",
    "add_probe_directory",
    "discover_functions",
    "find_meai_directories",
    "load_assembly",
    "wrap_aifunction",
]


class ClrFunction:
    """A .NET tool: a ``[Description]`` method wrapped by the bridge, or a real AIFunction.

    One rule for argument names, for both kinds: a name the declared schema does
    not list is refused (INVALID_ARGS, the body never runs), unless the schema
    itself admits more (``additionalProperties`` other than ``false``, or
    ``patternProperties``). A wrapped method's schema says
    ``"additionalProperties": false``; an AIFunction's usually says nothing, and
    MEAI would silently drop the extra names, so the bridge checks them.

    ``requires_approval`` is True for an ``ApprovalRequiredAIFunction`` (found
    the way MEAI's FunctionInvokingChatClient finds it, through ``GetService``):
    the registry then puts every call through the approval step.

    ``binder`` names what turns the arguments JSON into .NET values, chosen once
    when the function is wrapped: ``"System.Text.Json"`` (every AIFunction: the
    text is parsed once and each value reaches ``AIFunctionArguments`` as a
    ``JsonElement``; a ``[Description]`` method wherever the runtime can load
    System.Text.Json, which CoreCLR always can) or ``"fallback"`` (the bridge's
    own reader and binder: a ``[Description]`` method on Mono without
    Microsoft.Extensions.AI). For a ``[Description]`` method both paths bind the
    same JSON to the same values and refuse the same wrong ones as INVALID_ARGS
    (bridge/Binder.cs lists where they differ at the edges); an AIFunction's
    values are then bound by MEAI with its own serializer options.
    """

    language = "dotnet"  # what tether_clr.telemetry reports as tether.tool.language

    def __init__(self, handle: Any, kind: Literal["method", "aifunction"]) -> None:
        self._handle = handle
        self.kind = kind
        self._name = str(handle.Name)
        self._description = str(handle.Description or "")
        self._schema_json = str(handle.JsonSchema)
        # From ``[ConcurrencySafe]`` (by name, any namespace) or ``wrap_aifunction(..., is_concurrency_safe=True)``:
        # one answer for every call, so the classifier never parses a call's arguments to ask it.
        self.is_concurrency_safe = ConstantPredicate(bool(handle.IsConcurrencySafe))
        self.requires_approval: bool | None = True if kind == "aifunction" and bool(handle.RequiresApproval) else None
        self.binder: str = str(handle.ArgumentBinder)
        # The bridge's PendingCall runs each call; the handle itself says which failures mean
        # "bad arguments" (the bridge's own binder for a wrapped method; for an AIFunction also
        # MEAI's parameter marshalling, decided by the stage).
        self._calls = bridge().calls

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self._schema_json)
        return schema

    @property
    def clr_object(self) -> Any:
        """The wrapped ``MethodInfo`` or ``AIFunction``."""
        return self._handle.Method if self.kind == "method" else self._handle.Function

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        """The call's JSON result; an AIFunction's MEAI content (text and images) comes back as content
        parts, which the pipeline makes the outcome's content (:mod:`tether_clr.clr.content`)."""
        value = await call_dotnet_json(self._calls, self._handle, canonical_json(arguments), cancellation)
        if self.kind == "aifunction" and (type(value) is dict or type(value) is list):
            parts = content_from_meai(value)
            if parts is not None:
                return parts
        return value

    def __repr__(self) -> str:
        return f"ClrFunction(name={self._name!r}, kind={self.kind!r}, binder={self.binder!r})"


def load_assembly(path: str | os.PathLike[str]) -> Any:
    """Load a .NET assembly by path (loading the runtime and the bridge first).

    Its own folder becomes a probe folder, so an assembly loaded from a build
    output folder finds its dependencies (Microsoft.Extensions.AI,
    System.Text.Json, ...) there, with no environment variable. On CoreCLR tool
    assemblies share one load context of their own in which a folder's newer
    copy of a framework assembly wins over the runtime's (System.Text.Json 10
    beside .NET 8's 8.0), as an app's ``bin/`` folder does; the runtime's own
    copy is used when it is as new.
    """
    path = Path(os.path.abspath(path))  # not resolve(): a symlinked DLL's folder is still its folder
    if not path.is_file():
        raise FileNotFoundError(f"no .NET assembly at {path}")
    probe = bridge().AssemblyProbe
    try:
        assembly = probe.LoadToolAssembly(str(path))
        if not probe.HasLoadContexts:
            assembly = clr_add_reference(path)  # Mono: make its namespaces importable
        return assembly
    except Exception as exc:
        raise ClrUnavailableError(f"could not load {path}: {exc}") from exc


def _missing_dependency(error: Any) -> str:
    loader_errors = getattr(error, "LoaderExceptions", None) or []
    names = sorted({str(getattr(e, "FileName", "") or e.Message) for e in loader_errors if e is not None})
    return ", ".join(names) or str(error)


def discover_functions(assembly: Any, *, services: Any = None, context: Mapping[Any, Any] | None = None) -> list[ClrFunction]:
    """Every tool an assembly exposes, in ordinal type then member order.

    (a) real ``Microsoft.Extensions.AI.AIFunction`` instances from public static
    properties or parameterless static methods typed as AIFunction (or a
    sequence of them), recognised by type name, so no compile-time reference is
    needed; (b) public methods marked ``System.ComponentModel.DescriptionAttribute``.
    A method that is also exposed as an AIFunction (its ``UnderlyingMethod``)
    is one tool, the AIFunction: that is how MEAI tools are usually written.
    ``services`` and ``context`` go to every AIFunction (see :func:`wrap_aifunction`).
    """
    native = bridge()
    try:
        methods = list(native.Discovery.DescribedMethods(assembly))
        objects = list(native.Discovery.AIFunctions(assembly))
    except Exception as exc:
        if "ReflectionTypeLoadException" in type(exc).__name__ or hasattr(exc, "LoaderExceptions"):
            raise ClrUnavailableError(
                f"{assembly.GetName().Name} needs assemblies that are not loaded: {_missing_dependency(exc)}; "
                "set TETHER_MEAI_DIR to a folder with Microsoft.Extensions.AI.Abstractions.dll and its dependencies"
            ) from exc
        raise
    functions = [wrap_aifunction(f, services=services, context=context) for f in objects]
    wrapped = [handle for handle in methods if not any(f._handle.Wraps(handle.Method) for f in functions)]
    return [ClrFunction(handle, "method") for handle in wrapped] + functions


def wrap_aifunction(
    function: Any,
    *,
    is_concurrency_safe: bool = False,
    services: Any = None,
    context: Mapping[Any, Any] | None = None,
) -> ClrFunction:
    """Wrap one ``Microsoft.Extensions.AI.AIFunction`` object; EXCLUSIVE unless declared safe.

    ``services`` (a .NET ``IServiceProvider``) and ``context`` (copied into a
    fresh .NET dictionary for every call) are passed as
    ``AIFunctionArguments.Services`` / ``.Context``, as MEAI's own
    FunctionInvokingChatClient passes them. A function that needs an
    ``IServiceProvider`` the host did not give fails TOOL_ERROR (a host set-up
    fault), not INVALID_ARGS. ``[ConcurrencySafe]`` counts on the function's
    type, its ``UnderlyingMethod`` or that method's declaring type.

    Both are read on .NET threads, so neither may hold Python code: ``services``
    must be implemented in .NET, and ``context`` keys and values must be .NET
    objects or JSON scalars (str, int, float, bool, None; converted here);
    anything else raises ``TypeError`` now rather than risk a .NET thread
    calling into Python later.
    """
    dotnet_services, dotnet_context = _dotnet_services(services), _dotnet_context(context)
    try:
        handle = bridge().AIFunctionHandle(function, is_concurrency_safe, dotnet_services, dotnet_context)
    except Exception as exc:
        raise TypeError(f"cannot wrap {function!r} as an AIFunction: {exc}") from exc
    return ClrFunction(handle, "aifunction")


def _dotnet_value(value: Any, what: str) -> Any:
    """``value`` as a .NET object that holds no Python object.

    The context is read on .NET thread-pool threads (the per-call copy, the tool
    body); a Python object there would make a .NET thread call into Python, which
    can deadlock a Mono garbage collection against the GIL. So only .NET objects
    and the JSON scalars (converted here, on the caller's thread) are accepted.
    """
    import System

    if value is None:
        return None
    if isinstance(value, bool):
        return System.Boolean(value)
    if isinstance(value, int):
        return System.Int32(value) if -(2**31) <= value < 2**31 else System.Int64(value)
    if isinstance(value, float):
        return System.Double(value)
    if isinstance(value, str):
        return System.String(value)
    if isinstance(value, System.Object) and not _implemented_in_python(value):
        return value
    raise TypeError(
        f"{what} must be a .NET object, str, int, float, bool or None, got {type(value).__name__}: "
        "a Python object would be called from .NET threads"
    )


def _implemented_in_python(value: Any) -> bool:
    """A .NET type that pythonnet generated for a Python class (its methods run Python code)."""
    return str(value.GetType().Assembly.GetName().Name) == "Python.Runtime.Dynamic"


def _dotnet_services(services: Any) -> Any:
    if services is None:
        return None
    import System

    if not isinstance(services, System.IServiceProvider) or _implemented_in_python(services):
        raise TypeError(
            "services must be a .NET IServiceProvider implemented in .NET (one written in Python "
            f"would be called from .NET threads), got {type(services).__name__}"
        )
    return services


def _dotnet_context(context: Mapping[Any, Any] | None) -> Any:
    if context is None:
        return None
    from System import Object
    from System.Collections.Generic import Dictionary

    dictionary = Dictionary[Object, Object]()
    for key, value in context.items():
        if key is None:
            raise TypeError("context keys cannot be None")
        dictionary[_dotnet_value(key, "a context key")] = _dotnet_value(value, f"context[{key!r}]")
    return dictionary


def add_probe_directory(directory: str | os.PathLike[str]) -> None:
    """Let tool assemblies resolve dependencies (e.g. Microsoft.Extensions.AI) from ``directory``."""
    bridge().AssemblyProbe.AddDirectory(str(Path(directory).resolve()))


_PREFERRED_TFMS = ("net9.0", "net8.0", "netstandard2.1", "netstandard2.0", "net462")


def _package_lib_dirs(packages: Path) -> Iterator[Path]:
    """The best ``lib/<tfm>`` folder of the newest version of every package in a NuGet cache."""
    for package in sorted(packages.iterdir()):
        versions = sorted((v for v in package.iterdir() if v.is_dir()), key=lambda v: v.name)
        if not versions:
            continue
        lib = versions[-1] / "lib"
        for tfm in _PREFERRED_TFMS:
            if (lib / tfm).is_dir():
                yield lib / tfm
                break


def find_meai_directories() -> list[Path]:
    """Folders that together hold Microsoft.Extensions.AI.Abstractions.dll and its dependencies.

    ``$TETHER_MEAI_DIR`` first; else a NuGet cache (``$NUGET_PACKAGES`` or
    ``~/.nuget/packages``) holding the package. Empty when neither has it.
    """
    explicit = os.environ.get("TETHER_MEAI_DIR")
    if explicit:
        folder = Path(explicit)
        return [folder] if (folder / "Microsoft.Extensions.AI.Abstractions.dll").is_file() else []
    packages = Path(os.environ.get("NUGET_PACKAGES") or Path.home() / ".nuget" / "packages")
    if not (packages / "microsoft.extensions.ai.abstractions").is_dir():
        return []
    folders = list(_package_lib_dirs(packages))
    has_abstractions = any((folder / "Microsoft.Extensions.AI.Abstractions.dll").is_file() for folder in folders)
    return folders if has_abstractions else []
