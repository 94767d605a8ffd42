"""The real ``openstack`` CLI (osc-placement) and openstacksdk against a
``placement-server`` process, and the same CLI session against upstream
placement 16.0.0: ours must give every command the same exit code and the
same parsed output, at every microversion (the CLI) and every microversion
openstacksdk's placement calls need (the SDK): every osc-placement command
and every sdk placement call with a plain-data signature runs.
"""
import json
import os
import re

import pytest

from tests import upstream
from tests.integration import clients as clients_mod
from tests.integration import servers

# every microversion osc-placement speaks (it refuses 1.30-1.36)
VERSIONS = tuple('1.%d' % minor for minor in [*range(30), 37, 38, 39])
SDK_VERSIONS = tuple('1.%d' % minor for minor in range(6, 40))

ROOT = 'c1000000-0000-4000-8000-000000000001'
CHILD = 'c1000000-0000-4000-8000-000000000002'
AGG = 'c1000000-0000-4000-8000-0000000000a1'
CONSUMER = 'c1000000-0000-4000-8000-0000000000c1'
PROJECT = 'c1000000-0000-4000-8000-0000000000d1'
USER = 'c1000000-0000-4000-8000-0000000000e1'
MISSING = 'c1000000-0000-4000-8000-0000000000ff'


def at_least(version, minimum):
    return tuple(map(int, version.split('.'))) >= tuple(map(int, minimum.split('.')))


@pytest.fixture(scope='module')
def ours(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('ours'))
    db_url = 'sqlite:///%s/placement.sqlite' % workdir
    [server] = servers.start_servers(db_url, workdir)
    clients = clients_mod.Clients(server.url, workdir)
    yield clients
    clients.close()
    server.stop()


@pytest.fixture(scope='module')
def _own_upstream(tmp_path_factory):
    """Upstream placement of this module's own: the session's shared one
    keeps the classes and traits other modules made, which the sessions'
    lists would show."""
    workdir = str(tmp_path_factory.mktemp('upstream-clients'))
    server = upstream.UpstreamPlacement(
        'sqlite:///%s' % os.path.join(workdir, 'placement.sqlite'), workdir)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def upstream_placement(_own_upstream):
    upstream.wipe(_own_upstream.db_url)
    return _own_upstream.url


@pytest.fixture(scope='module')
def theirs(_own_upstream, tmp_path_factory):
    clients = clients_mod.Clients(_own_upstream.url,
                                  str(tmp_path_factory.mktemp('theirs')))
    yield clients
    clients.close()


