#!/usr/bin/env bash
# Set up .venv and run the whole test suite (plus the linter). Used as-is by CI (.ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."
echo "scripts/test.sh: linter and the whole suite: about 10 minutes on 2 cores (more under load)" >&2
bash scripts/setup.sh || exit 1
# Prefect writes its database and settings under PREFECT_HOME: keep test runs out of ~/.prefect.
export PREFECT_HOME=${PREFECT_HOME:-$(mktemp -d)/prefect}
export PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/ruff check . || exit 1
.venv/bin/python -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"
