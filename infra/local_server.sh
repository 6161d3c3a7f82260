#!/usr/bin/env bash
# Start, stop or inspect a local Prefect server without Docker (docs/operations.md).
#
#   infra/local_server.sh [start] [--home DIR] [--port 4200] [--postgres [--pg-port 5433]]
#                         [--foreground]
#   infra/local_server.sh stop|status [--home DIR]
#
# start: runs `prefect server start --host 127.0.0.1` in the background (own process group),
#        waits for /api/health from that process (not another one on the port), and prints
#        the PREFECT_API_URL to export. A port busy for a moment (a server just stopped) is
#        tried again for FASTMICE_PORT_WAIT seconds (default 10); the default port 4200, if
#        still taken, gives way to a free one (said); a --port given is then refused. The
#        database is
#        SQLite at $HOME_DIR/prefect.db, or, with --postgres, a private PostgreSQL 15 cluster
#        ($HOME_DIR/pgdata, initdb + pg_ctl, listening on 127.0.0.1:<pg-port> only).
#        --foreground runs the server in this shell instead (for systemd or a terminal).
# stop:  stops the serve process started by infra/serve.sh --background (if any), then the
#        server, then PostgreSQL: workers before the server (PREFECT.md section 4).
#
# HOME_DIR is --home, else $PREFECT_HOME, else <repo>/.prefect (git-ignored). Environment:
# PREFECT (prefect executable, default: <repo>/.venv/bin/prefect, else `prefect` on PATH),
# PYTHON (default: the python beside it), PG_BIN (default /usr/lib/postgresql/15/bin),
# FASTMICE_PG_PASSWORD (default "prefect"), FASTMICE_SERVER_TIMEOUT (seconds to wait for
# health, default 120).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=infra/processes.sh
. "$repo/infra/processes.sh"
cmd=start
home=${PREFECT_HOME:-$repo/.prefect}
port=4200
port_given=0
postgres=0
pg_port=5433
foreground=0
timeout=${FASTMICE_SERVER_TIMEOUT:-120}
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
pg_password=${FASTMICE_PG_PASSWORD:-prefect}

die() { echo "local_server.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case $1 in
    start|stop|status) cmd=$1 ;;
    --home) home=${2:?--home needs a directory}; shift ;;
    --port) port=${2:?--port needs a number}; port_given=1; shift ;;
    --postgres) postgres=1 ;;
    --pg-port) pg_port=${2:?--pg-port needs a number}; shift ;;
    --foreground) foreground=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
case $port$pg_port in *[!0-9]*) die "--port and --pg-port must be integers" ;; esac

