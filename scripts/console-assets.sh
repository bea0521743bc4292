#!/usr/bin/env bash
# Builds the operator console's assets (console/assets, embedded in the
# binary by go:embed) from console/web: the pages and style as they are, and
# src/main.js bundled with its pinned packages (preact, htm, uplot and its
# style sheet; package-lock.json)
# by the pinned esbuild into one minified app.js. The output is committed
# like gen/, so building toolsvc needs no Node; nothing is fetched at run time.
# Usage: scripts/console-assets.sh [--check]   (--check fails if console/assets would change)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WEB="$ROOT/console/web"
OUT="$ROOT/console/assets"
# Installed packages are recognised by the lock file's content, not its time:
# a fresh checkout (a git worktree) has a newer lock file than packages
# installed from the same one, and reinstalling them is needless.
stamp="$WEB/node_modules/.toolsvc-lock.sha256"
want=$(sha256sum "$WEB/package-lock.json" | cut -d' ' -f1)
if [[ ! -x "$WEB/node_modules/.bin/esbuild" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  (cd "$WEB" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi
build() { # $1: the directory to write
  mkdir -p "$1"
  cp "$WEB"/static/index.html "$WEB"/static/login.html "$WEB"/static/style.css "$WEB"/node_modules/uplot/dist/uPlot.min.css "$1"/
  # --legal-comments=eof keeps the packages' licence notices; no source map,
  # no timestamps: the same inputs give the same bytes.
  "$WEB/node_modules/.bin/esbuild" "$WEB/src/main.js" --bundle --minify --format=esm --target=es2020 \
    --legal-comments=eof --log-level=warning --outfile="$1/app.js"
}
if [[ "${1:-}" == "--check" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  build "$tmp"
  if ! diff -r "$tmp" "$OUT" >/dev/null; then
    diff -r "$tmp" "$OUT" | head -20 >&2 || true
    echo "console/assets is out of date with console/web: run scripts/console-assets.sh and commit" >&2
    exit 1
  fi
  exit 0
fi
rm -rf "$OUT"
build "$OUT"
