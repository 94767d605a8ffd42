"""nova's CPU options on a fake host: [compute] cpu_shared_set and
cpu_dedicated_set (VCPU and PCPU), the legacy vcpu_pin_set, and which
guests claim PCPU."""
import pytest

from tests.unit.drivers.test_host_driver import ROOT
from tests.unit.drivers.test_host_driver import allocations
from tests.unit.drivers.test_host_driver import instances_file
from tracker import nova_opts
from tracker.drivers import load_driver
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.layout import numa_uuid


def inventories(snapshot, uuid=ROOT):
    return {rc: (i['total'], i['reserved'], i['allocation_ratio'])
            for rc, i in next(p for p in snapshot.providers
                              if p.uuid == uuid).inventories.items()
            if rc in ('VCPU', 'PCPU')}


@pytest.mark.parametrize('text, cpus', [
    ('4-12,^8,15', {4, 5, 6, 7, 9, 10, 11, 12, 15}),
    ('0', {0}),
    (' 1 , 3-4 ', {1, 3, 4}),
])
def test_cpu_sets_read_as_nova_writes_them(text, cpus):
    assert nova_opts.parse_cpu_set(text, 'x') == cpus


@pytest.mark.parametrize('text, message', [
    ('a-b', "x: 'a-b' is not a CPU number or range"),
    ('5-3', "x: invalid range '5-3'"),
    ('2,^2', "x = '2,^2' leaves no CPU"),
])
def test_bad_cpu_sets_are_clear_errors(text, message):
    with pytest.raises(DiscoveryError) as err:
        nova_opts.parse_cpu_set(text, 'x')
    assert str(err.value) == message


def test_without_cpu_sets_every_online_cpu_is_a_vcpu(conf, fake_host):
    fake_host(cpus='0-7')

    assert inventories(load_driver(conf, 'host').discover()) == {
        'VCPU': (8, 0, 4.0)}


def test_dedicated_cpus_give_pcpu_and_shared_ones_vcpu(conf, fake_host):
    host = fake_host(cpus='0-7')
    conf.set_override('cpu_shared_set', '0-1', 'compute')
    conf.set_override('cpu_dedicated_set', '2-7,^3', 'compute')
    conf.set_override('cpu_allocation_ratio', 8.0)
    instances_file(host, conf, [
        # nova's flavor says dedicated: every vCPU is a PCPU
        {'uuid': 'pinned', 'vcpus': 2, 'memory_mb': 512,
         'cpu_policy': 'dedicated'},
        {'uuid': 'floating', 'vcpus': 3, 'memory_mb': 512}])

    snapshot = load_driver(conf, 'host').discover()

    # PCPU is never overcommitted nor reserved; VCPU takes the ratio
    assert inventories(snapshot) == {'VCPU': (2, 0, 8.0), 'PCPU': (5, 0, 1.0)}
    assert allocations(snapshot) == {
        'pinned': {ROOT: {'PCPU': 2, 'MEMORY_MB': 512}},
        'floating': {ROOT: {'VCPU': 3, 'MEMORY_MB': 512}}}


def test_only_dedicated_cpus_means_no_vcpu(conf, fake_host):
    fake_host(cpus='0-7')
    conf.set_override('cpu_dedicated_set', '4-7', 'compute')

    assert inventories(load_driver(conf, 'host').discover()) == {
        'PCPU': (4, 0, 1.0)}


def test_vcpu_pin_set_wins_over_cpu_shared_set(conf, fake_host):
    fake_host(cpus='0-7')
    conf.set_override('vcpu_pin_set', '2-5')
    conf.set_override('cpu_shared_set', '0-7', 'compute')

    assert inventories(load_driver(conf, 'host').discover()) == {
        'VCPU': (4, 0, 4.0)}


def test_numa_nodes_split_their_cpus_between_vcpu_and_pcpu(conf, fake_host):
    host = fake_host(cpus='0-7', memory_mb=8192)
    host.numa_node(0, '0-3', 4096)
    host.numa_node(1, '4-7', 4096)
    conf.set_override('numa_providers', True, 'tracker')
    conf.set_override('cpu_shared_set', '0-1,4-5', 'compute')
    conf.set_override('cpu_dedicated_set', '2-3,6-7', 'compute')

    snapshot = load_driver(conf, 'host').discover()

    for node in (0, 1):
        assert inventories(snapshot, numa_uuid('node1', node)) == {
            'VCPU': (2, 0, 4.0), 'PCPU': (2, 0, 1.0)}


@pytest.mark.parametrize('options, message', [
    ({'vcpu_pin_set': '0-3', 'cpu_dedicated_set': '4-7'},
     'vcpu_pin_set cannot be set with [compute] cpu_dedicated_set'),
    ({'reserved_host_cpus': 1, 'cpu_shared_set': '0-3'},
     'reserved_host_cpus cannot be set with [compute] cpu_shared_set or '
     'cpu_dedicated_set'),
    ({'cpu_shared_set': '0-4', 'cpu_dedicated_set': '4-7'},
     '[compute] cpu_shared_set and cpu_dedicated_set overlap on CPUs 4'),
    ({'cpu_dedicated_set': '6-9'},
     'CPU sets name CPUs that are not online: 8,9 (online: 0,1,2,3,4,5,6,7)'),
])
def test_cpu_sets_nova_refuses_are_refused(conf, fake_host, options, message):
    fake_host(cpus='0-7')
    for name, value in options.items():
        group = 'compute' if name.startswith('cpu_') else None
        conf.set_override(name, value, group)

    with pytest.raises(DiscoveryError) as err:
        load_driver(conf, 'host').discover()
    assert message in str(err.value)


def test_ratios_nova_leaves_to_placement_are_marked(conf, fake_host):
    fake_host(cpus='0-3')
    conf.set_override('ram_allocation_ratio', 1.5)
    conf.set_override('initial_cpu_allocation_ratio', 16.0)

    root = load_driver(conf, 'host').discover().root

    # configured: written; unset: the initial ratio, placement's kept
    assert root.inventories['MEMORY_MB']['allocation_ratio'] == 1.5
    assert root.inventories['VCPU']['allocation_ratio'] == 16.0
    assert root.placement_ratios == {'VCPU': False, 'DISK_GB': False}
