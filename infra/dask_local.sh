#!/usr/bin/env bash
# A local Dask scheduler and workers on 127.0.0.1, for `fastmice cluster --dask tcp://127.0.0.1:8786`.
#
#   infra/dask_local.sh [start] [--workers 2] [--threads 1] [--port 8786] [--dir DIR]
#   infra/dask_local.sh stop|status [--dir DIR]
#
# The workers run from the repository root with it on PYTHONPATH, so they can import
# fastmice/, storage/ and tasks/ when Prefect ships task runs to them. DIR (default
# <repo>/.prefect/dask) holds the pid files, logs and worker scratch space. The workers read
# infra/dask/fastmice.yaml (DASK_CONFIG).
#
# Note (PREFECT.md section 2.1): Prefect's DaskTaskRunner costs 100-170 ms per task run on a
# 2-core machine, and numpy already uses both cores from threads, so the default thread
# runner is faster here. Use Dask for more cores or more machines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=start
workers=2
threads=1
port=8786
dir=$repo/.prefect/dask
timeout=${FASTMICE_DASK_TIMEOUT:-60}

die() { echo "dask_local.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case $1 in
    start|stop|status) cmd=$1 ;;
    --workers) workers=${2:?--workers needs a number}; shift ;;
    --threads) threads=${2:?--threads needs a number}; shift ;;
    --port) port=${2:?--port needs a number}; shift ;;
    --dir) dir=${2:?--dir needs a directory}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
case $workers$threads$port in *[!0-9]*) die "--workers, --threads and --port must be integers" ;; esac

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
address=tcp://127.0.0.1:$port

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_group() {  # stop_group PIDFILE WHAT
  local pidfile=$1 what=$2 pid i
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  echo "stopping $what (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case $cmd in
  status)
    for p in scheduler workers; do
      if alive "$dir/$p.pid"; then echo "$p running (pid $(cat "$dir/$p.pid"))"
      else echo "$p not running"; fi
    done
    exit 0 ;;
  stop)
    stop_group "$dir/workers.pid" "dask workers"      # workers before the scheduler
    stop_group "$dir/scheduler.pid" "dask scheduler"
    exit 0 ;;
esac

dask_bin=${DASK:-$(command -v dask || true)}
[ -n "$dask_bin" ] && [ -x "$dask_bin" ] ||
  die "no dask executable; install the extra with: pip install -e \".[pipeline,dask]\""
python_bin=${PYTHON:-$(dirname "$dask_bin")/python}
[ -x "$python_bin" ] || python_bin=python3

if alive "$dir/scheduler.pid"; then
  echo "dask scheduler already running (pid $(cat "$dir/scheduler.pid")) at $address"
  exit 0
fi

cd "$repo"
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export DASK_CONFIG=$repo/infra/dask   # workers keep glibc's malloc thresholds (fastmice.yaml)

setsid "$dask_bin" scheduler --host 127.0.0.1 --port "$port" \
  --dashboard-address "127.0.0.1:$((port + 1))" >"$dir/scheduler.log" 2>&1 </dev/null &
echo $! >"$dir/scheduler.pid"
setsid "$dask_bin" worker "$address" --host 127.0.0.1 --nworkers "$workers" --nthreads "$threads" \
  --local-directory "$dir/worker-space" --death-timeout 60 >"$dir/workers.log" 2>&1 </dev/null &
echo $! >"$dir/workers.pid"

if ! "$python_bin" - "$address" "$workers" "$timeout" <<'PY'
import sys
from distributed import Client

address, n, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with Client(address, timeout=timeout) as client:
    client.wait_for_workers(n, timeout=timeout)
PY
then
  stop_group "$dir/workers.pid" "dask workers"
  stop_group "$dir/scheduler.pid" "dask scheduler"
  die "the cluster did not come up within ${timeout} s; see $dir/scheduler.log and $dir/workers.log"
fi
echo "dask scheduler at $address with $workers worker(s) x $threads thread(s);" \
  "dashboard http://127.0.0.1:$((port + 1))/status"
echo "use: fastmice cluster DATA --k K --dask $address"
echo "stop: infra/dask_local.sh stop${dir:+ --dir $dir}"
