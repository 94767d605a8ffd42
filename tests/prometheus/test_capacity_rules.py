"""The capacity rules in etc/prometheus/placement-capacity.yaml under
promtool, fed with series from real scrapes of the server.

A placement app is built in process on SQLite with a [capacity] flavor
list, given providers, then scraped through the metrics port's own WSGI
app twice: before and after allocations fill it. The two scrapes become
promtool's input series (the first for ten minutes, the second for thirty
after), as two placement servers reporting the same cloud; the test file
promtool runs is written from them with the values the rules must record
and the alerts that must (and must not) fire, worked out by hand from the
inventories below.
"""
import json
import os
import subprocess
import uuid

from prometheus_client import parser
import pytest
import webob
import yaml

from placement_server import metrics
from placement_server import middleware
from placement_server import wsgi
from placement_server.capacity import metrics as capacity_metrics
from placement_server.db import api as db_api
from placement_server.db import migration
from tests.functional import client as client_mod

HERE = os.path.dirname(os.path.abspath(__file__))
ETC = os.path.join(HERE, '..', '..', 'etc')
RULES = os.path.abspath(os.path.join(ETC, 'prometheus', 'placement-capacity.yaml'))
DASHBOARD = os.path.join(ETC, 'grafana', 'placement-capacity.json')

FLAVORS = ['m1.large: VCPU=2, MEMORY_MB=2048', 'ram512: MEMORY_MB=512']


def promtool(*args):
    return subprocess.run(['promtool'] + list(args), capture_output=True, text=True,
                          timeout=120)


def _rules():
    with open(RULES) as f:
        return [r for g in yaml.safe_load(f)['groups'] for r in g['rules']]


def _scrape():
    """{series text: value} of the capacity series in one scrape of the
    metrics port's app."""
    resp = webob.Request.blank(metrics.PATH).get_response(metrics.scrape_app)
    assert resp.status_int == 200
    found = {}
    for family in parser.text_string_to_metric_families(resp.text):
        for sample in family.samples:
            if sample.name.startswith('openstack_placement_'):
                labels = ','.join('%s=%s' % (k, json.dumps(v))
                                  for k, v in sorted(sample.labels.items()))
                found['%s{%s}' % (sample.name, labels)] = sample.value
    return found


