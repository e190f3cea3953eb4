#!/usr/bin/env bash
# The two commands of the README:
#   ./bootstrap.sh demo   install what the quickstart needs, run it, print the report's path
#   ./bootstrap.sh test   install everything the tests use, run the whole test suite
# Both are idempotent: a second call skips what is installed already.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$repo"
case "${1:-}" in
    demo)
        shift
        scripts/install.sh --for quickstart
        exec .venv/bin/toolbench run scenarios/quickstart.yaml "$@"
        ;;
    test)
        shift
        scripts/install.sh --for tests
        exec .venv/bin/pytest -ra --durations=25 "$@"
        ;;
    *)
        echo "usage: ./bootstrap.sh demo|test [extra arguments]" >&2
        exit 2
        ;;
esac
