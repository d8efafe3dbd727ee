"""Compiling the project's C# from source into a cache (no binaries are committed).

Sources in ``bridge/`` and ``dotnet_fixtures/`` are compiled with Mono's ``mcs``
or, where a .NET SDK exists, ``dotnet build``. The output lives in a cache
directory keyed by a hash of the sources, the compiler and the references, so
an edit rebuilds and an unchanged tree never does. Builds are atomic and
serialised by a file lock, so parallel test processes do not race.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import TetherError

__all__ = ["ClrBuildError", "build_bridge", "build_fixtures", "cache_dir", "compile_library", "source_root"]

_MCS_REFERENCES = ("System.dll", "System.Core.dll")


class ClrBuildError(TetherError, RuntimeError):
    """The C# compiler is missing or rejected the sources; the message carries its output."""


def cache_dir() -> Path:
    """``$TETHER_CACHE_DIR``, else ``$XDG_CACHE_HOME/tether_clr``, else ``~/.cache/tether_clr``."""
    explicit = os.environ.get("TETHER_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tether_clr"


def source_root() -> Path:
    """Where ``bridge/`` and ``dotnet_fixtures/`` live: ``$TETHER_SOURCE_ROOT`` or the checkout."""
    explicit = os.environ.get("TETHER_SOURCE_ROOT")
    return Path(explicit) if explicit else Path(__file__).resolve().parents[2]


def _sources(folder: str) -> list[Path]:
    directory = source_root() / folder
    files = sorted(directory.glob("*.cs"))
    if not files:
        raise ClrBuildError(
            f"no C# sources in {directory}: tether_clr builds its .NET bridge from a source checkout "
            "(set TETHER_SOURCE_ROOT to one)"
        )
    return files


def _compiler() -> tuple[str, str]:
    dotnet = shutil.which("dotnet")
    if dotnet:
        sdks = subprocess.run([dotnet, "--list-sdks"], capture_output=True, text=True, check=False).stdout.strip()
        if sdks:
            return "dotnet", sdks.splitlines()[-1]
    mcs = shutil.which("mcs")
    if mcs:
        version = subprocess.run([mcs, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        return "mcs", version
    raise ClrBuildError("no C# compiler: install Debian's mono-devel (mcs) or a .NET SDK (dotnet build)")


def _digest(name: str, sources: Sequence[Path], references: Sequence[str | Path], compiler: tuple[str, str]) -> str:
    digest = hashlib.sha256()
    for part in (name, *compiler):
        digest.update(part.encode() + b"\0")
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    for reference in references:
        path = Path(reference)
        digest.update(str(reference).encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def _run(command: list[str], cwd: Path | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise ClrBuildError(f"{Path(command[0]).name} failed ({result.returncode}):\n{output}")


def _compile_mcs(name: str, sources: Sequence[Path], references: Sequence[str | Path], out: Path) -> None:
    command = ["mcs", "-target:library", "-langversion:7.2", "-optimize+", "-nologo", f"-out:{out}"]
    command += [f"-r:{ref}" for ref in (*_MCS_REFERENCES, *references)]
    _run(command + [str(source) for source in sources])


def _compile_dotnet(name: str, sources: Sequence[Path], references: Sequence[str | Path], out: Path) -> None:
    project_dir = out.parent / "project"
    project_dir.mkdir(parents=True, exist_ok=True)
    compile_items = "\n".join(f'    <Compile Include="{source}" />' for source in sources)
    reference_items = "\n".join(f'    <Reference Include="{Path(ref).stem}"><HintPath>{ref}</HintPath></Reference>' for ref in references)
    (project_dir / f"{name}.csproj").write_text(
        f"""<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup>
    <TargetFramework>{os.environ.get("TETHER_DOTNET_TFM", "netstandard2.0")}</TargetFramework>
    <LangVersion>7.3</LangVersion>
    <AssemblyName>{name}</AssemblyName>
    <EnableDefaultCompileItems>false</EnableDefaultCompileItems>
    <GenerateDocumentationFile>false</GenerateDocumentationFile>
  </PropertyGroup>
  <ItemGroup>
{compile_items}
{reference_items}
  </ItemGroup>
</Project>
""",
        encoding="utf-8",
    )
    _run(["dotnet", "build", "-c", "Release", "-nologo", "-o", str(out.parent / "bin")], cwd=project_dir)
    shutil.copyfile(out.parent / "bin" / f"{name}.dll", out)


def compile_library(name: str, sources: Sequence[Path], references: Sequence[str | Path] = ()) -> Path:
    """Compile ``sources`` into ``<cache>/<name>-<hash>/<name>.dll`` unless it is there already."""
    compiler = _compiler()
    target_dir = cache_dir() / f"{name}-{_digest(name, sources, references, compiler)}"
    target = target_dir / f"{name}.dll"
    if target.is_file():
        return target
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another process built it while we waited
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache_dir()))
        try:
            out = scratch / f"{name}.dll"
            if compiler[0] == "dotnet":
                _compile_dotnet(name, sources, references, out)
            else:
                _compile_mcs(name, sources, references, out)
            final = scratch / "final"
            final.mkdir()
            shutil.copyfile(out, final / f"{name}.dll")
            shutil.rmtree(target_dir, ignore_errors=True)  # a leftover without the DLL
            os.replace(final, target_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def build_bridge() -> Path:
    return compile_library("TetherBridge", _sources("bridge"))


def build_fixtures() -> Path:
    return compile_library("TetherFixtures", _sources("dotnet_fixtures"))