mkdir -p "$home"
home=$(cd "$home" && pwd)
pidfile=$home/server.pid
portfile=$home/server.port
pgdata=$home/pgdata
export PREFECT_HOME=$home
export PREFECT_SERVER_ANALYTICS_ENABLED=false
api_url="http://127.0.0.1:$port/api"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Run a command as the postgres user when we are root (initdb refuses to run as root).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop_group() {  # stop_group PIDFILE WHAT: TERM the process group, KILL after 20 s
  local pidfile=$1 what=$2 pid i
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  echo "stopping $what (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$what ignored SIGTERM; sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}


pg_socket_dir() {  # a Unix socket path must stay under ~107 bytes
  if [ ${#pgdata} -lt 80 ]; then echo "$pgdata"; else echo /tmp; fi
}

pg_running() { [ -f "$pgdata/postmaster.pid" ] && as_pg "$pg_bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; }

if [ "$cmd" = status ]; then
  if alive "$pidfile"; then echo "server running (pid $(cat "$pidfile"), http://127.0.0.1:$(cat "$portfile" 2>/dev/null || echo "$port")/api); see $home/server.log"
  else echo "server not running (PREFECT_HOME=$home)"; fi
  if [ -d "$pgdata" ]; then
    if pg_running; then echo "postgres running ($pgdata)"; else echo "postgres stopped ($pgdata)"; fi
  fi
  exit 0
fi

if [ "$cmd" = stop ]; then
  served=$(cat "$home/serve.pid" 2>/dev/null || true)
  stop_group "$home/serve.pid" "serve process"       # serve/worker before the server
  [ -n "$served" ] && stop_runs_of "$served"          # runs of a serve process killed -9
  stop_group "$pidfile" "prefect server"
  rm -f "$portfile"
  if [ -d "$pgdata" ] && pg_running; then
    echo "stopping postgres ($pgdata)"
    as_pg "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
  fi
  exit 0
fi

# ------------------------------------------------------------------ start
# The repository's .venv (scripts/setup.sh) first: no activated venv is needed.
if [ -z "${PREFECT:-}" ] && [ -x "$repo/.venv/bin/prefect" ]; then PREFECT=$repo/.venv/bin/prefect; fi
prefect_bin=${PREFECT:-$(command -v prefect || true)}
[ -n "$prefect_bin" ] && [ -x "$prefect_bin" ] ||
  die "no prefect executable; run bash scripts/setup.sh (makes .venv) or pip install -e \".[pipeline]\""
python_bin=${PYTHON:-$(dirname "$prefect_bin")/python}
[ -x "$python_bin" ] || python_bin=python3

if alive "$pidfile"; then
  [ -f "$portfile" ] && api_url="http://127.0.0.1:$(cat "$portfile")/api"
  echo "prefect server already running (pid $(cat "$pidfile")); log: $home/server.log"
  echo "export PREFECT_API_URL=$api_url"
  exit 0
fi

# port_check PORT [WAIT]: exit 0 when a server can listen on PORT now, or within WAIT
# seconds. The probe sets SO_REUSEADDR as the server does: connections of a server that has
# just stopped (TIME_WAIT, 60 s) do not make a port busy. Otherwise it prints who listens
# there (when this user can see it). port_check --free prints a free port.
port_check() {
  "$python_bin" - "$@" <<'PY'
import os, socket, sys, time

def can_listen(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True

def listener(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in fds):
                return f"pid {pid}: " + open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:80]
        except OSError:
            continue
    return "a process of another user" if inodes else "nothing listening: just released?"

if sys.argv[1] == "--free":
    for port in range(4201, 4300):
        if can_listen(port):
            print(port)
            sys.exit(0)
    sys.exit(1)
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2] if len(sys.argv) > 2 else 0)
while not can_listen(port):
    if time.monotonic() >= deadline:
        print(listener(port))
        sys.exit(1)
    time.sleep(0.5)
PY
}

# owns_port PID PORT: whether process PID listens on 127.0.0.1:PORT (the health check's
# answer is then this server's, not another one's that holds the port).
owns_port() {
  "$python_bin" - "$1" "$2" <<'PY'
import os, sys
pid, port = sys.argv[1], int(sys.argv[2])
inodes = set()
for row in open("/proc/net/tcp").read().splitlines()[1:]:
    f = row.split()
    if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
        inodes.add(f"socket:[{f[9]}]")
try:
    links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
except OSError:
    sys.exit(1)
sys.exit(0 if links & inodes else 1)
PY
}

wait_s=${FASTMICE_PORT_WAIT:-10}
if ! holder=$(port_check "$port" "$wait_s"); then
  if [ "$port_given" = 1 ]; then
    die "port $port on 127.0.0.1 is in use after ${wait_s} s ($holder); pick another with --port"
  fi
  free=$(port_check --free) || die "port $port on 127.0.0.1 is in use ($holder), and so are 4201-4299; pick one with --port"
  echo "port $port on 127.0.0.1 is in use ($holder): using $free"
  port=$free
  api_url="http://127.0.0.1:$port/api"
fi

if [ "$postgres" = 1 ]; then
  if [ ! -x "$pg_bin/initdb" ]; then
    cat >&2 <<EOF
local_server.sh: PostgreSQL 15 was not found at $pg_bin.
Install it (Debian/Ubuntu) with:
    sudo apt-get update && sudo apt-get install -y postgresql-15
(or set PG_BIN to the directory holding initdb and pg_ctl), or run without --postgres
to use SQLite.
EOF
    exit 1
  fi
  sock=$(pg_socket_dir)
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    echo "initialising PostgreSQL cluster in $pgdata"
    mkdir -p "$pgdata"
    chmod 700 "$pgdata"
    pwfile=$(mktemp)
    trap 'rm -f "$pwfile"' EXIT
    printf '%s\n' "$pg_password" >"$pwfile"
    if [ "$(id -u)" = 0 ]; then
      chown postgres: "$pgdata" "$pwfile"
      runuser -u postgres -- test -w "$pgdata" ||
        die "the postgres user cannot reach $pgdata; use --home under a directory it can traverse (chmod o+x the parents)"
    fi
    as_pg "$pg_bin/initdb" -D "$pgdata" -U prefect --pwfile="$pwfile" -E UTF8 --no-locale \
      --auth-local=trust --auth-host=scram-sha-256 >"$home/initdb.log" 2>&1 ||
      die "initdb failed; see $home/initdb.log"
  fi
  if ! pg_running; then
    port_check "$pg_port" "$wait_s" >/dev/null || die "port $pg_port on 127.0.0.1 is in use; pick another with --pg-port"
    as_pg "$pg_bin/pg_ctl" -D "$pgdata" -l "$pgdata/postgres.log" -w -t 60 \
      -o "-p $pg_port -k $sock -c listen_addresses=127.0.0.1" start >/dev/null ||
      die "postgres did not start; see $pgdata/postgres.log"
  fi
  if ! as_pg "$pg_bin/psql" -h "$sock" -p "$pg_port" -U prefect -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'prefect'" | grep -q 1; then
    as_pg "$pg_bin/createdb" -h "$sock" -p "$pg_port" -U prefect prefect
  fi
  export PREFECT_SERVER_DATABASE_CONNECTION_URL="postgresql+asyncpg://prefect:$pg_password@127.0.0.1:$pg_port/prefect"
  echo "database: PostgreSQL 15 at 127.0.0.1:$pg_port (data in $pgdata)"
else
  echo "database: SQLite at $home/prefect.db"
fi

server_cmd=("$prefect_bin" server start --host 127.0.0.1 --port "$port" --analytics-off)
if [ "$foreground" = 1 ]; then
  echo "export PREFECT_API_URL=$api_url"
  exec "${server_cmd[@]}"
fi

setsid "${server_cmd[@]}" >"$home/server.log" 2>&1 </dev/null &
echo $! >"$pidfile"
echo "$port" >"$portfile"
echo "starting prefect server (pid $(cat "$pidfile")), log: $home/server.log"

start=$SECONDS
# Healthy means: this server answers, from its own socket (another process that took the
# port meanwhile would answer too, and this server would then fail to listen).
until owns_port "$(cat "$pidfile")" "$port" &&
    "$python_bin" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" \
    "$api_url/health" 2>/dev/null; do
  alive "$pidfile" || { tail -n 20 "$home/server.log" >&2; rm -f "$pidfile" "$portfile"; die "the server exited; see $home/server.log"; }
  [ $((SECONDS - start)) -lt "$timeout" ] || die "no /api/health after ${timeout} s; see $home/server.log"
  sleep 1
done
echo "healthy after $((SECONDS - start)) s. In the shells that run flows:"
echo "export PREFECT_API_URL=$api_url"
