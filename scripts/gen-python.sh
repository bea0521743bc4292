#!/usr/bin/env bash
# Regenerates the Python client's protobuf and gRPC modules
# (clients/python/src/toolsvc/v1/) from proto/ with the pinned toolchain of
# scripts/python/client.txt: grpcio-tools (protoc and the gRPC Python plugin)
# and mypy-protobuf (typed .pyi stubs for messages and for the gRPC stubs).
# scripts/gen.sh runs this; `scripts/gen.sh --check` fails on drift.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/pyenv.sh client
PY="$ROOT/.venv/client/bin/python"
OUT=clients/python/src/toolsvc/v1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wkt=$("$PY" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
mapfile -t protos < <(cd proto && ls toolsvc/v1/*.proto)
(cd proto && "$PY" -m grpc_tools.protoc -I . -I "$wkt" \
  --python_out="$tmp" --grpc_python_out="$tmp" \
  --plugin=protoc-gen-mypy="$ROOT/.venv/client/bin/protoc-gen-mypy" --mypy_out="$tmp" \
  --plugin=protoc-gen-mypy_grpc="$ROOT/.venv/client/bin/protoc-gen-mypy_grpc" --mypy_grpc_out="$tmp" \
  "${protos[@]}") 2> >(grep -v '^Writing mypy to ' >&2)
printf '"""Generated from proto/toolsvc/v1 by scripts/gen-python.sh. Do not edit."""\n' >"$tmp/toolsvc/v1/__init__.py"
mkdir -p "$OUT"
rm -f "$OUT"/*.py "$OUT"/*.pyi
cp "$tmp"/toolsvc/v1/* "$OUT"/
