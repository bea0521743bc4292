#!/usr/bin/env bash
# Regenerates gen/ from proto/ with the pinned tools, after linting.
# Usage: scripts/gen.sh [--check]   (--check fails if gen/ would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
"$ROOT/scripts/tools.sh"
export PATH="$ROOT/.bin:$PATH"
buf format --exit-code --diff proto >/dev/null || { buf format --diff proto; echo "proto/ is not buf-formatted: run buf format -w proto" >&2; exit 1; }
buf lint
buf generate
if [[ "${1:-}" == "--check" ]]; then
  if [[ -n "$(git status --porcelain -- gen)" ]]; then
    git status --porcelain -- gen >&2
    git --no-pager diff --stat -- gen >&2
    echo "gen/ is out of date with proto/: run scripts/gen.sh and commit" >&2
    exit 1
  fi
fi
