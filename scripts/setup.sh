#!/usr/bin/env bash
# Create .venv (if missing) and install fastmice with the pipeline, Dask, S3 and test extras,
# pinned by requirements/constraints.txt. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.fastmice-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements/constraints.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -c requirements/constraints.txt -e ".[pipeline,dask,s3,test]"
  touch "$stamp"
fi
# Headless Chromium opens the HTML run report in the tests (tests/report/). Installed where
# the platform allows (root with apt-get: CI, these machines); elsewhere that test is skipped
# and says why. Quiet, and a failure here never fails the set-up.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (apt-get) for the report test ..."
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      -o DPkg::Lock::Timeout=300 chromium; } >/dev/null 2>&1 \
    || echo "warning: could not install chromium; the report test will be skipped" >&2
fi
.venv/bin/python -c "import fastmice, storage, prefect; print('fastmice', fastmice.__version__, '| prefect', prefect.__version__)"
