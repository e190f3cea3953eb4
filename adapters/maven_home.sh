# Sourced by the install scripts that build a tool home from Maven Central artifacts
# (jmeter/install.sh, gatling/install.sh, as ${SCRIPT_DIR}/../maven_home.sh): the steps they share.
# TOOLS_DIR is set before.

# lock_home NAME: serialises concurrent installers of the same home (file descriptor 9).
lock_home() {
    if command -v flock >/dev/null 2>&1; then
        exec 9>"${TOOLS_DIR}/.${1}.lock"
        flock 9
    fi
}

# stage_home NAME: sets STAGE, a temporary folder next to the target (the same filesystem, so
# that the final rename is atomic), removed on exit with any old home set aside meanwhile.
stage_home() {
    STAGE="$(mktemp -d "${TOOLS_DIR}/.${1}.tmp.XXXXXX")"
    OLD=""
    trap 'rm -rf "${STAGE}"; if [[ -n "${OLD}" ]]; then rm -rf "${OLD}"; fi' EXIT
}

# resolve POM OUT LOGS ARG...: runs maven on POM with ARG... (goals and options), offline first
# (fast when the local repository is warm: $TOOLBENCH_MAVEN_REPO or maven's own), then online
# with OUT emptied; on failure the log's tail goes to stderr and it returns 1.
resolve() {
    local pom=$1 out=$2 logs=$3
    shift 3
    local args=(-B -q -f "${pom}")
    if [[ -n "${TOOLBENCH_MAVEN_REPO:-}" ]]; then
        args+=("-Dmaven.repo.local=${TOOLBENCH_MAVEN_REPO}")
    fi
    mvn -o "${args[@]}" "$@" >"${logs}/mvn-offline.log" 2>&1 && return 0
    rm -rf "${out}" && mkdir -p "${out}"
    mvn "${args[@]}" "$@" >"${logs}/mvn.log" 2>&1 && return 0
    tail -n 40 "${logs}/mvn.log" >&2
    return 1
}

# move_into_place NEW HOME: a rename within TOOLS_DIR; an incomplete old home is set aside first.
move_into_place() {
    if [[ -e "${2}" ]]; then
        OLD="${STAGE}/old"
        mv "${2}" "${OLD}"
    fi
    mv "${1}" "${2}"
}
