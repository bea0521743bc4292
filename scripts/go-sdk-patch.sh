#!/usr/bin/env bash
# Re-creates third_party/go-sdk: github.com/modelcontextprotocol/go-sdk at the
# version go.mod requires (third_party/go-sdk/BASE_VERSION), without its tests,
# examples and docs, with third_party/go-sdk.patch applied. go.mod replaces the
# module with it (docs/go-sdk-decode-garbage.md says why and when to drop it).
#
#   scripts/go-sdk-patch.sh            # after changing the patch or the required version
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/modelcontextprotocol/go-sdk
version=$(go list -m -f '{{.Version}}' "$mod")
src=$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "go mod download $mod@$version gave no directory" >&2; exit 1; }
dst=third_party/go-sdk
rm -rf "$dst"
mkdir -p "$dst"
(cd "$src" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum -o -name LICENSE \) \
	! -path './examples/*' ! -path './conformance/*' ! -path './internal/docs/*' ! -path './internal/readme/*' \
	! -path '*/testdata/*' -print0) |
	while IFS= read -r -d '' f; do
		mkdir -p "$dst/$(dirname "$f")"
		cp "$src/$f" "$dst/$f"
	done
chmod -R u+w "$dst"
patch -s -p1 -d "$dst" < third_party/go-sdk.patch
echo "$version" > "$dst/BASE_VERSION"
echo "third_party/go-sdk: $mod $version with third_party/go-sdk.patch"
