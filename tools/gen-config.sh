#!/usr/bin/env bash
# Regenerate etc/tracker.conf.sample and etc/placement.conf.sample from the
# options in the code (oslo-config-generator). tests/unit/agent/
# test_config_samples.py fails when the committed samples are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
for generator in etc/*-config-generator.conf; do
    .venv/bin/oslo-config-generator --config-file "$generator"
done
