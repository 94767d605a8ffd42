"""The fake driver: a host from a YAML file, re-read on every discovery."""
import pytest
import yaml

from tracker.drivers import load_driver
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.layout import root_uuid
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid

SHARED = '5a1e7c0c-0000-4000-8000-5ba4ed5707a9'
AGG = 'c2d6a0a4-5c55-4a0e-9d5e-5f1d6c0b9a11'

HOST = {
    'hostname': 'fake-1',
    'providers': [
        {'name': 'fake-1',
         'inventories': {'VCPU': 8,
                         'MEMORY_MB': {'total': 16384, 'reserved': 512,
                                       'allocation_ratio': 1.5}},
         'traits': ['COMPUTE_NODE'], 'aggregates': [AGG]},
        {'name': 'fake-1_NUMA0', 'inventories': {'PCPU': 4}},
        {'name': 'fake-1_gpu', 'parent': 'fake-1_NUMA0',
         'uuid': 'b2f0e6a6-6c0d-4f5e-8d3c-1a2b3c4d5e6f',
         'inventories': {'VGPU': {'total': 4, 'max_unit': 2}},
         'traits': ['CUSTOM_MDEV_NVIDIA_222']},
    ],
    'instances': [
        {'uuid': 'i-1', 'name': 'vm1', 'project_id': 'p', 'user_id': 'u',
         'allocations': {'fake-1': {'VCPU': 2, 'MEMORY_MB': 2048},
                         'fake-1_gpu': {'VGPU': 1},
                         SHARED: {'DISK_GB': 20}}},
    ],
}


@pytest.fixture
def host_file(conf, tmp_path):
    path = tmp_path / 'host.yaml'

    def write(data):
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    conf.set_override('host_file', str(path), 'fake')
    write(HOST)
    return write


def test_tree_and_allocations(conf, host_file):
    snapshot = load_driver(conf, 'fake').discover()

    root = root_uuid('fake-1')
    numa = stable_uuid('fake-1', 'fake', 'fake-1_NUMA0')
    gpu = 'b2f0e6a6-6c0d-4f5e-8d3c-1a2b3c4d5e6f'
    assert snapshot.hostname == 'fake-1'
    assert snapshot.providers == [
        Provider(uuid=root, name='fake-1',
                 inventories={'VCPU': inventory(8),
                              'MEMORY_MB': inventory(16384, 512,
                                                     allocation_ratio=1.5)},
                 traits={'COMPUTE_NODE'}, aggregates={AGG}),
        Provider(uuid=numa, name='fake-1_NUMA0', parent_uuid=root,
                 inventories={'PCPU': inventory(4)}),
        Provider(uuid=gpu, name='fake-1_gpu', parent_uuid=numa,
                 inventories={'VGPU': inventory(4, max_unit=2)},
                 traits={'CUSTOM_MDEV_NVIDIA_222'}),
    ]
    [instance] = snapshot.instances
    assert (instance.uuid, instance.name, instance.project_id,
            instance.user_id) == ('i-1', 'vm1', 'p', 'u')
    assert instance.allocations == {
        root: {'VCPU': 2, 'MEMORY_MB': 2048}, gpu: {'VGPU': 1},
        SHARED: {'DISK_GB': 20}}


def test_file_is_reread_on_every_discovery(conf, host_file):
    driver = load_driver(conf, 'fake')
    assert len(driver.discover().instances) == 1

    changed = dict(HOST, instances=[])
    changed['providers'] = [dict(HOST['providers'][0],
                                 inventories={'VCPU': 16})]
    host_file(changed)

    snapshot = driver.discover()
    assert snapshot.instances == []
    assert [p.name for p in snapshot.providers] == ['fake-1']
    assert snapshot.root.inventories == {'VCPU': inventory(16)}


def test_hostname_defaults_to_the_root_name(conf, host_file):
    host_file({'providers': [{'name': 'lonely', 'inventories': {'VCPU': 1}}]})

    snapshot = load_driver(conf, 'fake').discover()

    assert snapshot.hostname == 'lonely'
    assert snapshot.root.uuid == root_uuid('lonely')


def test_needs_a_host_file(conf):
    with pytest.raises(DiscoveryError, match=r'needs \[fake\] host_file'):
        load_driver(conf, 'fake')


@pytest.mark.parametrize('text, message', [
    ('providers: [', 'is not valid YAML'),
    ('providers: []', 'non-empty "providers" list'),
    ('providers: [{inventories: {}}]', 'every provider needs a name'),
    ('providers: [{name: a}, {name: a}]', "provider 'a' appears twice"),
    ('providers: [{name: a}, {name: b, parent: c}]',
     "parent 'c' must be listed before it"),
    ('providers: [{name: a, parent: b}]', 'the root: it has no parent'),
    ('providers: [{name: a, uuid: nope}]', "'nope' is not a uuid"),
    ('providers: [{name: a, inventories: {VCPU: {reserved: 1}}}]',
     'inventory VCPU needs a total'),
    ('providers: [{name: a, inventories: {VCPU: {total: 1, spare: 1}}}]',
     'unknown keys spare'),
    ('providers: [{name: a, colour: red}]', 'unknown keys colour'),
    ('providers: [{name: a}]\ninstances: [{name: x}]',
     'every instance needs a uuid'),
    ('providers: [{name: a}]\ninstances: [{uuid: x, allocations: {b: {}}}]',
     "'b' is not a uuid"),
    ('providers: [{name: a}]\ninstances: [{uuid: x, allocations: {a: 3}}]',
     'must map resource classes to amounts'),
    ('providers: [{name: a, inventories: {VCPU: lots}}]',
     'inventory VCPU needs a total'),
])
def test_bad_file_is_a_clear_error(conf, host_file, text, message):
    host_file(text)

    with pytest.raises(DiscoveryError, match=message):
        load_driver(conf, 'fake').discover()


def test_missing_file_is_a_clear_error(conf, tmp_path):
    conf.set_override('host_file', str(tmp_path / 'gone.yaml'), 'fake')

    with pytest.raises(DiscoveryError, match='gone.yaml: No such file'):
        load_driver(conf, 'fake').discover()
