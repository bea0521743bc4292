#!/usr/bin/env bash
# Validates the Helm chart offline, as CI runs it (scripts/test.sh calls this):
#   - installs helm and kubeconform into .bin/ (pinned, version-stamped, only
#     rebuilt when the pin changes),
#   - generates strict JSON schemas for Kubernetes $K8S_VERSION from the
#     swagger.json inside the k8s.io/kubernetes Go module (the only source
#     reachable here: kubeconform's default schema download is not) and caches
#     them under .cache/ (git-ignored),
#   - helm lint --strict, helm template and kubeconform -strict for the default
#     values and every deploy/helm/toolsvc/ci/*-values.yaml,
#   - and checks that the checks bite: a wrong type must fail kubeconform, a
#     grace period shorter than the drain bound must fail helm template.
# Only the Go module proxy is needed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN="$ROOT/.bin"
CACHE="$ROOT/.cache"
CHART=deploy/helm/toolsvc
mkdir -p "$BIN" "$CACHE"

HELM_VERSION=v4.3.2
KUBECONFORM_VERSION=v0.8.0
K8S_VERSION=v1.37.2

install() { # name module version (as scripts/tools.sh)
  local name=$1 module=$2 version=$3 stamp="$BIN/.$1.version"
  if [[ -x "$BIN/$name" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    return
  fi
  echo "installing $name $version" >&2
  GOBIN="$BIN" GOFLAGS=-mod=mod go install "$module@$version"
  echo "$version" >"$stamp"
}
install helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION"
install kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"

PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
# The cache key includes the generator, so changing it regenerates.
gen_hash=$(sha256sum deploy/schemas/swagger2kubeconform.py | cut -c1-12)
SCHEMAS="$CACHE/k8s-schemas/$K8S_VERSION-strict-$gen_hash"
if [[ ! -f "$SCHEMAS/.complete" ]]; then
  echo "generating Kubernetes $K8S_VERSION schemas into ${SCHEMAS#"$ROOT"/}" >&2
  # Outside this module, so go.mod/go.sum are not touched.
  moddir=$(cd "$CACHE" && GOFLAGS=-mod=mod GO111MODULE=on go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$SCHEMAS"
  "$PY" deploy/schemas/swagger2kubeconform.py "$moddir/api/openapi-spec/swagger.json" "$SCHEMAS" --strict
  touch "$SCHEMAS/.complete"
fi

export HELM_CACHE_HOME="$CACHE/helm/cache" HELM_CONFIG_HOME="$CACHE/helm/config" HELM_DATA_HOME="$CACHE/helm/data"
kubeconform() {
  "$BIN/kubeconform" -strict -summary -output text \
    -schema-location "$SCHEMAS/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    -schema-location "$ROOT/deploy/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}

value_sets=("")
for f in "$CHART"/ci/*-values.yaml; do value_sets+=("$f"); done
for vf in "${value_sets[@]}"; do
  args=()
  [[ -n $vf ]] && args=(-f "$vf")
  echo "chart: ${vf:-default values}" >&2
  "$BIN/helm" lint --strict "$CHART" "${args[@]}" >/dev/null
  "$BIN/helm" template toolsvc "$CHART" --namespace tools "${args[@]}" | kubeconform -
done

# The checks must bite.
if "$BIN/helm" template toolsvc "$CHART" --set-string replicaCount=two 2>/dev/null | kubeconform - >/dev/null 2>&1; then
  echo "k8s-check: kubeconform accepted replicas: \"two\"" >&2
  exit 1
fi
if "$BIN/helm" template toolsvc "$CHART" --set terminationGracePeriodSeconds=5 >/dev/null 2>&1; then
  echo "k8s-check: helm template accepted a grace period shorter than the drain bound" >&2
  exit 1
fi
# Discovery's RBAC: list and watch only, on exactly the enabled sources.
rbac=$("$BIN/helm" template toolsvc "$CHART" --namespace tools -f "$CHART/ci/kubernetes-cluster-values.yaml" --show-only templates/rbac.yaml)
verbs=$(grep -E '^ *- (get|list|watch|create|update|patch|delete|deletecollection|"\*")$' <<<"$rbac" | tr -d ' -' | sort -u | tr '\n' ' ')
if [[ "$verbs" != "list watch " ]] || grep -q services <<<"$rbac" || ! grep -q mcpservers <<<"$rbac" || ! grep -q 'kind: ClusterRole$' <<<"$rbac"; then
  echo "k8s-check: discovery RBAC is not list/watch on mcpservers alone (verbs: $verbs):" >&2
  echo "$rbac" >&2
  exit 1
fi
if "$BIN/helm" template toolsvc "$CHART" --set kubernetes.enabled=true --set 'kubernetes.sources={pods}' >/dev/null 2>&1; then
  echo "k8s-check: helm template accepted kubernetes.sources=[pods]" >&2
  exit 1
fi
echo "k8s-check: chart valid against Kubernetes $K8S_VERSION schemas" >&2