@pytest.fixture
def scrapes(tmp_path):
    """(scrape of an empty cloud, scrape of the same cloud filled)."""
    db = db_api.Database('sqlite:///%s' % (tmp_path / 'placement.sqlite'))
    migration.sync(db)
    conf = client_mod.make_conf({('capacity', 'flavor'): FLAVORS})
    api = client_mod.Client(middleware.wrap(wsgi.make_app(conf, db), conf, db))
    try:
        # Capacity: VCPU 16 + 8 x 2.0 = 32, MEMORY_MB 16384 + (17408 - 1024) = 32768.
        cn1 = client_mod.make_provider(api, 'cn1', {
            'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 16384}})
        cn2 = client_mod.make_provider(api, 'cn2', {
            'VCPU': {'total': 8, 'allocation_ratio': 2.0},
            'MEMORY_MB': {'total': 17408, 'reserved': 1024}})
        empty = _scrape()
        for rp, vcpu in ((cn1, 15), (cn2, 14)):
            resp = api.put('/allocations/%s' % uuid.uuid4(), {
                'allocations': {rp: {'resources': {'VCPU': vcpu, 'MEMORY_MB': 2048}}},
                'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
                version='1.28')
            assert resp.status_int == 204, resp.body
        return empty, _scrape()
    finally:
        capacity_metrics._INSTALLED.clear()
        db.dispose()


def _input_series(empty, filled):
    """promtool's input: each series 10 minutes as the first scrape says,
    then 30 as the second, from two servers (instances p1 and p2)."""
    assert set(filled) >= set(empty)
    out = []
    for instance in ('p1', 'p2'):
        for series in sorted(filled):
            before = '%s' % empty[series] if series in empty else '_'
            out.append({'series': series.replace(
                '{', '{instance="%s",job="placement",' % instance, 1).replace(',}', '}'),
                'values': '%sx9 %sx30' % (before, filled[series])})
    return out


def _alert(name, labels, summary, description):
    return {'exp_labels': dict(labels, severity='warning'),
            'exp_annotations': {'summary': summary, 'description': description}}


def _description(rule_name, **labels):
    text = next(r for r in _rules() if r.get('alert') == rule_name)['annotations']['description']
    for key, value in labels.items():
        text = text.replace('{{ $labels.%s }}' % key, value)
    return text


def _test_file(tmp_path, empty, filled):
    def values(expr, at, samples):
        return {'expr': expr, 'eval_time': at, 'exp_samples': [
            {'labels': labels, 'value': value} for labels, value in samples]}

    # The filled cloud: VCPU 29 of 32 allocated, MEMORY_MB 4096 of 32768.
    # Free VCPU 1 + 2 (largest 2), MEMORY_MB 14336 + 14336 (largest 14336).
    # m1.large fits 0 on cn1 (1 VCPU free), 1 on cn2; ram512 28 + 28.
    recorded = [
        values('placement:resource_used:ratio', '5m', [
            ('placement:resource_used:ratio{resourcetype="MEMORY_MB"}', 0),
            ('placement:resource_used:ratio{resourcetype="VCPU"}', 0)]),
        values('placement:resource_used:ratio', '30m', [
            ('placement:resource_used:ratio{resourcetype="MEMORY_MB"}', 0.125),
            ('placement:resource_used:ratio{resourcetype="VCPU"}', 0.90625)]),
        values('placement:flavor_fits:sum', '5m', [
            ('placement:flavor_fits:sum{flavor="m1.large"}', 16),
            ('placement:flavor_fits:sum{flavor="ram512"}', 64)]),
        values('placement:flavor_fits:sum', '30m', [
            ('placement:flavor_fits:sum{flavor="m1.large"}', 1),
            ('placement:flavor_fits:sum{flavor="ram512"}', 56)]),
        values('placement:resource_free:sum', '30m', [
            ('placement:resource_free:sum{resourcetype="MEMORY_MB"}', 28672),
            ('placement:resource_free:sum{resourcetype="VCPU"}', 3)]),
        values('placement:resource_largest_free:max', '30m', [
            ('placement:resource_largest_free:max{resourcetype="MEMORY_MB"}', 14336),
            ('placement:resource_largest_free:max{resourcetype="VCPU"}', 2)]),
        values('placement:resource_fragmentation:ratio', '5m', [
            ('placement:resource_fragmentation:ratio{resourcetype="MEMORY_MB"}', 0.5),
            ('placement:resource_fragmentation:ratio{resourcetype="VCPU"}', 0.5)]),
        values('placement:resource_fragmentation:ratio', '30m', [
            ('placement:resource_fragmentation:ratio{resourcetype="MEMORY_MB"}', 0.5),
            ('placement:resource_fragmentation:ratio{resourcetype="VCPU"}', 1 - 2 / 3)]),
    ]
    full = 'PlacementResourceClassNearlyFull'
    few = 'PlacementFlavorFitsFew'
    alerts = [
        {'eval_time': '9m', 'alertname': full, 'exp_alerts': []},
        {'eval_time': '9m', 'alertname': few, 'exp_alerts': []},
        # filled at 10m: pending for 15 minutes
        {'eval_time': '20m', 'alertname': full, 'exp_alerts': []},
        {'eval_time': '20m', 'alertname': few, 'exp_alerts': []},
        {'eval_time': '30m', 'alertname': full, 'exp_alerts': [_alert(
            full, {'resourcetype': 'VCPU'}, 'VCPU is 90.62% allocated',
            _description(full, resourcetype='VCPU'))]},
        {'eval_time': '30m', 'alertname': few, 'exp_alerts': [_alert(
            few, {'flavor': 'm1.large'}, 'only 1 more m1.large fit',
            _description(few, flavor='m1.large'))]},
    ]
    path = tmp_path / 'capacity_test.yaml'
    path.write_text(yaml.safe_dump({
        'rule_files': [RULES], 'evaluation_interval': '1m',
        'tests': [{'interval': '1m', 'input_series': _input_series(empty, filled),
                   'promql_expr_test': recorded, 'alert_rule_test': alerts}]}))
    return str(path)


def test_rules_load():
    out = promtool('check', 'rules', RULES)
    assert out.returncode == 0, out.stdout + out.stderr


def test_rules_record_and_fire_on_a_real_scrape(tmp_path, scrapes):
    out = promtool('test', 'rules', _test_file(tmp_path, *scrapes))
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'SUCCESS' in out.stdout


def test_every_recording_rule_is_tested():
    recorded = {r['record'] for r in _rules() if 'record' in r}
    with open(__file__) as f:
        source = f.read()
    assert recorded and all("values('%s'" % name in source for name in recorded)


def test_every_dashboard_panel_graphs_a_tested_recording_rule():
    recorded = {r['record'] for r in _rules() if 'record' in r}
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = [target['expr'] for panel in dashboard['panels']
             for target in panel.get('targets', [])]
    assert exprs and set(exprs) <= recorded, set(exprs) - recorded
    assert set(exprs) == recorded      # and every rule has its panel
