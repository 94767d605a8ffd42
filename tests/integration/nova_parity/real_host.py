"""Run inside nova 34's functional virtualenv, against the real libvirtd
(QEMU, TCG) at $PARITY_LIBVIRT_URI: nova-compute 34 (its own service,
LibvirtDriver, resource tracker and report client, upstream placement
behind nova's fixture) reports this host, and the agent's libvirt driver
and layout read the same libvirtd; both trees written as JSON under
'real' in $PARITY_OUT.

nova's venv has no libvirt-python of its own: the caller lends it the
test interpreter's (same Python) on PYTHONPATH. nova's functional
framework forbids two things a real host does at start, and they are
stubbed: libvirt's event thread (nova's tests never run it) and listing
the machine's IP addresses (for [DEFAULT] my_ip's warning only).

Run by tests/integration/test_nova_parity.py with
``python -m unittest tests/integration/nova_parity/real_host.py``.
"""
import os

import fixtures
from nova.tests.functional import integrated_helpers
from oslo_config import cfg

from tests.integration.nova_parity import trees

URI = os.environ['PARITY_LIBVIRT_URI']


def agent_tree(hostname, instances_path):
    """The agent's tree of the same libvirtd, by its own driver."""
    from tracker.drivers import options
    from tracker.drivers.libvirt import LibvirtDriver
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('host', hostname)
    conf.set_override('instances_path', instances_path)
    conf.set_override('connection_uri', URI, 'libvirt')
    conf.set_override('virt_type', 'qemu', 'libvirt')
    driver = LibvirtDriver(conf)
    try:
        providers = driver.discover().providers
    finally:
        driver.close()
    names = {p.uuid: p.name for p in providers}
    return {p.name: {'parent': names.get(p.parent_uuid),
                     'inventories': p.inventories,
                     'traits': sorted(p.traits)} for p in providers}


class RealHost(integrated_helpers._IntegratedTestBase):

    microversion = 'latest'

    def _setup_compute_service(self):
        """Started by the test, on the real libvirtd."""

    def test_real_host(self):
        instances = self.useFixture(fixtures.TempDir()).path
        self.flags(compute_driver='libvirt.LibvirtDriver',
                   instances_path=instances)
        self.flags(connection_uri=URI, virt_type='qemu', group='libvirt')
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.host.Host._init_events'))
        self.useFixture(fixtures.MockPatch(
            'nova.compute.utils.get_machine_ips', return_value=[]))
        compute = self.start_service('compute', host='compute1')
        nodename = compute.manager.driver._host.get_hostname()
        [provider] = self.placement.get(
            '/resource_providers?name=%s' % nodename,
            version='1.39').body['resource_providers']
        trees.record('real', {
            'nova': trees.nova_tree(self.placement, provider['uuid']),
            'agent': agent_tree(nodename, instances)})

