"""What the agent reports and its audit finds, as operators run them:
real placement-server (or upstream) and tracker commands, a fake host (or
libvirt's test driver) edited between runs."""
import json
import time

import pytest

from tests.integration import agent_env as env
from tests.integration.agent_env import instance

pytestmark = pytest.mark.integration
HOST = 'fake-int-1'


def test_audit_reports_the_injected_drift_and_fix_repairs_it(placement_url, host, tmp_path):
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}})
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=1, vfs=1, instances=[vm1, vm2])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    assert HOST + '_gpu0' in once.stdout and 'VGPU' in once.stdout

    audit = env.run('tracker-audit', conf)
    assert (audit.returncode, audit.stdout.strip()) == (
        0, 'host %s: in sync with placement' % HOST)

    # The host changes behind placement's back (the agent is not running):
    # a second GPU, vm2 gone, vm3 started, and more memory.
    vm3 = instance('vm3', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm1, vm3])
    description['providers'][0]['inventories']['MEMORY_MB']['total'] = 131072
    write(description)

    audit = env.run('tracker-audit', conf, '--json')
    assert audit.returncode == 3, audit.stderr
    report = json.loads(audit.stdout)
    assert env.drift_kinds(report) == sorted([
        ('provider_missing', HOST + '_gpu1'),
        ('inventory_differs', HOST),
        ('allocation_orphan', vm2['uuid']),
        ('allocation_missing', 'vm3')])

    dry = env.run('tracker-agent', conf, 'audit', '--dry-run')
    assert dry.returncode == 3
    assert 'writes would make:' in dry.stdout
    assert 'DELETE /allocations/%s' % vm2['uuid'] in dry.stdout
    assert env.run('tracker-audit', conf).returncode == 3   # the dry run wrote nothing

    fix = env.run('tracker-audit', conf, '--fix')
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert 'repaired: in sync with placement' in fix.stdout
    assert env.run('tracker-audit', conf).returncode == 0
    env.wait_for(env.converged(env.Placement(placement_url), description))


def test_commands_fail_in_one_line(tmp_path, host):
    write, path = host
    write(env.describe_host(HOST))
    # Nothing listens on port 9: placement is unreachable.
    conf = env.write_conf(tmp_path / 'tracker.conf', 'http://127.0.0.1:9', path, HOST)
    for command, args, code in [('tracker-audit', [], 1),
                                ('tracker-agent', ['--once'], 1),
                                ('tracker-agent', ['--bogus'], 2),
                                ('tracker-manage', ['aggregates', 'sync', '--file',
                                                    str(tmp_path / 'none.yaml')], 1)]:
        out = env.run(command, conf, *args)
        assert out.returncode == code, (command, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (command, out.stderr)
        assert out.stderr.startswith(command + ':'), out.stderr
        assert 'Traceback' not in out.stderr


def test_against_upstream_placement(upstream_placement, host, agents, tmp_path):
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}, HOST + '_gpu0': {'VGPU': 1}})
    description = env.describe_host(HOST, gpus=1, vfs=2, instances=[vm1])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', upstream_placement, path, HOST)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    placement = env.Placement(upstream_placement)
    env.wait_for(env.converged(placement, description))

    agent = agents(conf)
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm2])
    write(description)
    env.wait_for(env.converged(placement, description), what='upstream follows the host')
    assert agent.stop() == 0

    vm3 = instance('vm3', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm3])
    write(description)
    audit = env.run('tracker-audit', conf, '--json')
    assert audit.returncode == 3
    assert env.drift_kinds(json.loads(audit.stdout)) == [('allocation_missing', 'vm3'),
                                                ('allocation_orphan', vm2['uuid'])]
    assert env.run('tracker-audit', conf, '--fix').returncode == 0
    assert env.run('tracker-audit', conf).returncode == 0


def test_operator_provider_config_is_reported_and_audited(server, host, tmp_path):
    write, path = host
    description = env.describe_host(HOST, gpus=1)
    write(description)
    overlays = tmp_path / 'provider_config'
    overlays.mkdir()
    (overlays / 'licences.yaml').write_text(
        "meta: {schema_version: '1.0'}\n"
        "providers:\n"
        "  - identification: {uuid: $COMPUTE_NODE}\n"
        "    inventories:\n"
        "      additional: [{CUSTOM_DB_LICENSE: {total: 4}}]\n"
        "    traits: {additional: [CUSTOM_GOLD]}\n")
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          compute={'provider_config_location': str(overlays)})
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    tree = env.Placement(server.url).tree(HOST)
    assert tree[HOST]['inventories']['CUSTOM_DB_LICENSE'] == 4
    assert 'CUSTOM_GOLD' in tree[HOST]['traits']
    audit = env.run('tracker-audit', conf)
    assert audit.returncode == 0, audit.stdout


