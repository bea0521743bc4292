#!/usr/bin/env bash
# Builds the pinned kube-apiserver and etcd from the Go module proxy into
# .bin/ (the tests against a real API server use them: kubediscovery/ and
# tests/kube*), version-stamped, rebuilt only when a pin changes. No prebuilt
# download: only the Go module proxy is needed. scripts/test.sh calls this.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod requires its staging
# modules (k8s.io/api, k8s.io/client-go, …) at v0.0.0 and replaces them with
# ./staging/src/…, which the module zip leaves out. So a throwaway module
# under .cache/ requires k8s.io/kubernetes and replaces each staging module
# with its published release of the same minor (v1.37.2 ↔ v0.37.2). etcd's
# server module replaces its siblings with ../ paths the same way, so it gets
# a throwaway module of its own requiring each sibling at the same version.
#
# Cold build (empty module and build caches) on the 2-core CI box: see
# docs/kubernetes.md ("Tests against a real API server"); warm: no build at
# all (the stamps match).
#
# Prints nothing when both binaries are current.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/.bin"
CACHE="$ROOT/.cache/kube-bins"
mkdir -p "$BIN" "$CACHE"

KUBERNETES_VERSION=v1.37.2 # the release of the k8s.io/* modules in go.mod (v0.37.2) and of scripts/k8s-check.sh's schemas
STAGING_VERSION=v0.${KUBERNETES_VERSION#v1.}
ETCD_VERSION=v3.7.3

# The staging modules k8s.io/kubernetes's go.mod replaces with ./staging.
STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api cri-client
  cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission
  sample-apiserver sample-cli-plugin sample-controller streaming)

current() { # name version
  [[ -x "$BIN/$1" && -f "$BIN/.$1.version" && "$(cat "$BIN/.$1.version")" == "$2" ]]
}

# build name version dir package [ldflags]: go build package in the throwaway
# module dir into .bin/name, then stamp it. CGO off: static binaries, as
# upstream releases them.
build() {
  local name=$1 version=$2 dir=$3 pkg=$4 ldflags=${5:-} start=$SECONDS
  echo "building $name $version from the Go module proxy (a cold build takes minutes)" >&2
  (cd "$dir" && GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg")
  mv "$BIN/$name.tmp" "$BIN/$name"
  echo "$version" >"$BIN/.$name.version"
  echo "built $name $version in $((SECONDS - start)) s" >&2
}

# The binary reports its version (kube-apiserver --version, /version) from
# these, as a release build's hack/lib/version.sh sets them; the stamp names
# the build recipe too, so changing it rebuilds.
minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
KUBE_LDFLAGS="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
KUBE_STAMP="$KUBERNETES_VERSION (version ldflags)"
if ! current kube-apiserver "$KUBE_STAMP"; then
  dir="$CACHE/kube-apiserver-$KUBERNETES_VERSION"
  mkdir -p "$dir"
  {
    echo "module toolsvc.invalid/kube-apiserver-build"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    for m in "${STAGING[@]}"; do echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
    echo ")"
  } >"$dir/go.mod"
  build kube-apiserver "$KUBE_STAMP" "$dir" k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_LDFLAGS"
fi

if ! current etcd "$ETCD_VERSION"; then
  dir="$CACHE/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  {
    echo "module toolsvc.invalid/etcd-build"
    echo
    echo "go 1.26.0"
    echo
    echo "require ("
    echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do echo "	go.etcd.io/etcd/$m $ETCD_VERSION"; done
    echo ")"
  } >"$dir/go.mod"
  build etcd "$ETCD_VERSION" "$dir" go.etcd.io/etcd/server/v3
fi
