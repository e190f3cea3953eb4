#!/usr/bin/env bash
# Install oha (default 1.16.0) with `cargo install --locked` from crates.io into
# ${TOOLBENCH_TOOLS}/cargo/oha-<version>/bin/oha.
#
# Idempotent: when the stamp names this version and bin/oha exists it exits 0 at once.
# Otherwise it builds into a temporary root next to the target, checks that
# `oha --version` names the version, writes the stamp last and renames the root into place.
# The build cache lives outside the checkout (CARGO_TARGET_DIR, by default
# ~/.cache/toolbench/cargo-target), so a fresh clone on the same machine reuses the
# compiled dependencies instead of building about 480 crates again.
# The last line printed on success is always the install path.
#
# Environment:
#   TOOLBENCH_TOOLS         tools directory (required; `toolbench install oha` sets it)
#   OHA_VERSION             oha version (default: 1.16.0)
#   TOOLBENCH_CARGO_TARGET  cargo's build directory (default: ~/.cache/toolbench/cargo-target)
#   TOOLBENCH_CARGO_TIMEOUT_S  bound on the build, in seconds (default: 2700)
#   TOOLBENCH_FORCE=1       rebuild even if the stamp is present
set -euo pipefail

# `toolbench install` always sets it (toolbench.contract.toolsdir); this script is package data,
# in a checkout or an installed wheel alike, so there is no folder of its own to fall back on.
TOOLS_DIR="${TOOLBENCH_TOOLS:?set TOOLBENCH_TOOLS to the tools folder, or run: toolbench install oha}"
VERSION="${OHA_VERSION:-1.16.0}"
TARGET_DIR="${TOOLBENCH_CARGO_TARGET:-${HOME}/.cache/toolbench/cargo-target}"
# A build that hangs (a stalled download) must not hold CI forever; one cut short resumes from the
# build cache on the next call, but what was compiling then starts again: on 2 cores shared with other
# builds the first one took over 20 minutes here, so the bound is generous.
BUILD_TIMEOUT_S="${TOOLBENCH_CARGO_TIMEOUT_S:-2700}"

log() { printf 'install_oha: %s\n' "$*" >&2; }
die() { printf 'install_oha: ERROR: %s\n' "$*" >&2; exit 1; }

[[ "${VERSION}" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "OHA_VERSION must be X.Y.Z, got '${VERSION}'"
[[ "${BUILD_TIMEOUT_S}" =~ ^[1-9][0-9]*$ ]] || die "TOOLBENCH_CARGO_TIMEOUT_S must be whole seconds, got '${BUILD_TIMEOUT_S}'"
mkdir -p "${TOOLS_DIR}/cargo"
TOOLS_DIR="$(cd "${TOOLS_DIR}" && pwd)"
DEST="${TOOLS_DIR}/cargo/oha-${VERSION}"

is_complete() {
    [[ -x "${1}/bin/oha" && -f "${1}/.toolbench-complete" ]] &&
        grep -qx "version=${VERSION}" "${1}/.toolbench-complete"
}

if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${DEST}"; then
    printf '%s\n' "${DEST}"
    exit 0
fi

command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH (install Rust >= 1.88, e.g. with rustup)"

# Serialise concurrent installers of the same version.
exec 9>"${TOOLS_DIR}/cargo/.oha-${VERSION}.lock"
flock 9
if [[ "${TOOLBENCH_FORCE:-0}" != 1 ]] && is_complete "${DEST}"; then
    printf '%s\n' "${DEST}"
    exit 0
fi

# Temp root on the same filesystem as the target so the final rename is atomic.
STAGE="$(mktemp -d "${TOOLS_DIR}/cargo/.oha-${VERSION}.tmp.XXXXXX")"
OLD=""
cleanup() {
    rm -rf "${STAGE}"
    if [[ -n "${OLD}" ]]; then rm -rf "${OLD}"; fi
}
trap cleanup EXIT

mkdir -p "${TARGET_DIR}"
log "cargo install oha ${VERSION} (build cache ${TARGET_DIR})"
start=$SECONDS
CARGO_TARGET_DIR="${TARGET_DIR}" timeout "${BUILD_TIMEOUT_S}" \
    cargo install --locked --quiet --version "=${VERSION}" --root "${STAGE}/root" oha \
    || die "cargo install oha ${VERSION} failed or took over ${BUILD_TIMEOUT_S}s"
log "built in $((SECONDS - start))s"

got="$("${STAGE}/root/bin/oha" --version 2>&1 || true)"
[[ "${got}" == "oha ${VERSION}" ]] || die "the built oha says '${got}', not 'oha ${VERSION}'"
printf 'version=%s\n' "${VERSION}" > "${STAGE}/root/.toolbench-complete"

if [[ -e "${DEST}" ]]; then
    OLD="${STAGE}/old"
    mv "${DEST}" "${OLD}"
fi
mv "${STAGE}/root" "${DEST}"
printf '%s\n' "${DEST}"
