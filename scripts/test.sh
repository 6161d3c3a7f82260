#!/usr/bin/env bash
# Set up .venv and run the whole test suite (plus the linter). Used as-is by CI (.ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."
echo "scripts/test.sh: linter and the whole suite: about 30 minutes on 2 cores (more under load)" >&2
bash scripts/setup.sh || exit 1
# Headless Chromium opens the HTML run report in the tests (tests/report/). Installed where
# the platform allows (root with apt-get: CI, these machines); elsewhere that test is skipped
# and says why. Quiet, and a failure here never fails the test run.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (apt-get) for the report test ..."
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      -o DPkg::Lock::Timeout=300 chromium; } >/dev/null 2>&1 \
    || echo "warning: could not install chromium; the report test will be skipped" >&2
fi
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
