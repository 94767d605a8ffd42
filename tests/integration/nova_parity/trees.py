"""Run inside nova 34's functional virtualenv: one fakelibvirt host per
shape, the tree nova-compute 34 reports for it (its own services, its
own LibvirtDriver and resource tracker, upstream placement behind nova's
fixture) and the tree the agent's libvirt driver and layout make of the
same fake connection; both written as JSON to $PARITY_OUT.

Run by tests/integration/test_nova_parity.py with
``python -m unittest tests/integration/nova_parity/trees.py``.
"""
import json
import os
import sys
from unittest import mock

from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base
from nova.virt.libvirt import host as nova_host
from oslo_config import cfg

OUT = os.environ['PARITY_OUT']
GIB_DISK = 128        # nova's fixture mocks its local disk to 128 GiB


def nova_tree(api, root_uuid):
    """{name: {parent, inventories, traits}} from placement."""
    tree = {}
    providers = api.get('/resource_providers?in_tree=%s' % root_uuid,
                        version='1.39').body['resource_providers']
    names = {p['uuid']: p['name'] for p in providers}
    for p in providers:
        inv = api.get('/resource_providers/%s/inventories' % p['uuid'],
                      version='1.39').body['inventories']
        traits = api.get('/resource_providers/%s/traits' % p['uuid'],
                         version='1.39').body['traits']
        tree[p['name']] = {'parent': names.get(p['parent_provider_uuid']),
                           'inventories': inv, 'traits': sorted(traits)}
    return tree


def agent_tree(connection, hostname, overrides):
    """The agent's tree for the fake connection, by its own driver."""
    # the fake lacks the classes the driver names in its annotations
    for name in ('virConnect', 'virDomain', 'virStorageVol', 'virStoragePool',
                 'virNodeDevice'):
        if not hasattr(fakelibvirt, name):
            setattr(fakelibvirt, name, object)
    sys.modules['libvirt'] = fakelibvirt
    from tracker.drivers import options
    from tracker.drivers.libvirt import LibvirtDriver
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('host', hostname)
    for (group, name), value in overrides.items():
        conf.set_override(name, value, group)
    driver = LibvirtDriver(conf)
    driver.connection = connection
    rw = mock.Mock(wraps=connection)
    rw.close = lambda: None
    with mock.patch.object(driver, '_read_write', return_value=rw), \
            mock.patch('tracker.drivers.host.disk.disk_gb',
                       return_value=GIB_DISK):
        snapshot = driver.discover()
    names = {p.uuid: p.name for p in snapshot.providers}
    return {p.name: {'parent': names.get(p.parent_uuid),
                     'inventories': p.inventories,
                     'traits': sorted(p.traits)} for p in snapshot.providers}


class Trees(base.ServersTestBase):
    """Each test: one host shape, both trees."""

    microversion = 'latest'

    def setUp(self):
        super().setUp()
        self.found = {}

    def _both(self, shape, host_info, overrides=(), **kwargs):
        # nova's fixture says 16 online CPUs whatever the host: make it
        # this host's, as libvirt would
        nova_host.Host.get_online_cpus.return_value = set(
            range(host_info.cpus))
        hostname = self.start_compute('compute1', host_info=host_info,
                                      **kwargs)
        root = self.compute_rp_uuids[hostname]
        connection = self.computes[hostname].driver._host.get_connection()
        result = {'nova': nova_tree(self.placement, root),
                  'agent': agent_tree(connection, hostname, dict(overrides))}
        found = {}
        if os.path.exists(OUT):
            with open(OUT) as f:
                found = json.load(f)
        found[shape] = result
        with open(OUT, 'w') as f:
            json.dump(found, f, indent=1, sort_keys=True)

    def test_plain_host(self):
        self._both('plain', fakelibvirt.HostInfo(
            cpu_nodes=2, cpu_sockets=1, cpu_cores=2, cpu_threads=2,
            kB_mem=16 * 1024 * 1024))
