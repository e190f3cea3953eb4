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
        # Two workers: the integration tests one after another on one of them (tests/conftest.py
        # groups them), the rest beside them on the other; `-n 0` runs the suite in one process.
        exec .venv/bin/pytest -ra --durations=25 -n 2 --dist loadgroup "$@"
        ;;
    *)
        echo "usage: ./bootstrap.sh demo|test [extra arguments]" >&2
        exit 2
        ;;
esac
