#!/usr/bin/env bash
# The whole test suite: unit, functional (in process, on SQLite, PostgreSQL
# and MariaDB) and integration (real server and agent processes, RabbitMQ,
# upstream placement). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-env.sh
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" -p no:cacheprovider "$@"
