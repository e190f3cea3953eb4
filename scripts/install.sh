#!/usr/bin/env bash
# Installs what toolbench and its tests need: the load tools and servers from
# Debian's packages, and the Python packages into .venv inside the checkout.
# Idempotent: a second call checks and returns in a few seconds.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
# gcc, libc6-dev and python3-dev: pip builds uWSGI from source, against the venv's own Python.
apt_packages=(siege apache2-utils wrk hey nghttp2-client httperf nginx openssh-server iproute2 procps python3-venv
              openjdk-17-jre-headless maven chromium gcc libc6-dev python3-dev)
say() { printf '[install] %s\n' "$*" >&2; }

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
# Re-install only when the dependency list changed.
stamp="$venv/.toolbench-installed"
want="$(sha256sum "$repo/pyproject.toml" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing Python packages into $venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -e "$repo[test]"
    # The packages built from binary wheels (Parquet export, HDR histograms, the engine's
    # parser) must import, or the stamp would record a broken install as done.
    "$venv/bin/python" -c "import pyarrow, hdrh, httptools, uvloop" \
        || { say "the Python packages did not install whole; run this again"; exit 1; }
    echo "$want" > "$stamp"
fi

# Go tools, built by `go install` from the Go module proxy into .tools/go/<name>-<version>/, once:
# a second call finds the binary and skips (about a minute each the first time, on 2 cores).
go_tools=(github.com/codesenberg/bombardier@v1.2.6 github.com/tsenart/vegeta/v12@v12.13.0)
tools="${TOOLBENCH_TOOLS:-$repo/.tools}"
for module in "${go_tools[@]}"; do
    name="${module%@*}"; name="${name##*/}"; version="${module##*@v}"
    # A module path ending in its major version (.../vegeta/v12) names its binary by the part before.
    if [[ "$name" =~ ^v[0-9]+$ ]]; then name="${module%@*}"; name="${name%/*}"; name="${name##*/}"; fi
    dest="$tools/go/$name-$version"
    [ -x "$dest/$name" ] && continue
    if ! command -v go >/dev/null; then
        say "go is not installed: $name is not built (its adapter reports it missing)"
        continue
    fi
    say "go install $module"
    rm -rf "$dest.partial" && mkdir -p "$dest.partial"
    GOBIN="$dest.partial" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "$module"
    mv "$dest.partial" "$dest"
done

if [ -x "$repo/scripts/install_jmeter.sh" ]; then
    "$repo/scripts/install_jmeter.sh" >/dev/null
fi
# oha, built by `cargo install` (minutes the first time; its build cache outlives the clone).
if command -v cargo >/dev/null; then
    "$repo/scripts/install_oha.sh" >/dev/null
else
    say "cargo is not installed: oha is not built (its adapter reports it missing)"
fi
say "ready"
