#!/usr/bin/env bash
# Set up .venv, generate a synthetic 3-view dataset and cluster it end to end through the
# Prefect pipeline (embedded ephemeral API, no server), then rerun it to show the reuse.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/python scripts/make_demo_data.py demo-data --new new-data
.venv/bin/fastmice cluster demo-data --name demo --store .fastmice "$@"
echo "--- the same command again: every group comes from the store ---"
.venv/bin/fastmice cluster demo-data --name demo --store .fastmice "$@"
