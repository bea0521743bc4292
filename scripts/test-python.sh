#!/usr/bin/env bash
# The Python client package's checks, as CI runs them (scripts/test.sh):
#   1. mypy --strict over clients/python (package and tests), in .venv/client;
#   2. `pip install ./clients/python` into a fresh virtualenv (.venv/client-install),
#      the way a user installs it (dependencies held to scripts/python/client.txt's
#      versions), plus pytest;
#   3. pytest against that installed package (not the source tree), with real
#      toolsvc processes built from this checkout in front of real MCP upstreams.
# pytest's "no tests collected" (exit 5) is a failure here, like any other.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/pyenv.sh client

(cd clients/python && "$ROOT/.venv/client/bin/mypy" --cache-dir "$ROOT/.cache/mypy")

venv="$ROOT/.venv/client-install"
rm -rf "$venv" clients/python/build
python3 -m venv "$venv"
# The standard install; -c holds the dependencies at the versions pinned for
# .venv/client, so a new grpcio on PyPI cannot change a CI run unseen.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input \
  -c scripts/python/client.txt ./clients/python pytest pytest-timeout
rm -rf clients/python/build clients/python/src/toolsvc.egg-info

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/toolsvc" ./cmd/toolsvc

set +e
(cd clients/python && TOOLSVC_BIN="$bin/toolsvc" TOOLSVC_EXPECT_INSTALLED=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider tests)
rc=$?
set -e
if ((rc == 5)); then
  echo "test-python: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
