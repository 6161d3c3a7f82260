#!/usr/bin/env bash
# A local S3-compatible server on 127.0.0.1, for `fastmice ... --store s3://BUCKET/PATH`
# without a cloud account (moto's server, installed by the test extra; s3fs by the s3 extra).
#
#   infra/s3_local.sh [start] [--port 9000] [--host 127.0.0.1] [--dir DIR]
#   infra/s3_local.sh stop|status [--dir DIR]
#
# The server keeps every bucket in memory: stopping it forgets them. It listens on 127.0.0.1
# unless --host says otherwise. DIR (default <repo>/.prefect/s3) holds its pid file and log.
# The store reaches it through botocore's standard variables, which this script prints
# without values: the local server accepts any credentials, and no secret is ever printed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=start
host=127.0.0.1
port=9000
dir=$repo/.prefect/s3
timeout=${FASTMICE_S3_TIMEOUT:-60}

die() { echo "s3_local.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case $1 in
    start|stop|status) cmd=$1 ;;
    --port) port=${2:?--port needs a number}; shift ;;
    --host) host=${2:?--host needs an address}; shift ;;
    --dir) dir=${2:?--dir needs a directory}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
case $port in *[!0-9]*) die "--port must be an integer" ;; esac

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile=$dir/server.pid
alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case $cmd in
  status)
    if alive; then echo "S3 server running (pid $(cat "$pidfile")); log: $dir/server.log"
    else echo "S3 server not running"; fi
    exit 0 ;;
  stop)
    if alive; then
      pid=$(cat "$pidfile")
      echo "stopping the S3 server (pid $pid)"
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    exit 0 ;;
esac

python_bin=${PYTHON:-$repo/.venv/bin/python}
[ -x "$python_bin" ] || python_bin=python3
"$python_bin" -c "import moto.server, flask" 2>/dev/null ||
  die "moto's server is not installed: pip install -e \".[pipeline,s3,test]\""
if alive; then
  echo "S3 server already running (pid $(cat "$pidfile")) at http://$host:$port"
  exit 0
fi

setsid "$python_bin" -m moto.server -H "$host" -p "$port" >"$dir/server.log" 2>&1 </dev/null &
echo $! >"$pidfile"
start=$SECONDS
until "$python_bin" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" \
    "http://$host:$port/moto-api/" 2>/dev/null; do
  alive || die "the server exited; see $dir/server.log"
  [ $((SECONDS - start)) -lt "$timeout" ] || die "no answer after ${timeout} s; see $dir/server.log"
  sleep 0.5
done
echo "S3-compatible server at http://$host:$port (pid $(cat "$pidfile")). In the shells that run fastmice:"
echo "  export AWS_ENDPOINT_URL_S3=http://$host:$port"
echo "  export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_DEFAULT_REGION=us-east-1   (any values)"
echo "then: fastmice cluster DATA --store s3://fastmice/store   (the bucket is created on the first write)"
echo "stop: infra/s3_local.sh stop${dir:+ --dir $dir}"
