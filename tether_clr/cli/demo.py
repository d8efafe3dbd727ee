"""The main job on its example: ``tether-clr run`` on ``examples/mixed.json``, then the log it wrote.

    python -m tether_clr.cli.demo [--db PATH] [--backend asyncio|trio] [--no-dotnet]
    python -m tether_clr.cli.demo --print-assembly   # build the C# tools, print the DLL's absolute path

``./tasks.sh demo`` runs this from a checkout. It compiles the example's C#
tools (``examples/dotnet/*.cs``, into the build cache) when a .NET runtime is
here, then runs, as a user would type them::

    tether-clr run examples/mixed.json --tools examples.mixed_tools:register \\
        --assembly <cache>/TetherExamples.dll --db PATH --approve auto
    tether-clr log show SESSION --db PATH
    tether-clr log verify --db PATH

The script mixes Python and C# tools, with a call a guard denies, a call that
needs approval (``--approve auto`` grants it), a C# tool that fails, an unknown
tool and malformed arguments. Without .NET (``--no-dotnet``, or none here) the
C# calls end UNKNOWN_TOOL, which the run shows like any other outcome.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tether_clr.cli import main as cli_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SESSION = "demo"


def build_example_assembly() -> Path:
    """Compile ``examples/dotnet/*.cs`` into the build cache (once per source digest); returns the DLL's path."""
    from tether_clr.clr import compile_library

    return compile_library("TetherExamples", sorted((EXAMPLES / "dotnet").glob("*.cs")))


def _cli(argv: list[str]) -> int:
    try:
        cli_main(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tether_clr.cli.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, help="SQLite file for the session log (default: a temp file)")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--no-dotnet", action="store_true", help="do not host the C# example tools")
    parser.add_argument("--print-assembly", action="store_true",
                        help="only build the example's C# tools and print the DLL's absolute path (for --assembly)")
    args = parser.parse_args(argv)
    if not (EXAMPLES / "mixed.json").is_file():
        print(f"the demo runs from a checkout: no examples at {EXAMPLES}", file=sys.stderr)
        return 2
    if args.print_assembly:
        try:
            print(build_example_assembly().resolve())
        except Exception as exc:  # no compiler here: said, exit 1
            print(f"cannot build the example's C# tools: {exc}", file=sys.stderr)
            return 1
        return 0
    db = str(args.db or Path(tempfile.mkdtemp(prefix="tether-demo-")) / "session.sqlite")
    run = ["run", str(EXAMPLES / "mixed.json"), "--tools", "examples.mixed_tools:register",
           "--db", db, "--approve", "auto", "--session", SESSION, "--backend", args.backend]
    if args.no_dotnet:
        print("C# tools skipped: --no-dotnet")
    else:
        try:
            from tether_clr.clr import load_runtime

            runtime = load_runtime()
            run += ["--assembly", str(build_example_assembly())]
            print(f"C# tools hosted on {runtime.description}")
        except Exception as exc:  # no runtime or compiler here: the demo still runs, the C# calls end UNKNOWN_TOOL
            print(f"C# tools skipped: {exc}")
    if str(EXAMPLES.parent) not in sys.path:
        sys.path.insert(0, str(EXAMPLES.parent))  # examples.mixed_tools is importable from any directory
    for command in (run, ["log", "show", SESSION, "--db", db], ["log", "verify", "--db", db]):
        print(f"\n$ tether-clr {' '.join(command)}", flush=True)
        code = _cli(command)
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
