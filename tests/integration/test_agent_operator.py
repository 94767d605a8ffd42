"""What an operator meets in the agent's first week: real placement-server
and tracker processes, a fake host edited between runs."""
import json
import os
import subprocess

import pytest
import requests

from tests import upstream
from tests.integration import agent_env as env
from tests.integration.agent_env import instance

pytestmark = pytest.mark.integration
HOST = 'fake-ops-1'
SHARED = '1d8a3b0e-5c4f-4e2a-9b7d-3f6e8a1c2b40'
OTHER_ROOT = '2e9b4c1f-6d5a-4f3b-8c8e-4a7f9b2d3c51'
AGG = '3fac5d20-7e6b-4a4c-9d9f-5b8a0c3e4d62'


def _put(url, path, body):
    resp = requests.put(url + path, json=body, headers=env.HEADERS, timeout=10)
    assert resp.ok, resp.text
    return resp.json() if resp.text else None


def _provider(url, uuid, name, inventories, traits=(), aggregates=()):
    resp = requests.post(url + '/resource_providers', headers=env.HEADERS, timeout=10,
                         json={'uuid': uuid, 'name': name})
    assert resp.status_code == 200, resp.text
    gen = resp.json()['generation']
    gen = _put(url, '/resource_providers/%s/inventories' % uuid, {
        'resource_provider_generation': gen,
        'inventories': {rc: {'total': n} for rc, n in inventories.items()}})[
            'resource_provider_generation']
    if traits:
        gen = _put(url, '/resource_providers/%s/traits' % uuid, {
            'resource_provider_generation': gen, 'traits': list(traits)})[
                'resource_provider_generation']
    if aggregates:
        _put(url, '/resource_providers/%s/aggregates' % uuid, {
            'resource_provider_generation': gen, 'aggregates': list(aggregates)})


def test_shared_storage_part_goes_with_the_instance(placement_url, host, tmp_path):
    """The host's part of an allocation is its tree and the sharing providers
    its aggregates reach; another host's part stays."""
    write, path = host
    _provider(placement_url, SHARED, 'shared-disk', {'DISK_GB': 1000},
              traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG])
    _provider(placement_url, OTHER_ROOT, 'other-host', {'VCPU': 8})
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}, SHARED: {'DISK_GB': 20}})
    # vm2 is migrating here: the source host still holds its part.
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}, SHARED: {'DISK_GB': 10}})
    description = env.describe_host(HOST, instances=[vm1, vm2])
    description['providers'][0]['aggregates'] = [AGG]
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    assert env.run('tracker-agent', conf, '--once').returncode == 0
    placement = env.Placement(placement_url)
    record = placement.get('/allocations/%s' % vm2['uuid'])
    _put(placement_url, '/allocations/%s' % vm2['uuid'], {
        'allocations': dict(record['allocations'], **{
            OTHER_ROOT: {'resources': {'VCPU': 1}}}),
        'consumer_generation': record['consumer_generation'],
        'project_id': 'proj', 'user_id': 'user', 'consumer_type': 'INSTANCE'})
    assert env.run("tracker-audit", conf).returncode == 0

    # Both leave this host.
    description['instances'] = []
    write(description)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    assert placement.get('/allocations/%s' % vm1['uuid'])['allocations'] == {}
    assert {rp: a['resources'] for rp, a in placement.get(
        '/allocations/%s' % vm2['uuid'])['allocations'].items()} == {OTHER_ROOT: {'VCPU': 1}}
    assert placement.get('/resource_providers/%s/usages' % SHARED)['usages'] == {
        'DISK_GB': 0}
    audit = env.run('tracker-audit', conf, '--json')
    assert audit.returncode == 0, audit.stdout
    assert json.loads(audit.stdout)['in_sync'] is True


def _metric(port, name):
    text = requests.get('http://127.0.0.1:%d/metrics' % port, timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return None


def test_steady_cycles_notice_placement_gone_and_changed(placement_servers, host, agents,
                                                        tmp_path):
    """One GET per steady cycle: placement killed is seen within two
    cycles, and so is an allocation deleted by hand (not after the 300 s
    association_refresh_interval)."""
    db = 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
    server = placement_servers(db)[0]
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}, HOST + '_gpu0': {'VGPU': 1}})
    description = env.describe_host(HOST, gpus=1, instances=[vm1])
    write(description)
    port = upstream.free_port()
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          interval=2, backoff_max=2, metrics_port=port)
    agent = agents(conf)
    placement = env.Placement(server.url)
    env.wait_for(env.converged(placement, description), what='first sync')
    env.wait_for(lambda: _metric(port, 'tracker_placement_reachable') == 1)

    # Someone deletes vm1's allocation by hand: it is back within two cycles.
    resp = requests.delete(server.url + '/allocations/%s' % vm1['uuid'],
                           headers=env.HEADERS, timeout=10)
    assert resp.status_code == 204
    env.wait_for(env.converged(placement, description), timeout=4 * 2 + 3,
                 what='the deleted allocation rewritten')
    assert 'placement changed behind the tracker' in agent.log()

    # An inventory edited by hand is put back too.
    root = env.root_uuid(HOST)
    inv = placement.get('/resource_providers/%s/inventories' % root)
    _put(server.url, '/resource_providers/%s/inventories/VCPU' % root, {
        'resource_provider_generation': inv['resource_provider_generation'], 'total': 1})
    env.wait_for(env.converged(placement, description), timeout=4 * 2 + 3,
                 what='the edited inventory rewritten')

    # Placement goes away while the host stays the same.
    server.stop()
    env.wait_for(lambda: _metric(port, 'tracker_placement_reachable') == 0,
                 timeout=4 * 2 + 3, what='tracker_placement_reachable 0')
    assert agent.log().count('placement is unreachable') == 1


