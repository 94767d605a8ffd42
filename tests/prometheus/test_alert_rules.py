"""The alerting rules in etc/prometheus, run by Prometheus' own promtool
(Debian's prometheus package, bindep.txt): they load, they fire when they
should and not otherwise (alerts_test.yaml), and every metric they use is
one the agent or the server exports."""
import os
import re
import subprocess

import prometheus_client
import yaml

from placement_server import metrics as server_metrics
from tracker import metrics

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, '..', '..', 'etc', 'prometheus', 'tracker-alerts.yaml')


def promtool(*args):
    return subprocess.run(['promtool'] + list(args), capture_output=True, text=True,
                          timeout=120)


def test_rules_load():
    out = promtool('check', 'rules', RULES)
    assert out.returncode == 0, out.stdout + out.stderr


def test_rules_fire_as_specified():
    out = promtool('test', 'rules', os.path.join(HERE, 'alerts_test.yaml'))
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'SUCCESS' in out.stdout


def _exported():
    names = set()
    registries = [metrics.Metrics().registry, prometheus_client.REGISTRY]
    assert server_metrics.REQUESTS is not None      # the server's, on the default registry
    for registry in registries:
        for family in registry.collect():
            names.update(sample.name for sample in family.samples)
            # a labelled counter with no child yet has no sample
            names.add(family.name + ('_total' if family.type == 'counter' else ''))
    return names


def test_rules_use_metrics_that_exist():
    with open(RULES) as f:
        rules = [r for g in yaml.safe_load(f)['groups'] for r in g['rules']]
    used = {name for r in rules
            for name in re.findall(r'\b((?:tracker|placement)_[a-z_]+)', r['expr'])}
    assert used and used <= _exported(), used - _exported()
