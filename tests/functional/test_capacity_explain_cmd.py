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