def session(clients, v, run=None):
    """One operator's CLI session at microversion ``v``; returns its
    transcript [(command, exit code, parsed output or error text)] after
    checking every command that must succeed did."""
    transcript = []

    def checked_run(*argv, expect=0):
        result = clients.cli(*argv, version=v)
        if result.rc == 0:
            assert result.stdout.strip() == '' or result.json is not None, result
            output = result.json if result.stdout.strip() else None
        else:
            output = result.stderr.strip().splitlines()[-1:]
        transcript.append((' '.join(argv), result.rc, output))
        assert result.rc == expect, result
        return output

    run = run or checked_run
    rc_name = 'CUSTOM_C1_' + v.replace('.', '_')
    trait = 'CUSTOM_C1_T' + v.replace('.', '_')

    root = run('resource', 'provider', 'create', 'c1-root-' + v, '--uuid', ROOT, '-f', 'json')
    assert root['uuid'] == ROOT and root['generation'] == 0
    listed = run('resource', 'provider', 'list', '--name', 'c1-root-' + v, '-f', 'json')
    assert [p['uuid'] for p in listed] == [ROOT]
    run('resource', 'provider', 'create', 'c1-root-' + v, '-f', 'json', expect=1)
    run('resource', 'provider', 'show', ROOT, '-f', 'json')
    run('resource', 'provider', 'show', MISSING, '-f', 'json', expect=1)
    renamed = run('resource', 'provider', 'set', ROOT, '--name', 'c1-renamed-' + v, '-f', 'json')
    assert renamed['name'] == 'c1-renamed-' + v
    if at_least(v, '1.14'):
        child = run('resource', 'provider', 'create', 'c1-child-' + v, '--uuid', CHILD,
                    '--parent-provider', ROOT, '-f', 'json')
        assert child['parent_provider_uuid'] == ROOT and child['root_provider_uuid'] == ROOT
        tree = run('resource', 'provider', 'list', '--in-tree', CHILD, '-f', 'json')
        assert sorted(p['uuid'] for p in tree) == [ROOT, CHILD]
        run('resource', 'provider', 'show', CHILD, '--allocations', '-f', 'json')

    # Resource classes and inventories.
    if at_least(v, '1.2'):
        run('resource', 'class', 'create', rc_name)
        run('resource', 'class', 'show', rc_name, '-f', 'json')
        run('resource', 'class', 'create', rc_name, expect=1)
        if at_least(v, '1.7'):
            run('resource', 'class', 'set', rc_name)   # PUT: exists, fine
        classes = run('resource', 'class', 'list', '-f', 'json')
        assert {rc_name, 'VCPU'} <= {c['name'] for c in classes}
    else:
        rc_name = 'DISK_GB'
    inventory = run('resource', 'provider', 'inventory', 'set', ROOT,
                    '--resource', 'VCPU=8', '--resource', 'VCPU:allocation_ratio=4.0',
                    '--resource', 'MEMORY_MB=4096', '--resource', 'MEMORY_MB:reserved=512',
                    '--resource', rc_name + '=3', '-f', 'json')
    assert {i['resource_class']: i['total'] for i in inventory} == {
        'VCPU': 8, 'MEMORY_MB': 4096, rc_name: 3}
    run('resource', 'provider', 'inventory', 'list', ROOT, '-f', 'json')
    vcpu = run('resource', 'provider', 'inventory', 'show', ROOT, 'VCPU', '-f', 'json')
    assert vcpu['allocation_ratio'] == 4.0
    # class set replaces one existing inventory (a new class is a 400)
    run('resource', 'provider', 'inventory', 'class', 'set', ROOT, 'IPV4_ADDRESS',
        '--total', '100', '-f', 'json', expect=1)
    run('resource', 'provider', 'inventory', 'set', ROOT, '--amend',
        '--resource', 'IPV4_ADDRESS=100', '-f', 'json')
    run('resource', 'provider', 'inventory', 'class', 'set', ROOT, 'IPV4_ADDRESS',
        '--total', '100', '--max_unit', '50', '-f', 'json')
    run('resource', 'provider', 'inventory', 'show', ROOT, 'IPV4_ADDRESS', '-f', 'json')
    run('resource', 'provider', 'inventory', 'delete', ROOT, '--resource-class', 'IPV4_ADDRESS')
    run('resource', 'provider', 'inventory', 'show', ROOT, 'IPV4_ADDRESS', '-f', 'json',
        expect=1)
    run('resource', 'provider', 'inventory', 'set', ROOT, '--resource', 'VCPU=bad',
        '-f', 'json', expect=1)

    # Traits (1.6) and aggregates (1.1; with the provider generation at 1.19).
    if at_least(v, '1.6'):
        run('trait', 'create', trait)
        run('trait', 'show', trait, '-f', 'json')
        names = run('trait', 'list', '--name', 'startswith:CUSTOM_C1_T' + v.replace('.', '_'),
                    '-f', 'json')
        assert [t['name'] for t in names] == [trait]
        traits = run('resource', 'provider', 'trait', 'set', ROOT, '--trait', trait,
                     '--trait', 'HW_CPU_X86_AVX2', '-f', 'json')
        assert sorted(t['name'] for t in traits) == sorted([trait, 'HW_CPU_X86_AVX2'])
        run('resource', 'provider', 'trait', 'list', ROOT, '-f', 'json')
        # osc-placement sends associated=True: any case is accepted
        associated = run('trait', 'list', '--associated', '-f', 'json')
        assert {trait, 'HW_CPU_X86_AVX2'} <= {t['name'] for t in associated}
        run('trait', 'delete', trait, expect=1)   # in use by ROOT
    aggregate_args = ['resource', 'provider', 'aggregate', 'set', ROOT, '--aggregate', AGG]
    if at_least(v, '1.19'):
        generation = run('resource', 'provider', 'show', ROOT, '-f', 'json')['generation']
        run(*aggregate_args, '--generation', str(generation + 5), '-f', 'json', expect=1)
        aggregate_args += ['--generation', str(generation)]
    if at_least(v, '1.1'):
        aggregates = run(*aggregate_args, '-f', 'json')
        assert [a['uuid'] for a in aggregates] == [AGG]
        run('resource', 'provider', 'aggregate', 'list', ROOT, '-f', 'json')
    if at_least(v, '1.3'):
        member = run('resource', 'provider', 'list', '--member-of', AGG, '-f', 'json')
        assert [p['uuid'] for p in member] == [ROOT]
    if at_least(v, '1.4'):
        run('resource', 'provider', 'list', '--resource', 'VCPU=2', '-f', 'json')
    if at_least(v, '1.18'):
        run('resource', 'provider', 'list', '--required', 'HW_CPU_X86_AVX2', '-f', 'json')

    # Allocations, usages, candidates.
    if at_least(v, '1.10'):
        candidates = run('allocation', 'candidate', 'list', '--resource', 'VCPU=2',
                         '--resource', 'MEMORY_MB=512', '-f', 'json')
        assert len(candidates) == 1
        candidate = ['allocation', 'candidate', 'list', '--resource', 'VCPU=1']
        if at_least(v, '1.16'):
            run(*candidate, '--limit', '1', '-f', 'json')
        if at_least(v, '1.17'):
            run(*candidate, '--required', 'HW_CPU_X86_AVX2', '-f', 'json')
        if at_least(v, '1.21'):
            run(*candidate, '--member-of', AGG, '-f', 'json')
        if at_least(v, '1.22'):
            run(*candidate, '--forbidden', 'HW_CPU_X86_AVX2', '-f', 'json')
        if at_least(v, '1.25'):
            run('allocation', 'candidate', 'list', '--group', '1', '--resource', 'VCPU=1',
                '--group', '2', '--resource', 'MEMORY_MB=512', '--group-policy', 'none',
                '-f', 'json')
    alloc = ['resource', 'provider', 'allocation', 'set', CONSUMER,
             '--allocation', 'rp=%s,VCPU=2,MEMORY_MB=512' % ROOT]
    if at_least(v, '1.8'):
        alloc += ['--project-id', PROJECT, '--user-id', USER]
    if at_least(v, '1.38'):
        alloc += ['--consumer-type', 'INSTANCE']
    run(*alloc, '-f', 'json')
    run('resource', 'provider', 'allocation', 'show', CONSUMER, '-f', 'json')
    over = ['resource', 'provider', 'allocation', 'set', MISSING,
            '--allocation', 'rp=%s,VCPU=64' % ROOT] + alloc[7:]
    run(*over, '-f', 'json', expect=1)
    usage = run('resource', 'provider', 'usage', 'show', ROOT, '-f', 'json')
    assert {u['resource_class']: u['usage'] for u in usage}['VCPU'] == 2
    if at_least(v, '1.9'):
        run('resource', 'usage', 'show', PROJECT, '--user-id', USER, '-f', 'json')
    if at_least(v, '1.12'):
        run('resource', 'provider', 'allocation', 'unset', CONSUMER, '--provider', ROOT,
            '--resource-class', 'MEMORY_MB', '-f', 'json')
    run('resource', 'provider', 'delete', ROOT, expect=1)   # allocations on it
    run('resource', 'provider', 'inventory', 'delete', ROOT, '--resource-class', 'VCPU',
        expect=1)   # allocated
    run('resource', 'provider', 'allocation', 'delete', CONSUMER)
    run('resource', 'provider', 'allocation', 'delete', CONSUMER, expect=1)

    # Clean up through the CLI too.
    if at_least(v, '1.14'):
        run('resource', 'provider', 'delete', ROOT, expect=1)   # has a child
        run('resource', 'provider', 'delete', CHILD)
    if at_least(v, '1.6'):
        run('resource', 'provider', 'trait', 'delete', ROOT)
        run('trait', 'delete', trait)
    if at_least(v, '1.5'):
        run('resource', 'provider', 'inventory', 'delete', ROOT)   # all of it
    else:
        run('resource', 'provider', 'inventory', 'delete', ROOT, '--resource-class', rc_name)
    left = run('resource', 'provider', 'inventory', 'list', ROOT, '-f', 'json')
    assert sorted(i['resource_class'] for i in left) == (
        [] if at_least(v, '1.5') else ['MEMORY_MB', 'VCPU'])
    if at_least(v, '1.2'):
        run('resource', 'class', 'delete', rc_name)
    run('resource', 'provider', 'delete', ROOT)
    run('resource', 'provider', 'list', '-f', 'json')
    return transcript


