#!/usr/bin/env bash
# Extracts the definitions of the MCP gRPC binding (package
# model_context_protocol, service Mcp) from the published Python package
# mcp-grpc-transport-proto, pinned by version and sha256 below, into
# proto/third_party/mcp_grpc_transport_proto/mcp.binpb: a FileDescriptorSet of
# mcp_messages.proto and mcp.proto (the serialized descriptors the wheel's
# _pb2 modules carry) and the two well-known types they import. The wheel
# carries no .proto source, and its descriptors carry no comments; buf
# generates gen/model_context_protocol from this set (buf.gen.mcp.yaml, run by
# scripts/gen.sh). Run it only to move to another release: change the pins,
# run, then scripts/gen.sh, and commit all three. The package is MIT-licensed;
# its LICENSE is copied beside the set.
# Usage: scripts/mcp-grpc-proto.sh [--check]   (--check fails if the set would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

VERSION=0.2.0
WHEEL=mcp_grpc_transport_proto-$VERSION-py3-none-any.whl
SHA256=2cfe01a9b7f0c16c2fdb10195672818ff1636e7bcea7b3afe179558011e207dd
OUT=proto/third_party/mcp_grpc_transport_proto

scripts/pyenv.sh client # protobuf 7.x, new enough for the wheel's gencode
PY="$ROOT/.venv/client/bin/python"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$tmp" "mcp-grpc-transport-proto==$VERSION"
echo "$SHA256  $tmp/$WHEEL" | sha256sum -c --quiet -
mkdir -p "$tmp/pkg"
(cd "$tmp/pkg" && "$PY" -m zipfile -e "../$WHEEL" .)
# The _pb2 modules are imported from the unpacked wheel (they only register
# their descriptors); each file's descriptor is copied out as it was
# serialized, dependencies first, so the set is the same bytes on every run.
PYTHONPATH="$tmp/pkg" "$PY" - "$tmp/mcp.binpb" <<'PY'
import sys
from google.protobuf import descriptor_pb2
from mcp_grpc_transport_proto import mcp_messages_pb2, mcp_pb2

seen, fds = set(), descriptor_pb2.FileDescriptorSet()
def add(fd):
    if fd.name in seen:
        return
    for dep in fd.dependencies:
        add(dep)
    seen.add(fd.name)
    p = fds.file.add()
    fd.CopyToProto(p)
add(mcp_pb2.DESCRIPTOR)
assert [f.name for f in fds.file][-2:] == ["mcp_messages.proto", "mcp.proto"], [f.name for f in fds.file]
with open(sys.argv[1], "wb") as f:
    f.write(fds.SerializeToString(deterministic=True))
PY
cp "$tmp/pkg/mcp_grpc_transport_proto-$VERSION.dist-info/licenses/LICENSE" "$tmp/LICENSE"
if [[ "${1:-}" == "--check" ]]; then
  cmp -s "$tmp/mcp.binpb" "$OUT/mcp.binpb" && cmp -s "$tmp/LICENSE" "$OUT/LICENSE" || {
    echo "$OUT is out of date with mcp-grpc-transport-proto $VERSION: run scripts/mcp-grpc-proto.sh and commit" >&2
    exit 1
  }
  exit 0
fi
mkdir -p "$OUT"
cp "$tmp/mcp.binpb" "$tmp/LICENSE" "$OUT/"
