"""Shared fixtures: every async test runs under asyncio and under trio; C# tools compiled once."""

from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def clr_tools() -> dict[str, Any]:
    try:
        from tether_clr.clr import (
            build_fixtures,
            discover_functions,
            load_assembly,
            load_runtime,
        )

        runtime = load_runtime()
        assembly = load_assembly(build_fixtures())
    except Exception as exc:
        if os.environ.get("TETHER_REQUIRE_DOTNET") == "1":
            raise
        pytest.skip(f"no usable .NET runtime or compiler here: {exc}")
    from Tether.Fixtures import Calculator, Waiter  # type: ignore[import-not-found]

    return {
        "runtime": runtime,
        "functions": {f.name: f for f in discover_functions(assembly)},
        "Calculator": Calculator,
        "Waiter": Waiter,
    }
