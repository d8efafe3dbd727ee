"""Shared fixtures: every async test runs under asyncio and under trio; C# tools compiled once.

The .NET runtime is the one ``$TETHER_CLR_RUNTIME`` names (``mono`` or
``coreclr``; ``auto`` when unset): pythonnet hosts one runtime per process, so
CI runs the .NET tests once per runtime, in two pytest processes.
Without a runtime the .NET tests skip, saying why, unless
``TETHER_REQUIRE_DOTNET=1``; without Microsoft.Extensions.AI (``TETHER_MEAI_DIR``)
the real-MEAI tests skip, unless ``TETHER_REQUIRE_MEAI=1``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

_DOTNET_FIXTURES = frozenset({"clr_tools", "meai"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that hosts .NET ``dotnet``, so a second process can run just those on the other runtime."""
    for item in items:
        if _DOTNET_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.dotnet)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _unavailable(variable: str, reason: str) -> None:
    if os.environ.get(variable) == "1":
        pytest.fail(f"{variable}=1 but {reason}")
    pytest.skip(reason)


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
        "assembly": assembly,
        "functions": {f.name: f for f in discover_functions(assembly)},
        "Calculator": Calculator,
        "Waiter": Waiter,
    }


@pytest.fixture(scope="session")
def meai(clr_tools: dict[str, Any]) -> dict[str, Any]:
    """dotnet_fixtures/meai/ compiled against the real Microsoft.Extensions.AI and loaded."""
    from tether_clr.clr import (
        build_meai_fixtures,
        discover_functions,
        find_meai_directories,
        load_assembly,
        load_meai,
    )

    folders = find_meai_directories()
    if not folders or not os.environ.get("TETHER_MEAI_DIR"):
        _unavailable("TETHER_REQUIRE_MEAI", "Microsoft.Extensions.AI not available: set TETHER_MEAI_DIR (e.g. ../shared/meai/lib)")
    abstractions = load_meai()
    assembly = load_assembly(build_meai_fixtures(folders[0]))
    from Tether.Fixtures.Meai import MeaiTools, Weather  # type: ignore[import-not-found]

    return {
        "runtime": clr_tools["runtime"],
        "abstractions": abstractions,
        "assembly": assembly,
        "functions": {f.name: f for f in discover_functions(assembly)},
        "MeaiTools": MeaiTools,
        "Weather": Weather,
    }


# The private, restartable PostgreSQL cluster (tests/support/pg_cluster.py), for every test that restarts its database.
from tests.support.pg_cluster import pg_cluster  # noqa: E402,F401
