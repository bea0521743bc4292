#!/usr/bin/env bash
# Installs what the end-to-end and interop tests need. Idempotent and quiet;
# a no-op (well under a second) when everything is already there.
#   - Debian packages (apt-get, as root or through sudo): python3-grpcio and
#     protoc + grpc_python_plugin (+ the well-known .protos) for the Python
#     example client; redis-server for the shared token store's tests
#     (tokenstore/redisstore: a real server, killed with real signals);
#     chromium for the operator console's browser tests (tests/console_test.go,
#     driven with chromedp);
#   - grpcurl into .bin/ (the README's one-liners are tested with it) and
#     grpc-health-probe (the health tests use it);
#   - Python virtualenvs under .venv/ (scripts/pyenv.sh: the official Python
#     MCP SDK 2.x and 1.x, PyPI MCP servers; .venv/tasks for fastmcp-tasks,
#     the 2026-07-28 tasks extension; .venv/client for the Python client
#     package, its code generator, mypy and pytest);
#   - npm ci in tests/node (TypeScript MCP SDK, server-everything, the MCP
#     conformance suite and the Node 22 it needs), clients/typescript (the
#     @toolsvc/client package, then built: examples/node uses it) and
#     examples/node.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

APT_PACKAGES=(python3-grpcio protobuf-compiler protobuf-compiler-grpc libprotobuf-dev redis-server chromium)
GRPCURL_VERSION=v1.9.4

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  echo "installing Debian packages: ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BIN="$ROOT/.bin"
mkdir -p "$BIN"
stamp="$BIN/.grpcurl.version"
if [[ ! -x "$BIN/grpcurl" || ! -f "$stamp" || "$(cat "$stamp")" != "$GRPCURL_VERSION" ]]; then
  echo "installing grpcurl $GRPCURL_VERSION" >&2
  GOBIN="$BIN" GOFLAGS=-mod=mod go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"
  echo "$GRPCURL_VERSION" >"$stamp"
fi
HEALTH_PROBE_VERSION=v0.4.63
stamp="$BIN/.grpc-health-probe.version"
if [[ ! -x "$BIN/grpc-health-probe" || ! -f "$stamp" || "$(cat "$stamp")" != "$HEALTH_PROBE_VERSION" ]]; then
  echo "installing grpc-health-probe $HEALTH_PROBE_VERSION" >&2
  GOBIN="$BIN" GOFLAGS=-mod=mod go install "github.com/grpc-ecosystem/grpc-health-probe@$HEALTH_PROBE_VERSION"
  echo "$HEALTH_PROBE_VERSION" >"$stamp"
fi

for dir in tests/node clients/typescript examples/node; do
  if [[ ! -f "$dir/node_modules/.package-lock.json" || "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
    echo "npm ci in $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  if [[ "$dir" == clients/typescript && ( ! -f "$dir/dist/index.js" || -n "$(find "$dir/src" "$dir/package.json" -newer "$dir/dist/index.js" -print -quit)" ) ]]; then
    echo "npm run build in $dir" >&2
    (cd "$dir" && npm run --silent build)
  fi
done

scripts/pyenv.sh
