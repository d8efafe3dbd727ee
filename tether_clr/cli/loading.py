"""Where ``tether-clr run`` gets its tools: a Python module attribute, or a .NET assembly.

``--tools package.module:attr`` names an attribute (dotted paths allowed after
the colon) that is one of:

* a list or tuple of tools (objects with ``name``, ``description``,
  ``json_schema`` and ``invoke``) or plain callables (wrapped with
  :meth:`PythonFunction.from_callable`), each registered with default options;
* a single tool, registered the same way;
* a function taking the registry, which registers what it likes, with any
  options (``requires_approval``, concurrency, metadata), listeners and guards.

The current directory is importable, as it is for ``python -m``, so
``--tools examples.mixed_tools:register`` works from a checkout.

``--assembly Tools.dll`` loads a .NET assembly (its folder resolves its
dependencies) and registers every function it exposes
(:func:`tether_clr.clr.discover_functions`).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from tether_clr.registry import ToolRegistry
from tether_clr.tools.python_function import PythonFunction

__all__ = ["ToolSpecError", "load_assembly_tools", "load_python_tools", "register_value", "resolve_attribute"]


class ToolSpecError(ValueError):
    """A ``--tools`` or ``--assembly`` value that cannot be used (bad usage: nothing ran)."""


def _is_tool(value: Any) -> bool:
    return all(hasattr(value, name) for name in ("name", "description", "json_schema", "invoke"))


def resolve_attribute(spec: str, option: str = "--tools") -> Any:
    """The attribute ``package.module:attr`` names (the current directory importable); :class:`ToolSpecError`
    (naming ``option``) when the module cannot be imported or has no such attribute."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ToolSpecError(f"{option} wants package.module:attr, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as exc:  # any failure to import is a wrong --tools value
        raise ToolSpecError(f"cannot import {module_name!r} for {option} {spec!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError as exc:
            raise ToolSpecError(f"{option} {spec!r}: {module_name} has no attribute {attribute!r}") from exc
    return value


def _register_one(registry: ToolRegistry, item: Any, spec: str) -> list[str]:
    if _is_tool(item):
        tool = item
    elif callable(item):
        tool = PythonFunction.from_callable(item)
    else:
        raise ToolSpecError(f"--tools {spec!r}: {item!r} is neither a tool nor a callable")
    registry.register(tool)
    return [tool.name]


def load_python_tools(registry: ToolRegistry, spec: str) -> list[str]:
    """Register the tools ``spec`` names; returns their names (empty for a registering function that lists none).

    :class:`ToolSpecError` when the module or attribute is missing, an item is
    neither a tool nor a callable, or the registry refuses a tool.
    """
    return register_value(registry, resolve_attribute(spec), spec)


def register_value(registry: ToolRegistry, value: Any, spec: str) -> list[str]:
    """Register what a ``--tools`` attribute holds (a list of tools or callables, a tool, or a function taking
    the registry); returns the names registered. ``spec`` names the value in a :class:`ToolSpecError`.

    :func:`tether_clr.testing.replay` registers the objects a test passes through here, as the command does.
    """
    try:
        if isinstance(value, list | tuple):
            return [name for item in value for name in _register_one(registry, item, spec)]
        if _is_tool(value):
            return _register_one(registry, value, spec)
        if callable(value):
            before = {d.name for d in registry.get_declarations()}
            value(registry)
            return sorted({d.name for d in registry.get_declarations()} - before)
    except ToolSpecError:
        raise
    except Exception as exc:  # a refused registration (duplicate, identity parameters...) is a wrong --tools value
        raise ToolSpecError(f"--tools {spec!r}: {type(exc).__name__}: {exc}") from exc
    raise ToolSpecError(f"--tools {spec!r} is a {type(value).__name__}: want a list of tools or callables, a tool, "
                        "or a function taking the registry")


def load_assembly_tools(registry: ToolRegistry, path: str | Path) -> list[str]:
    """Load a .NET assembly and register every function it exposes; returns their names.

    :class:`ToolSpecError` when there is no file at ``path`` or a function is
    refused by the registry; a missing .NET runtime or an assembly that cannot
    load raises :class:`~tether_clr.clr.ClrUnavailableError` (an infrastructure fault).
    """
    if not Path(path).is_file():
        raise ToolSpecError(f"--assembly: no file at {str(path)!r}")
    from tether_clr.clr import discover_functions, load_assembly, load_runtime

    load_runtime()
    functions = discover_functions(load_assembly(path))
    for function in functions:
        try:
            registry.register(function)
        except Exception as exc:
            raise ToolSpecError(f"--assembly {str(path)!r}: {function.name}: {type(exc).__name__}: {exc}") from exc
    return [function.name for function in functions]
