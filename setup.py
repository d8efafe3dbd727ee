"""Ships the C# sources as package data: ``bridge/`` and ``dotnet_fixtures/`` are copied into
``tether_clr/clr/_sources`` of a built wheel, so a non-editable install compiles its .NET bridge
(and the demo's fixtures) with nothing else set. Everything else lives in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
CSHARP_FOLDERS = ("bridge", "dotnet_fixtures")


class BuildPyWithCSharp(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "tether_clr" / "clr" / "_sources"
        for folder in CSHARP_FOLDERS:
            for source in sorted((ROOT / folder).rglob("*.cs")):
                destination = target / source.relative_to(ROOT)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, destination)


setup(cmdclass={"build_py": BuildPyWithCSharp})
