"""Smoke test of an installed wheel, run from a fresh virtualenv outside the checkout.

It must host C# tools with nothing set: the bridge and the fixtures compile from
the C# sources the wheel ships (tether_clr/clr/_sources), not from a checkout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

import tether_clr
from tether_clr import PythonFunction, ToolCall, ToolRegistry
from tether_clr.clr import (
    build_fixtures,
    discover_functions,
    load_assembly,
    load_runtime,
)
from tether_clr.clr.build import source_root


def main() -> int:
    assert "TETHER_SOURCE_ROOT" not in os.environ, "the smoke test must run with nothing set"
    package = Path(tether_clr.__file__).resolve().parent
    assert source_root() == package / "clr" / "_sources", f"C# sources not from the wheel: {source_root()}"
    runtime = load_runtime()
    functions = {f.name: f for f in discover_functions(load_assembly(build_fixtures()))}
    registry = ToolRegistry()
    registry.register(functions["Add"])
    registry.register(PythonFunction.from_callable(lambda text: text.upper(), name="shout"))

    async def run() -> list[object]:
        calls = [ToolCall("1", "Add", '{"a": 40, "b": 2}'), ToolCall("2", "shout", '{"text": "ok"}')]
        return [o.value for o in await registry.execute_batch(calls, registry.seal())]

    values = anyio.run(run)
    assert values == [42, "OK"], values
    print(f"wheel smoke test passed on {runtime.description} from {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
