#!/usr/bin/env bash
# Regenerate etc/tracker.conf.sample, etc/placement.conf.sample and
# etc/policy.yaml.sample from the options and rules in the code
# (oslo-config-generator, oslopolicy-sample-generator). The tests fail when
# a committed sample is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
for generator in etc/*-config-generator.conf; do
    .venv/bin/oslo-config-generator --config-file "$generator"
done
.venv/bin/oslopolicy-sample-generator --config-file etc/placement-policy-generator.conf
