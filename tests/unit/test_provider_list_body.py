"""The provider list is written as JSON text: it must say what rendering
each provider and encoding the whole would."""
import json
import types

import pytest

from placement_server import lists
from placement_server.handlers import resource_provider

CN1 = '6f1c6b5e-2f4f-4d5b-9a5e-0b7c1c0f4a01'
ROWS = [
    # id, uuid, name, generation, created_at, updated_at, parent, root
    (1, CN1, 'cn-1', 0, None, None, None, CN1),
    (2, 'a3b8e7c2-1d2e-4f3a-8b9c-0d1e2f3a4b5c', 'numa "0" \\ \u00e9t\u00e9 \u2603 \t\x01',
     12345678901, None, None, CN1, CN1),
    (3, 'c0ffee00-0000-4000-8000-000000000003', '</script>', 7, None, None, None, None),
]


@pytest.mark.parametrize('version', [(1, 0), (1, 1), (1, 6), (1, 11), (1, 14), (1, 39)])
@pytest.mark.parametrize('rows', [ROWS, []])
@pytest.mark.parametrize('mount', ['', '/placement', '/a "b"\\c'])
def test_the_list_body_is_the_rendered_providers(version, rows, mount):
    req = types.SimpleNamespace(version=version, environ={'SCRIPT_NAME': mount})
    render = resource_provider.renderer(req)
    body = lists.body(version, mount + '/resource_providers/',
                      [(r[1], r[2], r[3], r[6], r[7]) for r in rows])
    assert json.loads(body) == {'resource_providers': [render(r) for r in rows]}
    if rows:
        assert render(rows[0])['links'][0]['href'] == mount + '/resource_providers/' + rows[0][1]