LICENSES = ("meta: {schema_version: '1.0'}\n"
            "providers:\n"
            "  - identification: {uuid: $COMPUTE_NODE}\n"
            "    inventories:\n"
            "      additional: [{CUSTOM_DB_LICENSE: {total: 4}}]\n"
            "    traits: {additional: [CUSTOM_GOLD, CUSTOM_SILVER]}\n")


@pytest.mark.parametrize('mistake, message', [
    (LICENSES + "  - identification: {uuid: $COMPUTE_NODE}\n"
                "    traits: {additional: [CUSTOM_BRONZE]}\n",
     "providers.identification: provider uuid '$COMPUTE_NODE' is already configured"),
    (LICENSES.replace('CUSTOM_DB_LICENSE', 'FOO_BAR'),
     "'FOO_BAR' is not a custom resource class"),
    (LICENSES.replace('CUSTOM_SILVER', 'GOLD_PLATED'),
     "'GOLD_PLATED' is neither a custom trait"),
])
def test_a_provider_config_that_cannot_be_applied_changes_nothing(server, host, tmp_path,
                                                                 mistake, message):
    write, path = host
    description = env.describe_host(HOST)
    write(description)
    overlays = tmp_path / 'provider_config'
    overlays.mkdir()
    (overlays / 'licences.yaml').write_text(LICENSES)
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          provider_config_location=str(overlays))
    assert env.run('tracker-agent', conf, '--once').returncode == 0
    placement = env.Placement(server.url)
    before = placement.tree(HOST)
    assert before[HOST]['inventories']['CUSTOM_DB_LICENSE'] == 4

    (overlays / 'licences.yaml').write_text(mistake)
    description['providers'][0]['inventories']['VCPU'] = 32    # the host changed too
    write(description)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 1, once.stdout
    assert once.stderr.startswith('tracker-agent: cycle failed: provider config not '
                                  'applied, nothing written: %s' % (overlays / 'licences.yaml'))
    assert message in once.stderr
    assert len(once.stderr.splitlines()) == 1
    assert placement.tree(HOST) == before
    audit = env.run('tracker-audit', conf)
    assert audit.returncode == 1 and message in audit.stderr


def test_config_errors_say_what_is_missing_and_where_it_was_looked_for(host, tmp_path):
    write, path = host
    write(env.describe_host(HOST))
    home = tmp_path / 'home'
    home.mkdir()
    environ = dict(os.environ, HOME=str(home))
    once = subprocess.run([os.path.join(env.BIN, 'tracker-agent'), '--once'],
                          capture_output=True, text=True, timeout=60, env=environ,
                          cwd=str(tmp_path))
    assert once.returncode == 1
    assert 'unreachable' not in once.stderr
    assert once.stderr.startswith('tracker-agent: configuration: [placement] auth_type '
                                  'is not set'), once.stderr
    assert ('no configuration file found; looked for %s/.tracker/tracker.conf, '
            '%s/tracker.conf, /etc/tracker/tracker.conf' % (home, home)) in once.stderr

    conf = tmp_path / 'tracker.conf'
    conf.write_text('[tracker]\ndriver = fake\n[fake]\nhost_file = %s\n'
                    '[placement]\nendpoint = http://127.0.0.1:9\n' % path)
    once = env.run('tracker-agent', str(conf), '--once')
    assert once.returncode == 1
    assert once.stderr.strip() == (
        'tracker-agent: configuration: [placement] auth_type is not set, so there are '
        'no credentials for placement (read from %s)' % conf)