def test_aggregate_sync_survives_the_agent_and_reruns(placement_servers, host, agents,
                                                      tmp_path):
    db = 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
    server = placement_servers(db)[0]
    write, path = host
    write(env.describe_host(HOST))
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    agent = agents(conf)
    placement = env.Placement(server.url)
    root = env.root_uuid(HOST)
    env.wait_for(lambda: root in [p['uuid'] for p in placement.providers()])

    rack, ssd = '5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d', '0b9d2c6e-3f41-4e8a-a2d7-6c5b4a3f2e1d'
    agg_file = tmp_path / 'aggregates.yaml'
    agg_file.write_text('aggregates:\n'
                        '  - {name: rack-a, uuid: %s, hosts: [%s]}\n'
                        '  - {name: ssd, uuid: %s, hosts: []}\n' % (rack, HOST, ssd))

    def members():
        return set(placement.get('/resource_providers/%s/aggregates' % root)['aggregates'])

    out = env.run('tracker-manage', conf, 'aggregates', 'add-host', ssd, HOST)
    assert out.returncode == 0, out.stderr
    assert members() == {ssd}
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 0, out.stderr
    assert 'added %s to rack-a' % HOST in out.stdout
    assert 'removed %s from ssd' % HOST in out.stdout
    assert members() == {rack}

    time.sleep(3)                       # agent cycles keep the membership
    assert members() == {rack}
    audit = env.run('tracker-audit', conf)
    assert audit.returncode == 0, audit.stdout
    assert 'kept, written by others' in audit.stdout

    out = env.run('tracker-manage', conf, 'aggregates', 'remove-host', 'rack-a', HOST,
                  '--file', str(agg_file))
    assert out.returncode == 0, out.stderr
    assert members() == set()

    # Placement down: a warning, exit 1; rerun once it is back: reconciled.
    agent.stop()
    server.stop()
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 1
    assert 'run the sync again' in out.stdout
    server = placement_servers(db, port=server.port, sync_db=False)[0]
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 0, out.stdout + out.stderr
    assert members() == {rack}


def test_libvirt_test_driver_host_is_reported_in_sync(server, tmp_path):
    """libvirt's test:///default runs an 8 GiB guest on a host whose
    getInfo says 3 GiB (the root's MEMORY_MB, as nova reports it): with the
    operator's overcommit (4.0 here: (3072 - 512) x 4 = 10240) it fits, and
    one allocation may take the whole overcommitted capacity."""
    conf = tmp_path / 'tracker.conf'
    conf.write_text('[DEFAULT]\nram_allocation_ratio = 4.0\ninstances_path = %s\n'
                    '[tracker]\ndriver = libvirt\nrpc = false\nnotifications = false\n'
                    'state_path = %s\n'
                    '[libvirt]\nconnection_uri = test:///default\n'
                    '[placement]\nauth_type = admin_token\ntoken = admin\n'
                    'endpoint = %s\nconnect_retries = 0\n'
                    % (tmp_path, tmp_path, server.url))
    once = env.run('tracker-agent', str(conf), '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    audit = env.run('tracker-audit', str(conf), '--json')
    assert audit.returncode == 0, audit.stdout + audit.stderr
    report = json.loads(audit.stdout)
    assert report['in_sync'] is True and report['drift'] == []
    hostname = report['host']
    memory = env.Placement(server.url).get(
        '/resource_providers/%s/inventories/MEMORY_MB' % env.root_uuid(hostname))
    assert (memory['total'], memory['max_unit']) == (3072, 10240)
    assert list(env.Placement(server.url).allocations(hostname).values()) == [
        {hostname: {'VCPU': 2, 'MEMORY_MB': 8192}}]


def test_a_reshape_passes_placement_policy_under_a_development_token(placement_url, host,
                                                                     tmp_path):
    """VCPU moves from the root to a NUMA child under a running instance: a
    reshape, which placement's default policy grants the service role
    only. With keystoneauth's admin_token (a noauth2 server) the agent says
    it is the service it is; ours and upstream both accept it."""
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2, 'MEMORY_MB': 512}})
    description = env.describe_host(HOST, instances=[vm1])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr

    root = description['providers'][0]
    numa = {'name': HOST + '_numa0', 'inventories': {'VCPU': root['inventories'].pop('VCPU')}}
    description['providers'].append(numa)
    vm1['allocations'] = {HOST: {'MEMORY_MB': 512}, numa['name']: {'VCPU': 2}}
    write(description)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    env.wait_for(env.converged(env.Placement(placement_url), description))
