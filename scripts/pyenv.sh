#!/usr/bin/env bash
# Creates (or brings up to date) the project's Python virtualenvs under .venv/.
# Each venv NAME is described by scripts/python/NAME.txt, a pinned pip
# requirements file; the venv is rebuilt when that file changes. Idempotent and
# quiet: a no-op when every venv matches its file.
#   scripts/pyenv.sh            all venvs of scripts/python/*.txt
#   scripts/pyenv.sh NAME...    only these; NAME may name a subfolder, e.g.
#                               bench/contextforge (scripts/python/bench/: the
#                               bench's peer gateways, never built by default)
# A requirements file whose first line is `# python: X.Y` is built with a
# Python X.Y interpreter (python X.Y on PATH, else pyenv's newest X.Y.*);
# without it, with $PYTHON (default python3). Exits 3 with a one-line reason on
# stderr when that interpreter is not on this machine.
# Prints nothing on success; the venvs' interpreters are .venv/NAME/bin/python.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PYTHON=${PYTHON:-python3}
names=("$@")
if ((${#names[@]} == 0)); then
  for f in scripts/python/*.txt; do names+=("$(basename "$f" .txt)"); done
fi

# find_python X.Y prints a Python X.Y interpreter's path.
find_python() {
  local want=$1 cand
  for cand in "python$want" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -V -r); do
    if command -v "$cand" >/dev/null 2>&1 &&
      [[ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "$want" ]]; then
      command -v "$cand"
      return 0
    fi
  done
  return 1
}

for name in "${names[@]}"; do
  req="scripts/python/$name.txt"
  [[ -f "$req" ]] || { echo "pyenv: no $req" >&2; exit 1; }
  venv=".venv/$name"
  stamp="$venv/.requirements"
  if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
    continue
  fi
  python=$PYTHON
  if [[ "$(head -n 1 "$req")" =~ ^#\ python:\ ([0-9]+\.[0-9]+)$ ]]; then
    want=${BASH_REMATCH[1]}
    python=$(find_python "$want") || {
      echo "pyenv: $req needs Python $want: no python$want on PATH and none under ${PYENV_ROOT:-$HOME/.pyenv}/versions" >&2
      exit 3
    }
  fi
  echo "creating Python venv $venv from $req" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$stamp"
done
