"""How long ``tether-clr mcp serve`` takes to exit once its client lets it go, with and without a .NET assembly.

    .venv/bin/python benchmarks/mcp_exit.py [--rounds N] [--no-clr] [--write-docs]

The command as users run it, a subprocess: over stdio, an ``initialize`` exchange, then stdin
closed (what the MCP SDK's stdio client does; it kills the process tree 2 s later); over
streamable HTTP, SIGTERM once serving. The time is from closing stdin (or sending the signal) to
the process's exit; no call is in flight. The targets (issue 28): with a .NET assembly, stdio
within 0.5 s, HTTP within 1 s. ``.NET`` uses ``$TETHER_CLR_RUNTIME`` (auto: CoreCLR if found).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import add_write_docs_flag, machine_line, publish, table  # noqa: E402

SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve", "--tools", "tests.support.mcp_cli_tools:register",
         "--tenant", "t", "--principal", "p"]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
TARGETS = {"stdio": 0.5, "http": 1.0}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def exit_seconds(transport: str, assembly: str | None) -> tuple[float, int]:
    """One server started, let go (stdin closed, or SIGTERM), and timed to its exit: (seconds, exit code)."""
    command = [*SERVE, *(["--assembly", assembly] if assembly else [])]
    if transport == "http":
        command += ["--transport", "http", "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        if transport == "stdio":
            process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
            process.stdin.flush()
            if not process.stdout.readline():
                raise SystemExit(f"the server did not answer initialize: {process.stderr.read().decode()[-2000:]}")
            process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            process.stdin.flush()
            time.sleep(0.2)  # let it settle: the initialized notification handled, nothing in flight
            started = time.perf_counter()
            process.stdin.close()
        else:
            while True:
                line = process.stderr.readline()
                if not line:
                    raise SystemExit(f"the server did not start: {process.stderr.read().decode()[-2000:]}")
                if b"serving MCP at" in line:
                    break
            time.sleep(0.2)
            started = time.perf_counter()
            process.send_signal(signal.SIGTERM)
        code = process.wait(60)
        return time.perf_counter() - started, code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if not stream.closed:
                stream.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_write_docs_flag(parser, "mcp_exit")
    parser.add_argument("--rounds", type=int, default=5, help="exits timed per row (the median is reported)")
    parser.add_argument("--no-clr", action="store_true", help="only the rows without a .NET assembly")
    args = parser.parse_args()
    assembly = runtime = None
    if not args.no_clr:
        from tether_clr.clr import build_fixtures, load_runtime

        runtime = load_runtime().description
        assembly = str(build_fixtures())
    rows = []
    for transport, how in (("stdio", "stdin closed"), ("http", "SIGTERM")):
        for dll in ([None, assembly] if assembly else [None]):
            runs = [exit_seconds(transport, dll) for _ in range(args.rounds)]
            codes = sorted({code for _, code in runs})
            seconds = [s for s, _ in runs]
            target = f"≤ {TARGETS[transport]:g} s" if dll else "-"
            rows.append([transport, how, "the fixtures assembly" if dll else "none",
                         f"{statistics.median(seconds):.2f}", f"{max(seconds):.2f}", ", ".join(map(str, codes)), target])
    where = f"{runtime}; " if runtime else ""
    report = (f"Measured with `benchmarks/mcp_exit.py --write-docs` ({where}{machine_line()}; "
              f"{args.rounds} exits a row, no call in flight).\n\n")
    report += table(["transport", "let go by", ".NET assembly", "exit s, median", "exit s, max", "exit code", "target"],
                    rows)
    publish("mcp_exit", report, args.write_docs)


if __name__ == "__main__":
    main()
