#!/usr/bin/env bash
# Regenerates, from proto/ with the pinned tools and after linting:
#   gen/                            Go (buf, protoc-gen-go, protoc-gen-go-grpc)
#   gen/model_context_protocol      Go of the MCP gRPC binding, from the descriptor set
#                                   scripts/mcp-grpc-proto.sh extracts (buf.gen.mcp.yaml)
#   clients/python/src/toolsvc/v1   Python (scripts/gen-python.sh)
#   clients/typescript/src/gen      TypeScript (ts-proto, pinned in clients/typescript/package.json)
# Usage: scripts/gen.sh [--check]   (--check fails if any of them would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
"$ROOT/scripts/tools.sh"
export PATH="$ROOT/.bin:$PATH"
buf format --exit-code --diff proto >/dev/null || { buf format --diff proto; echo "proto/ is not buf-formatted: run buf format -w proto" >&2; exit 1; }
buf lint
buf generate
buf generate proto/third_party/mcp_grpc_transport_proto/mcp.binpb --template buf.gen.mcp.yaml \
  --path mcp_messages.proto --path mcp.proto
scripts/gen-python.sh
TS=clients/typescript
if [[ ! -x "$TS/node_modules/.bin/protoc-gen-ts_proto" || "$TS/package-lock.json" -nt "$TS/node_modules/.package-lock.json" ]]; then
  (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error)
fi
buf generate --template "$TS/buf.gen.yaml"
if [[ "${1:-}" == "--check" ]]; then
  scripts/mcp-grpc-proto.sh --check
  generated=(gen clients/python/src/toolsvc/v1 "$TS/src/gen")
  if [[ -n "$(git status --porcelain -- "${generated[@]}")" ]]; then
    git status --porcelain -- "${generated[@]}" >&2
    git --no-pager diff --stat -- "${generated[@]}" >&2
    echo "generated code is out of date with proto/: run scripts/gen.sh and commit" >&2
    exit 1
  fi
fi
