#!/usr/bin/env bash
# Regenerates gen/ (Go) and clients/typescript/src/gen/ (TypeScript, for
# @toolsvc/client) from proto/ with the pinned tools, after linting.
# Usage: scripts/gen.sh [--check]   (--check fails if either would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
"$ROOT/scripts/tools.sh"
export PATH="$ROOT/.bin:$PATH"
buf format --exit-code --diff proto >/dev/null || { buf format --diff proto; echo "proto/ is not buf-formatted: run buf format -w proto" >&2; exit 1; }
buf lint
buf generate
# TypeScript: ts-proto is pinned in clients/typescript/package.json.
TS=clients/typescript
if [[ ! -x "$TS/node_modules/.bin/protoc-gen-ts_proto" || "$TS/package-lock.json" -nt "$TS/node_modules/.package-lock.json" ]]; then
  (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error)
fi
buf generate --template "$TS/buf.gen.yaml"
if [[ "${1:-}" == "--check" ]]; then
  if [[ -n "$(git status --porcelain -- gen "$TS/src/gen")" ]]; then
    git status --porcelain -- gen "$TS/src/gen" >&2
    git --no-pager diff --stat -- gen "$TS/src/gen" >&2
    echo "gen/ or $TS/src/gen/ is out of date with proto/: run scripts/gen.sh and commit" >&2
    exit 1
  fi
fi
