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

from tether_clr.foundations.errors import TetherError

__all__ = [
    "ClrBuildError",
    "build_bridge",
    "build_fixtures",
    "build_meai_fixtures",
    "cache_dir",
    "compile_library",
    "source_root",
]

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
    """Where ``bridge/`` and ``dotnet_fixtures/`` live.

    ``$TETHER_SOURCE_ROOT`` when set; else the copy a wheel ships as package
    data (``tether_clr/clr/_sources``); else the source checkout this module sits in.
    """
    explicit = os.environ.get("TETHER_SOURCE_ROOT")
    if explicit:
        return Path(explicit)
    packaged = Path(__file__).resolve().parent / "_sources"
    return packaged if (packaged / "bridge").is_dir() else Path(__file__).resolve().parents[2]


def _sources(folder: str) -> list[Path]:
    directory = source_root() / folder
    files = sorted(directory.glob("*.cs"))
    if not files:
        raise ClrBuildError(
            f"no C# sources in {directory}: reinstall tether_clr from its wheel or a checkout, "
            "or set TETHER_SOURCE_ROOT to a checkout"
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
        path = _reference_path(reference)
        digest.update(str(reference).encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def _reference_path(reference: str | Path) -> Path:
    """A reference is a path, or ``alias=path`` (an mcs extern alias)."""
    return Path(str(reference).split("=", 1)[-1]) if "=" in str(reference) else Path(reference)


def _run(command: list[str], cwd: Path | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise ClrBuildError(f"{Path(command[0]).name} failed ({result.returncode}):\n{output}")


def _compile_mcs(name: str, sources: Sequence[Path], references: Sequence[str | Path], out: Path) -> None:
    command = ["mcs", "-target:library", "-langversion:7.2", "-optimize+", "-nologo", f"-out:{out}"]
    command += [f"-r:{ref}" for ref in (*_MCS_REFERENCES, *references)]
    # mcs resolves netstandard-built references (Microsoft.Extensions.AI) through Mono's facade.
    facade = _mono_netstandard_facade() if references else None
    if facade is not None and not any(_reference_path(ref).name == "netstandard.dll" for ref in references):
        command.append(f"-r:{facade}")
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


def _mono_netstandard_facade() -> Path | None:
    mcs = shutil.which("mcs")
    if mcs is None:
        return None
    for prefix in (Path(mcs).resolve().parents[1], Path("/usr")):
        facade = prefix / "lib" / "mono" / "4.5" / "Facades" / "netstandard.dll"
        if facade.is_file():
            return facade
    return None


def build_bridge() -> Path:
    return compile_library("TetherBridge", _sources("bridge"))


def build_fixtures() -> Path:
    return compile_library("TetherFixtures", _sources("dotnet_fixtures"))


# What the MEAI fixtures reference. System.Threading.Tasks.Extensions and System.Memory come
# under extern aliases: their ValueTask / Span clash with the ones in Mono's mscorlib, yet mcs
# must see them to resolve System.Text.Json's overloads.
_MEAI_REFERENCES = (
    "Microsoft.Extensions.AI.Abstractions.dll",
    "Microsoft.Extensions.AI.dll",
    "System.Text.Json.dll",
    "Microsoft.Bcl.AsyncInterfaces.dll",
    "System.Diagnostics.DiagnosticSource.dll",  # TracedTools: a tool's own ActivitySource
)


def build_meai_fixtures(meai_dir: str | os.PathLike[str]) -> Path:
    """Compile ``dotnet_fixtures/meai/`` (real AIFunctions) against the MEAI assemblies in ``meai_dir``."""
    folder = Path(meai_dir).resolve()
    aliased = {"STTE": "System.Threading.Tasks.Extensions.dll", "SM": "System.Memory.dll"}
    missing = [name for name in (*_MEAI_REFERENCES, *aliased.values()) if not (folder / name).is_file()]
    if missing:
        raise ClrBuildError(f"{folder} lacks {', '.join(missing)}: point it at the Microsoft.Extensions.AI assemblies")
    references: list[str | Path] = [folder / name for name in _MEAI_REFERENCES]
    references += [f"{alias}={folder / name}" for alias, name in aliased.items()]
    return compile_library("TetherMeaiFixtures", _sources("dotnet_fixtures/meai"), references)
