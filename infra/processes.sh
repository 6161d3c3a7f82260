# Shell functions shared by infra/local_server.sh and infra/serve.sh (sourced, not run).

stop_runs_of() {  # SIGKILL the flow-run processes serve process $1 left (FASTMICE_SERVED_BY)
  local f p
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}; p=${p%/environ}
    if { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qx "FASTMICE_SERVED_BY=$1"; then
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
}