def comparable(rc, output):
    """What must match upstream: a failure's HTTP status (the detail texts
    are free), a success's output in any row order (upstream lists rows and
    comma-joined traits in database or set order)."""
    if rc:
        return re.findall(r'\(HTTP (\d+)\)', ' '.join(output))
    if isinstance(output, dict):
        return {k: ','.join(sorted(v.split(','))) if isinstance(v, str) else v
                for k, v in output.items()}
    if isinstance(output, list):
        return sorted(json.dumps(comparable(0, row), sort_keys=True) for row in output)
    return output


@pytest.mark.parametrize('version', VERSIONS)
def test_cli_session_matches_upstream(ours, theirs, upstream_placement, version):
    upstream = session(theirs, version)
    mine = session(ours, version)
    assert [(cmd, rc) for cmd, rc, _ in mine] == [(cmd, rc) for cmd, rc, _ in upstream]
    for (cmd, rc, out), (_, _, expected) in zip(mine, upstream):
        assert (cmd, comparable(rc, out)) == (cmd, comparable(rc, expected))


def test_console_script(ours):
    """The installed ``openstack`` command, not just its main()."""
    result = ours.console_script('resource', 'class', 'list', '-f', 'json')
    assert result.returncode == 0, result.stderr
    assert 'VCPU' in result.stdout
    result = ours.console_script('resource', 'provider', 'show', MISSING)
    assert result.returncode == 1
    assert 'No resource provider with uuid %s found' % MISSING in result.stderr


