#!/usr/bin/env bash
# The whole test suite, as CI runs it, from a clean clone:
#   - installs what the tests need (pinned codegen tools into .bin/, the
#     TypeScript MCP SDK into tests/node/node_modules),
#   - fails if gen/ drifts from proto/, if buf lint or gofmt complain,
#   - runs every Go test under -race (goleak checks in each package).
# Extra arguments go to `go test` (e.g. scripts/test.sh -run Storm ./tests).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

if [[ ! -d tests/node/node_modules/@modelcontextprotocol/sdk ]] || [[ tests/node/package-lock.json -nt tests/node/node_modules/.package-lock.json ]]; then
  (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
fi

scripts/gen.sh --check

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "$unformatted" ]]; then
  echo "gofmt needed on:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...

if [[ $# -gt 0 ]]; then
  go test -race -count=1 "$@"
else
  go test -race -count=1 ./...
fi
