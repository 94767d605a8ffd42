"""placement-manage candidates explain, on a typical "No valid host"."""
import json
import threading

from placement_server import cmd
from placement_server.cmd import manage
from tests.functional.client import make_provider


def test_one_class_short_everywhere_names_the_class_and_largest_free(api, database, capsys):
    make_provider(api, 'cn1', {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 4096}})
    make_provider(api, 'cn2', {'VCPU': {'total': 5, 'reserved': 1}, 'MEMORY_MB': {'total': 8192}})
    url = database.engine.url.render_as_string(hide_password=False)
    argv = ['--database-connection', url, 'candidates', 'explain',
            'resources=VCPU:6,MEMORY_MB:1024']
    assert manage._main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ('no root provider fits: all 2 are short of VCPU '
                        '(asked 6, the largest free on one provider is 4)')
    assert lines[1].split() == ['capacity', '2']
    assert manage._main(argv + ['--json', '--roots']) == 0
    body = json.loads(capsys.readouterr().out)
    assert body['stages'] == {'capacity': 2}
    assert [(r['name'], r['largest_free']) for r in body['roots']] == [('cn1', 4), ('cn2', 4)]


def test_a_query_placement_refuses_is_one_line(api, database, capsys):
    url = database.engine.url.render_as_string(hide_password=False)
    code = cmd.run(manage._main, ['--database-connection', url, 'candidates', 'explain',
                                  'resources=NO_SUCH_CLASS:1'])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        'candidates explain: Invalid resource class in resources parameter: '
        'No such resource class NO_SUCH_CLASS.']


def test_a_request_wide_rule_is_named(api, database, capsys):
    """Two isolated groups on a one-provider tree: each fits alone, only
    group_policy=isolate keeps them out (the explanation asks the search
    again without it; a lock taken twice once hung here)."""
    make_provider(api, 'cn1', {'VCPU': {'total': 4}})
    url = database.engine.url.render_as_string(hide_password=False)
    argv = ['--database-connection', url, 'candidates', 'explain', '--json', '--roots',
            'resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate']
    done = []
    worker = threading.Thread(target=lambda: done.append(manage._main(argv)), daemon=True)
    worker.start()
    worker.join(60)
    assert done == [0], 'explain did not answer'
    body = json.loads(capsys.readouterr().out)
    assert [(r['name'], r['stage']) for r in body['roots']] == [('cn1', 'isolate')]


def test_drained_devices_are_named_when_they_are_why_nothing_fits(api, database, capsys):
    """A GPU drained by its agent (CUSTOM_DEVICE_DRAINED, reserved = total)
    on each of two hosts: the explanation names them, not just 'short'."""
    rc = 'CUSTOM_PCI_10DE_20B5'
    assert api.put('/resource_classes/' + rc, None, version='1.7').status_int == 201
    assert api.put('/traits/CUSTOM_DEVICE_DRAINED', None, version='1.6').status_int == 201
    for host, reserved in (('cn1', 1), ('cn2', 1), ('cn3', 0)):
        root = make_provider(api, host, {'VCPU': {'total': 4}})
        gpu = make_provider(api, host + '_0000:81:00.0',
                            {rc: {'total': 1, 'reserved': reserved}}, parent=root)
        if host == 'cn3':     # held by a guest, not drained
            resp = api.put('/allocations/a1b2c3d4-0000-4000-8000-000000000003', {
                'allocations': {gpu: {'resources': {rc: 1}}}, 'project_id': 'p',
                'user_id': 'u', 'consumer_generation': None}, version='1.28')
            assert resp.status_int == 204, resp.body
            continue
        resp = api.put('/resource_providers/%s/traits' % gpu, {
            'resource_provider_generation': 1, 'traits': ['CUSTOM_DEVICE_DRAINED']},
            version='1.6')
        assert resp.status_int == 200, resp.body
    url = database.engine.url.render_as_string(hide_password=False)
    argv = ['--database-connection', url, 'candidates', 'explain',
            'resources=VCPU:1&resources1=%s:1' % rc]
    assert manage._main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        'no root provider fits: all 3 are short of %s (asked 1, the largest free on '
        'one provider is 0); drained devices: cn1_0000:81:00.0, cn2_0000:81:00.0' % rc)
    assert manage._main(argv + ['--json', '--roots']) == 0
    body = json.loads(capsys.readouterr().out)
    assert [(r['name'], r['drained']) for r in body['roots']] == [
        ('cn1', ['cn1_0000:81:00.0']), ('cn2', ['cn2_0000:81:00.0']), ('cn3', None)]
    assert body['roots'][0]['detail'] == (
        '%s short by 1 (asked 1, largest free 0); drained: cn1_0000:81:00.0' % rc)