def sdk_session(clients, v):
    """openstacksdk's placement proxy at microversion ``v``; returns its
    transcript [(call, HTTP status or 'ok', result)]."""
    transcript = []

    def call(method, *args, expect='ok', **kwargs):
        try:
            result, outcome = clients.sdk(method, *args, version=v, **kwargs), 'ok'
        except clients_mod.SdkError as exc:
            result, outcome = None, exc.status
        transcript.append((method, outcome, result))
        assert outcome == expect, (method, outcome)
        return result

    rc_name = 'CUSTOM_C1_SDK_' + v.replace('.', '_')
    trait = 'CUSTOM_C1_SDKT_' + v.replace('.', '_')
    root = call('create_resource_provider', name='c1-sdk-' + v, id=ROOT)
    assert root['id'] == ROOT
    call('create_resource_provider', name='c1-sdk-' + v, expect=409)
    listed = call('resource_providers', name='c1-sdk-' + v)
    assert [p['id'] for p in listed] == [ROOT]
    call('get_resource_provider', MISSING, expect=404)
    renamed = call('update_resource_provider', ROOT, name='c1-sdk-renamed-' + v)
    assert renamed['name'] == 'c1-sdk-renamed-' + v
    if at_least(v, '1.14'):
        call('create_resource_provider', name='c1-sdk-child-' + v, id=CHILD,
             parent_provider_id=ROOT)
        assert call('get_resource_provider', CHILD)['root_provider_id'] == ROOT
        tree = call('resource_providers', in_tree=CHILD)
        assert sorted(p['id'] for p in tree) == [ROOT, CHILD]

    call('create_resource_class', name=rc_name)
    assert rc_name in [c['name'] for c in call('resource_classes')]
    call('get_resource_class', rc_name)
    if at_least(v, '1.7'):
        call('update_resource_class', rc_name)   # PUT: exists, fine
    assert call('find_resource_provider', 'c1-sdk-renamed-' + v)['id'] == ROOT
    call('create_resource_provider_inventory', ROOT, resource_class='VCPU', total=8,
         allocation_ratio=2.0)
    call('create_resource_provider_inventory', ROOT, resource_class=rc_name, total=4)
    call('create_resource_provider_inventory', ROOT, resource_class='VCPU', total=8,
         expect=409)
    inventories = call('resource_provider_inventories', ROOT)
    assert {i['resource_class']: i['total'] for i in inventories} == {'VCPU': 8, rc_name: 4}
    vcpu = call('get_resource_provider_inventory', 'VCPU', resource_provider=ROOT)
    call('update_resource_provider_inventory', 'VCPU', resource_provider=ROOT, total=16,
         resource_provider_generation=vcpu['resource_provider_generation'])
    call('update_resource_provider_inventory', 'VCPU', resource_provider=ROOT, total=4,
         resource_provider_generation=vcpu['resource_provider_generation'], expect=409)
    call('delete_resource_provider_inventory', rc_name, resource_provider=ROOT)
    call('get_resource_provider_inventory', rc_name, resource_provider=ROOT, expect=404)

    call('create_trait', trait)
    call('get_trait', trait)
    assert trait in [t['name'] for t in call('traits', name='startswith:CUSTOM_C1_SDKT_')]
    # openstacksdk sends associated=True: any case is accepted
    call('traits', associated=True)
    assert trait in [t['name'] for t in call('traits', associated=False,
                                             name='startswith:CUSTOM_C1_SDKT_')]
    call('get_resource_provider_trait', ROOT)
    call('delete_resource_provider_trait', ROOT, ignore_missing=False)
    call('set_resource_provider_aggregates', {'provider': ROOT}, AGG)
    aggregates = call('fetch_resource_provider_aggregates', ROOT)
    assert aggregates['aggregates'] == [AGG]
    call('get_resource_provider_aggregates', ROOT)
    call('fetch_resource_provider_usages', ROOT)
    if at_least(v, '1.10'):
        call('allocation_candidates', resources='VCPU:2')
    # openstacksdk writes allocations in the 1.12 (dict) format
    if at_least(v, '1.12'):
        claim = {'allocations': {ROOT: {'resources': {'VCPU': 2}}}, 'project_id': PROJECT,
                 'user_id': USER}
        if at_least(v, '1.28'):
            claim['consumer_generation'] = None   # a new consumer
        if at_least(v, '1.38'):
            claim['consumer_type'] = 'INSTANCE'
        call('update_allocation', CONSUMER, **claim)
        # Again: not new any more (1.28+); before that, a plain replacement.
        call('update_allocation', CONSUMER, expect=409 if at_least(v, '1.28') else 'ok', **claim)
        allocation = call('get_allocation', CONSUMER)
        assert allocation['allocations'][ROOT]['resources'] == {'VCPU': 2}
        call('resource_provider_allocations', ROOT)
        call('usages', PROJECT)
        call('delete_allocation', CONSUMER, ignore_missing=False)
        call('delete_allocation', CONSUMER, ignore_missing=False, expect=404)
        if at_least(v, '1.13'):
            # POST /allocations: claim for one consumer, then move it to another
            claims = {CONSUMER: claim}
            call('create_allocations', claims)
            moved = dict(claim, allocations={})
            if at_least(v, '1.28'):
                moved['consumer_generation'] = 1
            call('create_allocations', {CONSUMER: moved, MISSING: claim})
            assert call('get_allocation', MISSING)['allocations'][ROOT]['resources'] == {
                'VCPU': 2}
            call('delete_allocation', MISSING, ignore_missing=False)
    generation = call('get_resource_provider', ROOT)['generation']
    call('set_resource_provider_inventories', ROOT, {'VCPU': {'total': 4}}, generation)
    call('set_resource_provider_inventories', ROOT, {'VCPU': {'total': 4}}, generation,
         expect=409)
    if at_least(v, '1.5'):
        call('delete_resource_provider_inventories', ROOT)
        assert call('resource_provider_inventories', ROOT) == []

    call('delete_trait', trait)
    call('delete_trait', trait, ignore_missing=False, expect=404)
    call('delete_resource_class', rc_name)
    if at_least(v, '1.14'):
        call('delete_resource_provider', ROOT, expect=409)   # has a child
        call('delete_resource_provider', CHILD)
    call('delete_resource_provider', ROOT)
    call('get_resource_provider', ROOT, expect=404)
    return transcript


