"""Runs inside nova 34.0.0's virtualenv (tests/integration/test_nova_framework.py):
nova's own compute code moves servers between two computes (nova's libvirt
driver on nova's fakelibvirt, nova's PlacementFixture in front of our
placement, nova's API), and at every step the agent audits both hosts
in process: its libvirt driver reads each compute's fake libvirt
connection, its report client reads the fixture's placement, and it asks
nova's API what is moving. With orphan_grace 0: no finding, no write.
"""
import json
import os
import tempfile

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from nova import conf as nova_conf
from nova import context as nova_context
from nova.cmd import manage
from nova.tests.functional.libvirt import base
from nova.tests.functional.libvirt import test_vgpu
from nova.virt.libvirt.driver import LibvirtDriver as NovaLibvirtDriver
from oslo_config import cfg

from tests.integration.nova_framework import fake_host  # before tracker's libvirt
from tracker import conf as tracker_conf
from tracker import nova_api
from tracker import nova_audit
from tracker import reconcile
from tracker.drivers.libvirt import LibvirtDriver
from tracker.placement.client import ReportClient

HOSTS = ('host1', 'host2')


def LEFT_DEFINED(server):
    """The source's domain after a confirm or a live migration: nova
    undefines it only when the instance's host is not CONF.host, which in
    nova's framework is one for every compute, so fakelibvirt keeps it
    (shut off). The agent sees a domain whose instance holds only on the
    other host, and leaves it alone (held)."""
    return [server['id']]


