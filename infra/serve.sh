#!/usr/bin/env bash
# Serve the fastmice deployments (inbox-recluster on a schedule, cluster-on-demand) from one
# long-lived process: `python -m cli.serve` (docs/operations.md).
#
#   infra/serve.sh --inbox DIR --dataset NAME [--k K] [--store URL] [--groups M]
#                  [--random-state S] [any other option of `fastmice cluster`]
#                  [--cron "*/30 * * * *" | --interval SECONDS] [--dask ADDRESS]
#                  [--background] [--home DIR] [--port PORT]
#   infra/serve.sh stop [--home DIR]
#
# Schedules need a Prefect server. With PREFECT_API_URL set, that server is used; without
# it, a local one is started first (infra/local_server.sh start --home HOME_DIR --port PORT;
# default 4200, or a free port near it if 4200 stays taken; the UI is then at
# http://127.0.0.1:PORT): in the foreground it is stopped again when this script
# stops (Ctrl-C), with --background it keeps running and `infra/local_server.sh stop --home
# HOME_DIR` stops both, the serve process first.
# --background detaches the process (its own process group; pid in HOME_DIR/serve.pid, log
# in HOME_DIR/serve.log). HOME_DIR is --home, else $PREFECT_HOME, else <repo>/.prefect.
# Python is <repo>/.venv/bin/python (scripts/setup.sh) if it exists: no activated venv is
# needed. Options other than --background, --home, --port and stop go to `python -m cli.serve`
# (see its --help).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=infra/processes.sh
. "$repo/infra/processes.sh"
home=${PREFECT_HOME:-$repo/.prefect}
background=0
port=
stop=0
args=()

die() { echo "serve.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    stop) stop=1 ;;
    --background) background=1 ;;
    --home) home=${2:?--home needs a directory}; shift ;;
    --port) port=${2:?--port needs a number}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) args+=("$1") ;;
  esac
  shift
done

mkdir -p "$home"
home=$(cd "$home" && pwd)
pidfile=$home/serve.pid

if [ "$stop" = 1 ]; then
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    pid=$(cat "$pidfile")
    echo "stopping serve process (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  [ -f "$pidfile" ] && stop_runs_of "$(cat "$pidfile")"  # runs of a serve process killed -9
  rm -f "$pidfile"
  exit 0
fi

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  die "a serve process is already running (pid $(cat "$pidfile")); stop it with: infra/serve.sh stop --home $home"
fi
if [ -z "${PYTHON:-}" ] && [ -x "$repo/.venv/bin/python" ]; then PYTHON=$repo/.venv/bin/python; fi
python_bin=${PYTHON:-$(command -v python || command -v python3)}

started_server=0
if [ -z "${PREFECT_API_URL:-}" ]; then
  echo "PREFECT_API_URL is not set: starting a local Prefect server (infra/local_server.sh)"
  server_out=$("$repo/infra/local_server.sh" start --home "$home" ${port:+--port "$port"}) ||
    die "no local Prefect server (see above), or set PREFECT_API_URL to a running server"
  printf '%s\n' "$server_out"
  PREFECT_API_URL=$(printf '%s\n' "$server_out" | sed -n 's/^export PREFECT_API_URL=//p' | tail -n 1)
  [ -n "$PREFECT_API_URL" ] || die "infra/local_server.sh printed no PREFECT_API_URL"
  export PREFECT_API_URL
  started_server=1
fi

cd "$repo"
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
export PREFECT_SERVER_ANALYTICS_ENABLED=false
cmd=("$python_bin" -m cli.serve "${args[@]}")

if [ "$background" = 0 ]; then
  [ "$started_server" = 1 ] || exec "${cmd[@]}"
  # Stop the server this script started when the serve process ends (Ctrl-C included).
  trap 'true' INT TERM  # a handler, not '' (ignored): the serve process still gets Ctrl-C
  status=0
  "${cmd[@]}" || status=$?
  "$repo/infra/local_server.sh" stop --home "$home"
  exit "$status"
fi
setsid "${cmd[@]}" >"$home/serve.log" 2>&1 </dev/null &
echo $! >"$pidfile"
sleep 2
kill -0 "$(cat "$pidfile")" 2>/dev/null || { cat "$home/serve.log" >&2; die "the serve process exited"; }
echo "serving (pid $(cat "$pidfile")), log: $home/serve.log; stop: infra/serve.sh stop --home $home"