def test_the_aggregates_file_is_the_whole_truth_for_its_aggregates(server, host, tmp_path):
    write, path = host
    write(env.describe_host(HOST))
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    assert env.run('tracker-agent', conf, '--once').returncode == 0
    rack, other = '5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d', '6a1b4f5e-9d2c-4b68-8e1d-7f2a3b4c5d6e'
    # in placement already: a host the file no longer lists, a sharing
    # provider of the rack, and an aggregate the file does not list
    _provider(server.url, OTHER_ROOT, 'old-host', {'VCPU': 8}, aggregates=[rack, other])
    _provider(server.url, SHARED, 'rack-a-disk', {'DISK_GB': 1000},
              traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[rack])
    placement = env.Placement(server.url)

    def members(uuid):
        return set(placement.get('/resource_providers/%s/aggregates' % uuid)['aggregates'])

    agg_file = tmp_path / 'aggregates.yaml'
    agg_file.write_text('aggregates:\n  - {name: rack-a, uuid: %s, hosts: [%s, ghost]}\n'
                        % (rack, HOST))
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        'added %s to rack-a' % HOST,
        'removed old-host from rack-a',
        'NOT added ghost to rack-a: no provider named ghost in placement (has its agent '
        'reported it yet?)',
        '1 added, 1 removed, 0 unchanged, 0 failed, 1 unknown host(s) (the file names '
        'hosts placement does not have: fix the file, or sync again once their agents '
        'reported them)']
    assert members(env.root_uuid(HOST)) == {rack}
    assert members(OTHER_ROOT) == {other}
    assert members(SHARED) == {rack}

    agg_file.write_text('aggregates:\n  - {name: rack-a, uuid: %s, hosts: []}\n' % rack)
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[0] == 'removed %s from rack-a' % HOST
    assert members(env.root_uuid(HOST)) == set() and members(SHARED) == {rack}

    out = env.run('tracker-manage', conf, 'aggregates', 'add-host', rack, 'ghost')
    assert out.returncode == 1
    assert out.stderr.strip() == ('tracker-manage: add-host %s ghost failed: no provider '
                                  'named ghost in placement (has its agent reported it '
                                  'yet?)' % rack)


def test_small_things(server, host, tmp_path):
    write, path = host
    description = env.describe_host(HOST, gpus=1)
    description['providers'][0]['inventories']['VCPU'] = {
        'total': 16, 'reserved': 2, 'allocation_ratio': 4.0}
    write(description)
    conf = tmp_path / 'tracker.conf'
    # No [DEFAULT] host: the fake driver's file names the host.
    conf.write_text('[tracker]\ndriver = fake\nrpc = false\nnotifications = false\n'
                    'state_path = %s\n[fake]\nhost_file = %s\n'
                    '[placement]\nauth_type = admin_token\ntoken = admin\n'
                    'endpoint = %s\nconnect_retries = 0\n' % (tmp_path, path, server.url))
    conf = str(conf)

    # The tree printout says where capacity comes from.
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    assert ('  VCPU                      0 / 56 used  (total 16, reserved 2, ratio 4)'
            in once.stdout.splitlines()), once.stdout
    # The agent is named after the host it reports, not the machine.
    assert (tmp_path / ('ownership-%s.json' % HOST)).exists()

    # The reader goes away after one line: no traceback, no error message.
    piped = subprocess.run('%s --config-file %s --once | head -1'
                           % (os.path.join(env.BIN, 'tracker-agent'), conf),
                           shell=True, capture_output=True, text=True, timeout=60,
                           executable='/bin/bash')
    assert piped.stdout.startswith('cycle synced')
    assert piped.stderr == ''

    # --fix --dry-run is refused, not silently a dry run.
    for command in (['tracker-audit'], ['tracker-agent', 'audit']):
        out = env.run(command[0], conf, *command[1:], '--fix', '--dry-run')
        assert out.returncode == 2
        assert out.stderr.strip().endswith(
            'error: argument --dry-run: not allowed with argument --fix'), out.stderr


def test_a_real_uevent_wakes_the_agent_without_udevd(server, tmp_path):
    """This machine has no udevd: the agent listens to kernel uevents,
    says so, and a uevent written to a PCI device's sysfs file gives an
    early cycle long before the interval."""
    import pyudev
    device = next(iter(pyudev.Context().list_devices(subsystem='pci')))
    conf = tmp_path / 'tracker.conf'
    conf.write_text('[DEFAULT]\nhost = %s\ninstances_path = %s\n'
                    '[tracker]\ndriver = host\ninterval = 600\njitter = 0\nrpc = false\n'
                    'notifications = false\nstate_path = %s\n'
                    '[placement]\nauth_type = admin_token\ntoken = admin\n'
                    'endpoint = %s\nconnect_retries = 0\n'
                    % (HOST, tmp_path, tmp_path, server.url))
    agent = env.AgentProcess(str(conf), tmp_path / 'agent.log').start()
    try:
        env.wait_for(lambda: 'hardware events: listening to kernel uevents' in agent.log(),
                     what='the hardware monitor')
        env.wait_for(lambda: 'cycle synced' in agent.log(), what='the first cycle')
        with open(os.path.join(device.sys_path, 'uevent'), 'w') as f:
            f.write('change')
        env.wait_for(lambda: 'early cycle: hardware change' in agent.log(), timeout=20,
                     what='the early cycle')
        assert 'hardware change: pci %s' % device.sys_name in agent.log()
    finally:
        assert agent.stop() == 0
    assert 'Traceback' not in agent.log()
