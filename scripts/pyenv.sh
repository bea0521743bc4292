#!/usr/bin/env bash
# Creates (or brings up to date) the project's Python virtualenvs under .venv/.
# Each venv NAME is described by scripts/python/NAME.txt, a pinned pip
# requirements file; the venv is rebuilt when that file changes. Idempotent and
# quiet: a no-op when every venv matches its file.
#   scripts/pyenv.sh            all venvs
#   scripts/pyenv.sh NAME...    only these
# Prints nothing on success; the venvs' interpreters are .venv/NAME/bin/python.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PYTHON=${PYTHON:-python3}
names=("$@")
if ((${#names[@]} == 0)); then
  for f in scripts/python/*.txt; do names+=("$(basename "$f" .txt)"); done
fi

for name in "${names[@]}"; do
  req="scripts/python/$name.txt"
  [[ -f "$req" ]] || { echo "pyenv: no $req" >&2; exit 1; }
  venv=".venv/$name"
  stamp="$venv/.requirements"
  if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
    continue
  fi
  echo "creating Python venv $venv from $req" >&2
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$stamp"
done
