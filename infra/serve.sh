#!/usr/bin/env bash
# Serve the fastmice deployments (inbox-recluster on a schedule, cluster-on-demand) from one
# long-lived process: `python -m cli.serve` (docs/operations.md).
#
#   infra/serve.sh --inbox DIR --dataset NAME [--k K] [--store URL] [--groups M]
#                  [--random-state S] [any other option of `fastmice cluster`]
#                  [--cron "*/30 * * * *" | --interval SECONDS] [--dask ADDRESS]
#                  [--background] [--home DIR]
#   infra/serve.sh stop [--home DIR]
#
# Needs PREFECT_API_URL (a server from infra/local_server.sh): with the ephemeral API the
# schedule lives only as long as this process and every run pays the API start-up again.
# --background detaches the process (its own process group; pid in HOME_DIR/serve.pid, log
# in HOME_DIR/serve.log) so that `infra/local_server.sh stop` stops it before the server.
# HOME_DIR is --home, else $PREFECT_HOME, else <repo>/.prefect. Options other than
# --background, --home and stop go to `python -m cli.serve` (see its --help).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
home=${PREFECT_HOME:-$repo/.prefect}
background=0
stop=0
args=()

die() { echo "serve.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    stop) stop=1 ;;
    --background) background=1 ;;
    --home) home=${2:?--home needs a directory}; shift ;;
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
    # A serve process whose server has gone ignores SIGTERM (PREFECT.md section 4).
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  exit 0
fi

[ -n "${PREFECT_API_URL:-}" ] ||
  die "PREFECT_API_URL is not set; start a server with infra/local_server.sh and export the URL it prints"
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  die "a serve process is already running (pid $(cat "$pidfile")); stop it with: infra/serve.sh stop"
fi
python_bin=${PYTHON:-$(command -v python || command -v python3)}

cd "$repo"
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
export PREFECT_SERVER_ANALYTICS_ENABLED=false
cmd=("$python_bin" -m cli.serve "${args[@]}")

if [ "$background" = 0 ]; then
  exec "${cmd[@]}"
fi
setsid "${cmd[@]}" >"$home/serve.log" 2>&1 </dev/null &
echo $! >"$pidfile"
sleep 2
kill -0 "$(cat "$pidfile")" 2>/dev/null || { cat "$home/serve.log" >&2; die "the serve process exited"; }
echo "serving (pid $(cat "$pidfile")), log: $home/serve.log; stop: infra/serve.sh stop --home $home"