@pytest.mark.parametrize('version', SDK_VERSIONS)
def test_sdk_session_matches_upstream(ours, theirs, upstream_placement, version):
    upstream = sdk_session(theirs, version)
    mine = sdk_session(ours, version)
    assert [c[:2] for c in mine] == [c[:2] for c in upstream]
    for (method, _, result), (_, _, expected) in zip(mine, upstream):
        assert (method, comparable(0, result)) == (method, comparable(0, expected))


def test_cli_negotiates_the_version(ours, theirs, upstream_placement):
    """Given only the major version, osc-placement asks GET / at its own
    highest no-gap version (1.29) and falls back to the server's
    ``max_version`` from a 406; here the server takes 1.29."""
    results = [clients.cli('resource', 'provider', 'create', 'c1-negotiated', '--uuid', ROOT,
                           '--parent-provider', ROOT, '-f', 'json', version='1')
               for clients in (ours, theirs)]
    assert [r.rc for r in results] == [1, 1]   # its own parent: 400 on both
    assert all('(HTTP 400)' in r.stderr for r in results), results
    shown = [clients.ok('resource', 'provider', 'create', 'c1-negotiated', '--uuid', ROOT,
                        '-f', 'json', version='1')
             for clients in (ours, theirs)]
    assert shown[0] == shown[1]
    assert set(shown[0]) == {'uuid', 'name', 'generation', 'root_provider_uuid',
                             'parent_provider_uuid'}
    for clients in (ours, theirs):
        clients.ok('resource', 'provider', 'delete', ROOT, version='1')
