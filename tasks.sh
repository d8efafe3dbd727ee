#!/usr/bin/env bash
# tether_clr's one entry point: each command installs what it needs, then runs.
#
#   ./tasks.sh demo    set up, then run the pipeline demo (Python and C# tools, SQLite log)
#   ./tasks.sh test    set up, then run the whole test suite
#   ./tasks.sh bench   set up, then run the benchmarks and rewrite the README tables
#   ./tasks.sh setup   only set up
#
# Set-up is idempotent: a .NET runtime and compiler (Debian's mono-devel when no
# .NET SDK is installed), the virtualenv in .venv, and the package with its test
# extras. TETHER_SKIP_APT=1 skips the apt step (the .NET tests then skip, saying why).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${TETHER_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

say() { printf '[tasks] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else say "need root to run: $*"; return 1; fi
}

apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

have_dotnet_sdk() { command -v dotnet >/dev/null 2>&1 && [ -n "$(dotnet --list-sdks 2>/dev/null)" ]; }

ensure_dotnet() {
  if have_dotnet_sdk; then say ".NET SDK found: $(dotnet --version)"; return; fi
  if command -v mono >/dev/null 2>&1 && command -v mcs >/dev/null 2>&1 && [ -e /usr/lib/libmono-2.0.so ]; then
    say "Mono found: $(mono --version | head -n 1)"; return
  fi
  if [ "${TETHER_SKIP_APT:-0}" = 1 ]; then say "no .NET runtime and TETHER_SKIP_APT=1: .NET tests will skip"; return; fi
  say "no .NET SDK: installing Debian's mono-devel (runtime + mcs compiler)"
  apt_install mono-devel
}

ensure_venv() {
  if ! [ -x "$PY" ]; then
    if ! python3 -m venv "$VENV" 2>/dev/null; then
      say "python3 -m venv failed: installing Debian's python3-venv"
      apt_install python3-venv
      python3 -m venv "$VENV"
    fi
  fi
  local stamp="$VENV/.tether-installed" want
  want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing tether_clr and its test extras into $VENV"
    "$PY" -m pip install -q --upgrade pip >/dev/null
    "$PY" -m pip install -q -e "$ROOT[test]"
    echo "$want" > "$stamp"
  fi
}

setup() { ensure_dotnet; ensure_venv; }

cmd="${1:-}"; shift || true
case "$cmd" in
  setup) setup ;;
  demo)  setup; cd "$ROOT"; exec "$PY" -m tether_clr.demo "$@" ;;
  test)  setup; cd "$ROOT"; exec "$PY" -m pytest "$@" ;;
  bench) setup; cd "$ROOT"; "$PY" benchmarks/pipeline.py --write-readme "$@"
         "$PY" benchmarks/catalog.py --write-readme "$@"
         if [ -f benchmarks/clr.py ]; then "$PY" benchmarks/clr.py --write-readme "$@"; fi ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