class _AgentBeside(base.LibvirtMigrationMixin, base.ServersTestBase):
    """The agent's audit beside each of nova's computes (no tests here)."""

    microversion = 'latest'
    ADMIN_API = True
    AGENT_OPTS: tuple = ()      # (name, value, group) the agent reads from nova.conf

    def setUp(self):
        super().setUp()
        self.flags(allow_resize_to_same_host=False)
        self.start_computes()
        self.placement_writes = []
        self.ages = {host: reconcile.ConsumerAges() for host in HOSTS}

    def start_computes(self):
        for host in HOSTS:
            self.start_compute(host)

    def _placement(self):
        endpoint = self.placement.fixture.endpoint
        session = ks_session.Session(auth=token_endpoint.Token(endpoint, 'admin'))
        session.session.hooks['response'].append(self._record)
        return ks_adapter.Adapter(session, service_type='placement', raise_exc=False,
                                  additional_headers={'X-Roles': 'admin,service'})

    def _record(self, response, *args, **kwargs):
        if response.request.method != 'GET':
            self.placement_writes.append((response.request.method,
                                          response.request.url, response.status_code))
        return response

    def _nova(self):
        session = ks_session.Session(
            auth=token_endpoint.Token(self.api.base_url, 'admin'))
        return nova_api.NovaApi(ks_adapter.Adapter(
            session, service_type='compute', raise_exc=False, additional_headers={
                'X-Auth-User': 'admin', 'X-User-Id': 'admin',
                'X-Auth-Project-Id': self.api.project_id,
                'X-Roles': 'reader,member,admin'}))

    def _conf(self, host):
        state = tempfile.mkdtemp()
        with open(os.path.join(state, 'compute_id'), 'w') as f:
            f.write(self.compute_rp_uuids[host] + '\n')
        conf = tracker_conf.load([], conf=cfg.ConfigOpts())
        for name, value, group in (
                ('driver', 'libvirt', 'tracker'), ('host', host, None),
                ('state_path', state, None),
                ('instances_path', nova_conf.CONF.instances_path, None),
                ('orphan_grace', 0, 'tracker'), ('notifications', False, 'tracker'),
                *self.AGENT_OPTS):
            conf.set_override(name, value, group)
        return conf

    def _disks(self, conn):
        """nova's image backend is mocked: its disk files are made here, as
        nova sizes them (the flavour's root disk; one instances_path for both
        computes, as shared storage)."""
        for dom in conn.listAllDomains():
            # nova's API, not its database: this may run inside a compute's
            # own database transaction (``during``)
            root_gb = self.admin_api.get_server(dom.UUIDString())['flavor']['disk']
            for disk in dom.dom._def['devices']['disks']:
                path = disk.get('source')
                if disk['type'] == 'file' and path and os.path.basename(path) == 'disk':
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, 'wb') as f:
                        f.truncate(root_gb * 1024 ** 3)

    def _agent(self, host):
        conf = self._conf(host)
        driver = LibvirtDriver(conf)
        driver.connection = fake_host.Connection(self.computes[host].driver._host.get_connection())
        self._disks(driver.connection)
        return conf, driver.discover(), ReportClient(adapter=self._placement())

    def audit(self, host, fix=False):
        """The agent's --dry-run (or --fix) audit of one host."""
        conf, snapshot, client = self._agent(host)
        return nova_audit.audit(snapshot, client, conf, self.ages[host],
                                self.compute_rp_uuids[host], fix=fix, dry_run=not fix,
                                nova=self._nova())

    def daemon(self, host, cycles=2):
        """The daemon's cycles with repair_allocations = true: their findings."""
        conf, snapshot, client = self._agent(host)
        conf.set_override('repair_allocations', True, 'tracker')
        found = []
        for _ in range(cycles):
            findings, _, _ = nova_audit.cycle(snapshot, client, conf, self.ages[host],
                                              self.compute_rp_uuids[host], set(),
                                              self._nova())
            found += [d.describe() for d in findings.drift]
        return found

    def assert_untouched(self, step, held=None):
        """Both hosts: no finding, nothing a --fix would write, no write;
        ``held``: {host: the consumers left alone there}."""
        for host in HOSTS:
            report = self.audit(host)
            self.assertEqual([], [d.describe() for d in report.drift], (step, host))
            self.assertEqual([], report.writes, (step, host))
            self.assertEqual([], self.daemon(host), (step, host))
            if held is not None:
                self.assertEqual(sorted(held.get(host, ())),
                                 sorted(d.uuid for d in report.held),
                                 (step, host, [d.describe() for d in report.held]))
        self.assertEqual([], self.placement_writes, step)

    def during(self, target, step):
        """Audit both hosts inside nova's ``target`` (a compute step in
        flight); what fails is raised at the end of the test."""
        original = getattr(NovaLibvirtDriver, target)
        failures = self.failures = getattr(self, 'failures', [])

        def audited(driver, *args, **kwargs):
            try:
                self.assert_untouched(step)
            except Exception as exc:      # nova would swallow it
                failures.append('%s: %s' % (step, exc))
            return original(driver, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.libvirt.driver.LibvirtDriver.' + target, audited))
        self.addCleanup(lambda: self.assertEqual([], failures))

    def flavor(self, vcpu, memory_mb, disk, extra_spec=None):
        return self._create_flavor(vcpu=vcpu, memory_mb=memory_mb, disk=disk,
                                   ephemeral=0, swap=0, extra_spec=extra_spec)

    def boot(self, flavor=None):
        server = self._create_server(host='host1', networks='none',
                                     flavor_id=flavor or self.flavor(1, 512, 1))
        self.assert_untouched('booted')
        return server

    def _get_migration_uuid(self, server):
        self.admin_api.microversion = '2.80'
        found = self.admin_api.api_get(
            '/os-migrations?instance_uuid=%s' % server['id']).body['migrations']
        return found[0]['uuid']

    def plant(self, server, allocations):
        """Write the server's allocation behind nova, as nova writes (1.36)."""
        held = self.placement.get('/allocations/%s' % server['id'], version='1.38').body
        self.placement.put('/allocations/%s' % server['id'], {
            'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
            'project_id': held['project_id'], 'user_id': held['user_id'],
            'consumer_generation': held['consumer_generation']}, version='1.36')
        return held

    def assert_repaired(self, server, kind, held):
        """Exactly ``kind`` for ``server``; the dry run's one PUT, then
        --fix's, accepted; the consumer as nova had it, still untyped;
        nova's own placement audit finds nothing, the agent nothing more."""
        report = self.audit('host1')
        self.assertEqual([(kind, server['id'])], [(d.kind, d.uuid) for d in report.drift])
        self.assertEqual([('PUT', '/allocations/' + server['id'])],
                         [(w['method'], w['path']) for w in report.writes])
        self.assertEqual([], self.placement_writes)
        fixed = self.audit('host1', fix=True)
        self.assertEqual(([], []), (fixed.remaining, fixed.errors))
        self.assertEqual(['PUT'], [m for m, _, status in self.placement_writes
                                   if 200 <= status < 300])
        after = self.placement.get('/allocations/%s' % server['id'], version='1.38').body
        self.assertEqual('unknown', after['consumer_type'])
        self.assertEqual((held['project_id'], held['user_id']),
                         (after['project_id'], after['user_id']))
        self.assertEqual(*({rp: a['resources'] for rp, a in body['allocations'].items()}
                           for body in (held, after)))
        self.assertEqual(0, manage.PlacementCommands().audit(verbose=True))
        # nova's periodic task heals nothing: the consumer is not written again
        self.computes['host1'].manager.update_available_resource(
            nova_context.get_admin_context())
        again = self.placement.get('/allocations/%s' % server['id'], version='1.38').body
        self.assertEqual(after['consumer_generation'], again['consumer_generation'])
        self.placement_writes.clear()
        self.assert_untouched('repaired')


class AgentBesideNova(_AgentBeside):
    """nova's moves, audited on both hosts at every step."""

    def test_cold_migrate_confirm(self):
        server = self.boot()
        self.during('migrate_disk_and_power_off', 'source in flight')
        self.during('finish_migration', 'destination before its domain')
        server = self._migrate_server(server, host='host2')
        migration = self._get_migration_uuid(server)
        self.assert_untouched('VERIFY_RESIZE', {'host1': [server['id'], migration]})
        self.during('confirm_migration', 'confirming')
        self._confirm_resize(server)
        self.assert_untouched('confirmed', {'host1': LEFT_DEFINED(server)})

    def _resize_and_back(self, new, revert):
        server = self.boot(self.flavor(2, 1024, 2))
        self.during('migrate_disk_and_power_off', 'source in flight')
        self.during('finish_migration', 'destination before its domain')
        server = self._resize_server(server, self.flavor(*new))
        migration = self._get_migration_uuid(server)
        self.assert_untouched('VERIFY_RESIZE', {'host1': [server['id'], migration]})
        if revert:
            self.during('finish_revert_migration', 'reverting')
            self._revert_resize(server)
            self.assert_untouched('reverted', {})
        else:
            self._confirm_resize(server)
            self.assert_untouched('confirmed', {'host1': LEFT_DEFINED(server)})

    def test_resize_up_confirm(self):
        self._resize_and_back((4, 2048, 4), revert=False)

    def test_resize_up_revert(self):
        self._resize_and_back((4, 2048, 4), revert=True)

    def test_resize_down_confirm(self):
        self._resize_and_back((1, 512, 2), revert=False)   # libvirt shrinks no disk

    def test_resize_down_revert(self):
        self._resize_and_back((1, 512, 2), revert=True)

    def _migrate_stub(self, domain, destination, params, flags):
        """nova's libvirt live migration, audited when both domains exist."""
        self.dest.driver._host.get_connection().createXML(
            params['destination_xml'], 'fake-createXML-doesnt-care-about-flags')
        self.assert_untouched('live migration in flight', {
            'host1': [self.server['id'], self._get_migration_uuid(self.server)]})
        conn = self.src.driver._host.get_connection()
        conn.lookupByUUIDString(self.server['id']).complete_job()

    def test_live_migration(self):
        self.server = self.boot()
        self.src, self.dest = self.computes['host1'], self.computes['host2']
        self._live_migrate(self.server, host='host2')
        self.assert_untouched('migrated', {'host1': LEFT_DEFINED(self.server)})

    def test_evacuate_and_the_source_coming_back(self):
        server = self.boot()
        service = self.admin_api.get_services(host='host1', binary='nova-compute')[0]
        self.computes['host1'].stop()
        self.admin_api.put_service_force_down(service['id'], True)
        self.during('spawn', 'evacuation: the destination before its domain')
        self._evacuate_server(server, expected_host='host2')
        self.assert_untouched('evacuated', {})
        self.computes['host1'].start()   # nova cleans the source up
        self.admin_api.put_service_force_down(service['id'], False)
        self.assert_untouched('source back', {})

    def test_planted_drift_is_found_and_repaired_as_nova_accepts(self):
        """A quiet host, a guest's allocation shrunk behind nova."""
        server = self.boot(self.flavor(2, 1024, 2))
        root = self.compute_rp_uuids['host1']
        held = self.plant(server, {root: {'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 2}})
        self.assert_repaired(server, 'allocation_differs', held)

    def test_shelve_offload_and_unshelve(self):
        server = self.boot()
        self.during('destroy', 'offloading')
        self._shelve_server(server)
        self.assert_untouched('offloaded', {})
        self.during('spawn', 'unshelving before its domain')
        self._unshelve_server(server)
        self.assert_untouched('unshelved', {})


PCI_RC = 'CUSTOM_PCI_%s_%s' % (fake_host.fakelibvirt.PCI_VEND_ID,
                               fake_host.fakelibvirt.PCI_PROD_ID)
PCI_SPEC = [json.dumps({'vendor_id': fake_host.fakelibvirt.PCI_VEND_ID,
                        'product_id': fake_host.fakelibvirt.PCI_PROD_ID})]


class PciDriftBesideNova(_AgentBeside):
    """PCI in placement as nova's test_pci_in_placement sets it up: the
    device's child part left out behind nova is found and put back."""

    ADDITIONAL_FILTERS = ['NUMATopologyFilter', 'PciPassthroughFilter']
    AGENT_OPTS = (('report_in_placement', True, 'pci'), ('device_spec', PCI_SPEC, 'pci'))

    def start_computes(self):
        self.flags(group='pci', report_in_placement=True, device_spec=PCI_SPEC,
                   alias=[json.dumps({'vendor_id': fake_host.fakelibvirt.PCI_VEND_ID,
                                      'product_id': fake_host.fakelibvirt.PCI_PROD_ID,
                                      'name': 'a1', 'device_type': 'type-PCI'})])
        self.flags(group='filter_scheduler', pci_in_placement=True)
        pci = fake_host.fakelibvirt.HostPCIDevicesInfo(num_pci=1, numa_node=0)
        self.start_compute('host1', pci_info=pci)
        self.start_compute('host2')

    def test_a_pci_child_part_left_out_is_put_back(self):
        server = self.boot(self.flavor(1, 512, 1, {'pci_passthrough:alias': 'a1:1'}))
        root = self.compute_rp_uuids['host1']
        held = self.placement.get('/allocations/%s' % server['id'], version='1.38').body
        self.assertIn(PCI_RC, [rc for rp in held['allocations'].values()
                               for rc in rp['resources']])
        self.plant(server, {root: held['allocations'][root]['resources']})
        self.assert_repaired(server, 'allocation_device_missing', held)


class VgpuDriftBesideNova(_AgentBeside, test_vgpu.VGPUTestBase):
    """vGPUs as nova's test_vgpu sets them up (mdevs on a GPU's child
    provider): the mdev's child part left out behind nova is put back."""

    AGENT_OPTS = (('enabled_mdev_types', [fake_host.fakelibvirt.NVIDIA_11_VGPU_TYPE],
                   'devices'),)

    def start_computes(self):
        self.flags(enabled_mdev_types=fake_host.fakelibvirt.NVIDIA_11_VGPU_TYPE,
                   group='devices')
        self.start_compute_with_vgpu('host1')
        self.start_compute('host2')

    def test_a_vgpu_child_part_left_out_is_put_back(self):
        server = self.boot(self.flavor(1, 512, 1, {'resources:VGPU': '1'}))
        root = self.compute_rp_uuids['host1']
        held = self.placement.get('/allocations/%s' % server['id'], version='1.38').body
        self.assertIn('VGPU', [rc for rp, a in held['allocations'].items() if rp != root
                               for rc in a['resources']])
        self.plant(server, {root: held['allocations'][root]['resources']})
        self.assert_repaired(server, 'allocation_device_missing', held)
