#!/usr/bin/env bash
# Regenerates gen/ (Go) and clients/python/src/toolsvc/v1 (Python,
# scripts/gen-python.sh) from proto/ with the pinned tools, after linting.
# Usage: scripts/gen.sh [--check]   (--check fails if either would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
"$ROOT/scripts/tools.sh"
export PATH="$ROOT/.bin:$PATH"
buf format --exit-code --diff proto >/dev/null || { buf format --diff proto; echo "proto/ is not buf-formatted: run buf format -w proto" >&2; exit 1; }
buf lint
buf generate
scripts/gen-python.sh
if [[ "${1:-}" == "--check" ]]; then
  generated=(gen clients/python/src/toolsvc/v1)
  if [[ -n "$(git status --porcelain -- "${generated[@]}")" ]]; then
    git status --porcelain -- "${generated[@]}" >&2
    git --no-pager diff --stat -- "${generated[@]}" >&2
    echo "gen/ or clients/python/src/toolsvc/v1 is out of date with proto/: run scripts/gen.sh and commit" >&2
    exit 1
  fi
fi
