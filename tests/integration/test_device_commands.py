"""tracker-manage device: the operator's side of a device's life, as a
real command against a real placement-server."""
import json

import pytest
import requests

from tests.integration import agent_env as env
from tracker.drivers import layout

pytestmark = pytest.mark.integration
HOST = 'gpu-node-1'
ADDRESS = '0000:81:00.0'
RC = 'CUSTOM_PCI_10DE_20B5'


def _device(url, reserved):
    uuid = layout.device_uuid(HOST, ADDRESS)
    resp = requests.post(url + '/resource_providers', headers=env.HEADERS,
                         timeout=10, json={'uuid': uuid, 'name': 'gpu'})
    assert resp.status_code == 200, resp.text
    requests.put(url + '/resource_classes/' + RC, headers=env.HEADERS, timeout=10)
    resp = requests.put(url + '/resource_providers/%s/inventories' % uuid,
                        headers=env.HEADERS, timeout=10, json={
                            'resource_provider_generation': 0,
                            'inventories': {RC: {'total': 1, 'reserved': reserved}}})
    assert resp.ok, resp.text
    return uuid


def test_device_clean(server, host, tmp_path):
    _, path = host
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    uuid = _device(server.url, reserved=1)

    out = env.run('tracker-manage', conf, 'device', 'clean', '81:00.0')
    assert (out.returncode, out.stdout.strip()) == (
        0, '%s_0000:81:00.0: reserved lowered for %s' % (HOST, RC)), out.stderr
    inventories = env.Placement(server.url).get(
        '/resource_providers/%s/inventories' % uuid)['inventories']
    assert inventories[RC]['reserved'] == 0

    out = env.run('tracker-manage', conf, 'device', 'clean', ADDRESS, '--host', HOST)
    assert (out.returncode, out.stdout.strip()) == (
        0, '%s_0000:81:00.0: not reserved, nothing to clean' % HOST)


@pytest.mark.parametrize('args, message', [
    (['eth0'], "not a PCI address: 'eth0'"),
    (['0000:82:00.0'], 'device clean 0000:82:00.0 failed: no provider '
                       'gpu-node-1_0000:82:00.0 (%s) in placement'
     % layout.device_uuid(HOST, '0000:82:00.0')),
])
def test_device_clean_errors(server, host, tmp_path, args, message):
    _, path = host
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    out = env.run('tracker-manage', conf, 'device', 'clean', *args)
    assert out.returncode == 1
    assert out.stderr.strip() == 'tracker-manage: ' + message


def test_device_drain_and_undrain(server, host, tmp_path):
    _, path = host
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    drained = tmp_path / ('drained-devices-%s.json' % HOST)

    out = env.run('tracker-manage', conf, 'device', 'drain', '81:00.0',
                  '--reason', 'AER  fatal errors')
    assert (out.returncode, out.stdout.strip()) == (
        0, '%s drained on %s from its next cycle' % (ADDRESS, HOST)), out.stderr
    assert json.loads(drained.read_text()) == {ADDRESS: 'AER fatal errors'}

    out = env.run('tracker-manage', conf, 'device', 'undrain', ADDRESS)
    assert out.stdout.strip() == '%s undrained on %s from its next cycle' % (ADDRESS, HOST)
    assert json.loads(drained.read_text()) == {}
    out = env.run('tracker-manage', conf, 'device', 'undrain', ADDRESS)
    assert (out.returncode, out.stdout.strip()) == (0, '%s was not drained' % ADDRESS)

    out = env.run('tracker-manage', conf, 'device', 'drain', ADDRESS)
    assert out.returncode == 2 and '--reason' in out.stderr
