#!/usr/bin/env bash
# Installs what toolbench needs: its Python packages into .venv inside the checkout, then the
# load tools, targets and test helpers by `toolbench install --for PURPOSE`: each tool as its
# adapter declares (Adapter.install in adapters/: apt, go install, its install script), the
# targets and test helpers as toolbench/install/recipes.py lists them.
#   scripts/install.sh                    everything the tests use (the default)
#   scripts/install.sh --for quickstart   only what scenarios/quickstart.yaml needs
# Idempotent: a second call checks and returns in a few seconds.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
purpose=tests
if [ "${1:-}" = "--for" ] && [ -n "${2:-}" ]; then purpose="$2"; shift 2; fi
case "$#:$purpose" in
    0:quickstart|0:tests) ;;
    *) echo "usage: scripts/install.sh [--for quickstart|tests]" >&2; exit 2 ;;
esac
say() { printf '[install] %s\n' "$*" >&2; }

# What the venv needs before toolbench can run, and only that: python3-venv, and gcc, libc6-dev
# and python3-dev because pip builds uWSGI from source, against the venv's own Python. The
# tools' packages are `toolbench install`'s, below: they are known only to the adapters, which
# need the venv to be read.
apt_packages=(python3-venv gcc libc6-dev python3-dev)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        say "not root: install these first, then run this again:"
        say "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
        exit 1
    fi
    say "apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    "$python" -m venv "$venv"
fi
# Re-install only when the dependency list or the engine's C source changed (an editable
# install builds the extension in place once; it does not follow later edits).
stamp="$venv/.toolbench-installed"
want="$(cat "$repo/pyproject.toml" "$repo"/toolbench/engine/_churn*.[ch] | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing Python packages into $venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -e "$repo[all,test]"
    # The packages built from binary wheels (Parquet export, HDR histograms, the engine's
    # parser) must import, or the stamp would record a broken install as done.
    "$venv/bin/python" -c "import pyarrow, hdrh, httptools, uvloop" \
        || { say "the Python packages did not install whole; run this again"; exit 1; }
    # Optional: without it the engine runs its connections (keep-alive off and on) on its Python
    # paths, at more CPU per request.
    "$venv/bin/python" -c "import toolbench.engine._churn" 2>/dev/null \
        || say "the engine's C connection path did not build (gcc, python3-dev?): its connections run in Python"
    echo "$want" > "$stamp"
fi

# The tools, targets and test helpers: their apt packages (as root; not root, it prints the one
# `sudo apt-get install` line for all of them and exits 1), go modules into
# .tools/go/<name>-<version>/ and the adapters' install scripts into .tools/.
"$venv/bin/toolbench" install --for "$purpose" >&2
say "ready"
