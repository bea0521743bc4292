#!/usr/bin/env bash
# Installs the pinned code-generation tools into .bin/ (idempotent: a tool
# already at the pinned version is not rebuilt). Only the Go module proxy is
# needed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/.bin"
mkdir -p "$BIN"

BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

install() { # name module version
  local name=$1 module=$2 version=$3 stamp="$BIN/.$1.version"
  if [[ -x "$BIN/$name" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    return
  fi
  echo "installing $name $version" >&2
  GOBIN="$BIN" GOFLAGS=-mod=mod go install "$module@$version"
  echo "$version" >"$stamp"
}

install protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
install protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"
install buf github.com/bufbuild/buf/cmd/buf "$BUF_VERSION"
