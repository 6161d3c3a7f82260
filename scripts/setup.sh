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
.venv/bin/python -c "import fastmice, storage, prefect; print('fastmice', fastmice.__version__, '| prefect', prefect.__version__)"
