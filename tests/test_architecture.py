"""The layout's rules (docs/architecture.md), checked on the source: each test names one rule."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.support import PACKAGE, ROOT

MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_MODULE_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_import_linter_contracts_hold_layers_and_core_never_imports_adapters() -> None:
    """Rule 2 (no module imports from a layer above it) and the adapters rule, as pyproject.toml states them."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_module_import_cycle_counting_type_only_imports() -> None:
    """Rule 1: the module graph (imports under TYPE_CHECKING included) has no cycle."""
    graph = grimp.build_graph("tether_clr", exclude_type_checking_imports=False, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components, iteratively deep enough here
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_no_install_hooks_or_module_globals_rebound_at_import() -> None:
    """Rule 3: nothing is installed by importing a module: no ``install_*`` function, no ``global`` rebinding."""
    offenders = []
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("install_"):
                offenders.append(f"{path.relative_to(ROOT)}: def {node.name}")
            if isinstance(node, ast.Global) and any("executor" in n or "resumer" in n for n in node.names):
                offenders.append(f"{path.relative_to(ROOT)}: global {', '.join(node.names)}")
    assert offenders == []


def test_no_underscore_name_is_imported_across_packages() -> None:
    """Rule 4: a private name stays in its package (a module may use its package siblings' private names)."""
    offenders = []
    for path in MODULES:
        module = _module_name(path)
        package = _package_of(module, path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("tether_clr"):
                continue
            source = node.module or ""
            source_package = source if (ROOT / source.replace(".", "/") / "__init__.py").exists() else source.rpartition(".")[0]
            for alias in node.names:
                if alias.name.startswith("_") and source_package != package:
                    offenders.append(f"{module} imports {source}.{alias.name}")
    assert offenders == []


def test_no_relative_import_reaches_outside_its_package() -> None:
    """Imports across packages are absolute (``from tether_clr.x import``), so the layer of each is plain to see."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 1
    ]
    assert offenders == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_about_600_lines(path: Path) -> None:
    """Rule 5: one concept per module; a module that outgrows 600 lines holds more than one."""
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES


def test_optional_sink_hooks_are_exactly_the_protocol_members() -> None:
    """Rule 6: the optional hooks are one explicit protocol, and what a batch looks for is derived from it."""
    from tether_clr import SinkHooks
    from tether_clr.execution.ports import OPTIONAL_HOOKS

    members = {name for name, value in vars(SinkHooks).items() if callable(value) and not name.startswith("_")}
    assert set(OPTIONAL_HOOKS) == members
    assert "parks_approvals" in SinkHooks.__annotations__
