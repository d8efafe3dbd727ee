"""A child process for the binding tests: ``python -m tests.clr_binding_child RUNTIME`` (cases as JSON on stdin).

It hosts only the plain C# fixtures (dotnet_fixtures/Tools.cs), never
Microsoft.Extensions.AI, so what the runtime itself offers decides how a
``[Description]`` method binds: Mono has no System.Text.Json (the fallback
binds), CoreCLR ships its own. It prints, as JSON, the binder each function
took and what each call gave (see :func:`bind_all`); the tests compare that with
the same expectations the in-process System.Text.Json tests use.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from tether_clr import CancellationToken, ToolArgumentError, ToolError


async def bind_all(function: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case is ``{"arguments": {...}}`` (through ``invoke``, as the pipeline calls a tool) or
    ``{"raw": "text"}`` (the text handed to the bridge as it is, as no pipeline would); each result
    is ``{"value": ...}`` or ``{"error": CODE, "message": ...}``, where CODE is INVALID_ARGS,
    TOOL_ERROR or, for anything else that escaped, the exception's type (a defect)."""
    from tether_clr.clr.bridge import bridge
    from tether_clr.clr.tasks import call_dotnet_json

    results: list[dict[str, Any]] = []
    for case in cases:
        try:
            if "raw" in case:
                value = await call_dotnet_json(bridge().calls, function._handle, case["raw"], CancellationToken.none())
            else:
                value = await function.invoke(case["arguments"], CancellationToken.none())
        except ToolArgumentError as exc:
            results.append({"error": "INVALID_ARGS", "message": str(exc)})
        except ToolError as exc:
            results.append({"error": "TOOL_ERROR", "message": str(exc)})
        except Exception as exc:
            results.append({"error": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)})
        else:
            results.append({"value": value})
    return results


def main() -> int:
    from tether_clr.clr import (
        build_fixtures,
        discover_functions,
        load_assembly,
        load_runtime,
    )

    runtime = load_runtime(sys.argv[1])  # type: ignore[arg-type]
    functions = {f.name: f for f in discover_functions(load_assembly(build_fixtures()))}
    cases: dict[str, list[dict[str, Any]]] = json.loads(sys.stdin.read())
    report = {
        "runtime": runtime.kind,
        "functions": {name: {"binder": functions[name].binder, "results": anyio.run(bind_all, functions[name], calls)}
                      for name, calls in cases.items()},
    }
    sys.stdout.write(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
