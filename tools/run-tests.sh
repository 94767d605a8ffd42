#!/usr/bin/env bash
# The whole test suite: lint (ruff), types (mypy), unit, functional (in
# process, on SQLite, PostgreSQL and MariaDB), integration (real server and
# agent processes, RabbitMQ, libvirtd, upstream placement and its clients)
# and upstream placement's own functional suite against our server.
#
#   tools/run-tests.sh            everything (CI)
#   tools/run-tests.sh --quick    lint, types, unit, functional and property
#                                 tests on SQLite: no database server,
#                                 RabbitMQ or side virtualenv needed
#   tools/run-tests.sh --reference  the slow tier: nova's test_servers and
#                                 regressions/ with our server behind
#                                 upstream's PlacementFixture, beside upstream
#                                 (tests/integration/test_client_suites.py)
#
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-env.sh
.venv/bin/ruff check .
.venv/bin/mypy
if [ "${1:-}" = "--quick" ]; then
    shift
    export PLACEMENT_TEST_BACKENDS=sqlite
    exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" -p no:cacheprovider \
        -m 'not integration' tests/unit tests/functional tests/property "$@"
fi
if [ "${1:-}" = "--reference" ]; then
    shift
    exec .venv/bin/python -m pytest -p no:cacheprovider -m reference tests/integration "$@"
fi
# Two tests queued per worker at most: the worker running the longest test
# (nova's, collected first) leaves the rest to the others meanwhile.
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --maxschedchunk 2 -p no:cacheprovider \
    -m 'not reference' "$@"
