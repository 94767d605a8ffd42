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
import shutil
import sys
import tempfile
from unittest import mock

import fixtures
from nova import context
from nova import objects
from nova.scheduler import request_filter
from nova.scheduler import utils as sched_utils
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


def record(key, value):
    found = {}
    if os.path.exists(OUT):
        with open(OUT) as f:
            found = json.load(f)
    found[key] = value
    with open(OUT, 'w') as f:
        json.dump(found, f, indent=1, sort_keys=True)


def write_tree(api, providers):
    """The agent's providers into placement, parents first."""
    for p in providers:
        api.post('/resource_providers', {
            'uuid': p.uuid, 'name': p.name,
            'parent_provider_uuid': p.parent_uuid}, version='1.39')
        for trait in p.traits:
            if trait.startswith('CUSTOM_'):
                api.put('/traits/' + trait, None, version='1.39')
        api.put('/resource_providers/%s/inventories' % p.uuid, {
            'resource_provider_generation': 0,
            'inventories': p.inventories}, version='1.39')
        api.put('/resource_providers/%s/traits' % p.uuid, {
            'resource_provider_generation': 1,
            'traits': sorted(p.traits)}, version='1.39')


def agent_tree(connection, hostname, overrides):
    """The agent's tree for the fake connection, by its own driver."""
    providers, _ = agent_providers(connection, hostname, overrides)
    names = {p.uuid: p.name for p in providers}
    return {p.name: {'parent': names.get(p.parent_uuid),
                     'inventories': p.inventories,
                     'traits': sorted(p.traits)} for p in providers}


def agent_providers(connection, hostname, overrides):
    """The agent's providers and root uuid for the fake connection."""
    # the fake lacks the classes the driver names in its annotations
    for name in ('virConnect', 'virDomain', 'virStorageVol', 'virStoragePool',
                 'virNodeDevice'):
        if not hasattr(fakelibvirt, name):
            setattr(fakelibvirt, name, type(name, (), {}))
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
    return snapshot.providers, snapshot.root.uuid


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
        record(shape, result)

    def _pci_in_placement(self):
        self.flags(group='pci', report_in_placement=True)
        # nova's PCI tests do not read the host's sysfs
        self.useFixture(fixtures.MockPatch('nova.pci.utils.is_physical_function'))
        self.useFixture(fixtures.MockPatch(
            'nova.pci.utils.get_function_by_ifname', return_value=(None, False)))

    def test_pci_in_placement(self):
        """As nova's own test_new_compute_init_with_pci_devs: two plain
        devices, a one-time-use PF, two PFs' VFs, named traits."""
        self._pci_in_placement()
        vendor = fakelibvirt.PCI_VEND_ID
        spec = [json.dumps(s) for s in (
            {'vendor_id': vendor, 'product_id': fakelibvirt.PCI_PROD_ID,
             'traits': 'HW_GPU_API_VULKAN,CUSTOM_GPU,purple'},
            {'vendor_id': vendor, 'product_id': fakelibvirt.PF_PROD_ID,
             'address': '0000:81:02.0', 'traits': 'HW_NIC_SRIOV,CUSTOM_PF,pf-white',
             'one_time_use': 'true'},
            {'vendor_id': vendor, 'product_id': fakelibvirt.VF_PROD_ID,
             'address': '0000:81:03.*', 'live_migratable': 'true',
             'traits': 'HW_NIC_SRIOV_TRUSTED,CUSTOM_VF,vf-red'},
            {'vendor_id': vendor, 'product_id': fakelibvirt.VF_PROD_ID,
             'address': '0000:81:02.*', 'physical_network': 'physnet1'})]
        self.flags(group='pci', device_spec=spec)
        self._both('pci', fakelibvirt.HostInfo(), {
            ('pci', 'report_in_placement'): True,
            ('pci', 'device_spec'): spec},
            pci_info=fakelibvirt.HostPCIDevicesInfo(
                num_pci=2, num_pfs=2, num_vfs=4),
            # live_migratable devices need libvirt 10.0 and QEMU 8.2.2
            libvirt_version=10000000, qemu_version=8002002)

    def test_vgpu(self):
        """As nova's vGPU tests: two GPUs offering nvidia-11."""
        self.flags(enabled_mdev_types=[fakelibvirt.NVIDIA_11_VGPU_TYPE],
                   group='devices')
        self._both('vgpu', fakelibvirt.HostInfo(), {
            ('devices', 'enabled_mdev_types'): [fakelibvirt.NVIDIA_11_VGPU_TYPE]},
            pci_info=fakelibvirt.HostPCIDevicesInfo(
                num_pci=0, num_pfs=0, num_vfs=0, num_mdevcap=2))

    def test_scheduler_finds_the_agents_host(self):
        """A nova 34 request, through nova's own request filters (image
        type and image metadata prefilters on, owner_nova_filter active:
        every nova-compute here is at 34), against the agent's tree
        written to placement beside nova's."""
        self.flags(query_placement_for_image_type_support=True,
                   image_metadata_prefilter=True, group='scheduler')
        hostname = self.start_compute('compute1', host_info=fakelibvirt.HostInfo())
        connection = self.computes[hostname].driver._host.get_connection()
        tree, root = agent_providers(connection, 'agent1', {})
        write_tree(self.placement, tree)
        ctxt = context.get_admin_context()
        spec = objects.RequestSpec(
            flavor=objects.Flavor(vcpus=2, memory_mb=1024, root_gb=10,
                                  ephemeral_gb=0, swap=0, extra_specs={}),
            image=objects.ImageMeta.from_dict({
                'disk_format': 'qcow2', 'properties': {
                    'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
                    'hw_video_model': 'virtio'}}),
            is_bfv=False, project_id='p', user_id='u',
            availability_zone=None, requested_resources=[],
            pci_requests=objects.InstancePCIRequests(requests=[]))
        request_filter.process_reqspec(ctxt, spec)
        query = sched_utils.ResourceRequest.from_request_spec(
            spec).to_querystring()
        found = self.placement.get('/allocation_candidates?' + query,
                                   version='1.39').body
        roots = sorted({rp for req in found['allocation_requests']
                        for rp in req['allocations']})
        record('scheduler-' + os.environ.get('PLACEMENT_FIXTURE_APP',
                                             'upstream'),
               {'query': query, 'agent_root': root, 'providers': roots,
                'root_required': sorted(spec.root_required),
                'root_forbidden': sorted(spec.root_forbidden)})

    def test_scheduler_finds_the_agents_sev_es_context(self):
        """A nova 34 request for an SEV-ES guest (the image's
        hw_mem_encryption_model, UEFI, q35): MEM_ENCRYPTION_CONTEXT with
        the model's trait, on nova's host and the agent's alike."""
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_SEV,
            {'sev': True, 'sev-es': True, 'sev-snp': False})
        hostname = self.start_compute(
            'compute1', host_info=fakelibvirt.HostInfo(), qemu_version=8000000)
        connection = self.computes[hostname].driver._host.get_connection()
        tree, _ = agent_providers(connection, 'agent1', overrides)
        write_tree(self.placement, tree)
        spec = objects.RequestSpec(
            flavor=objects.Flavor(vcpus=2, memory_mb=1024, root_gb=10,
                                  ephemeral_gb=0, swap=0, extra_specs={},
                                  name='sev-es'),
            image=objects.ImageMeta.from_dict({
                'disk_format': 'qcow2', 'properties': {
                    'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35',
                    'hw_mem_encryption': True,
                    'hw_mem_encryption_model': 'amd-sev-es'}}),
            is_bfv=False, project_id='p', user_id='u',
            availability_zone=None, requested_resources=[],
            pci_requests=objects.InstancePCIRequests(requests=[]))
        request_filter.process_reqspec(context.get_admin_context(), spec)
        query = sched_utils.ResourceRequest.from_request_spec(
            spec).to_querystring()
        found = self.placement.get('/allocation_candidates?' + query,
                                   version='1.39').body
        names = {p['uuid']: p['name'] for p in self.placement.get(
            '/resource_providers', version='1.39').body['resource_providers']}
        record('scheduler-sev-es-' + os.environ.get('PLACEMENT_FIXTURE_APP',
                                                    'upstream'),
               {'query': query, 'candidates': sorted(
                   sorted([names[rp], sorted(a['resources'])]
                          for rp, a in req['allocations'].items())
                   for req in found['allocation_requests'])})

    def _mem_encryption(self, features, kernel=None, misc_capacity=None):
        """The host's memory-encryption sources, one truth for both: the
        domain capabilities' <features>, the kvm_amd module's parameters
        (nova's fixture answers for nova, a sysfs tree for the agent) and
        the misc cgroup's capacity file (read by both)."""
        self.useFixture(fixtures.MockPatchObject(
            fakelibvirt.virConnect, '_domain_capability_features', features))
        sysfs = tempfile.mkdtemp(prefix='parity-sysfs-')
        self.addCleanup(shutil.rmtree, sysfs)
        params = os.path.join(sysfs, 'module', 'kvm_amd', 'parameters')
        os.makedirs(params)
        for model, on in (kernel or {}).items():
            setattr(self.libvirt.amd_sev, model.replace('-', '_'), on)
            with open(os.path.join(params, model.replace('-', '_')), 'w') as f:
                f.write('Y\n' if on else 'N\n')
        cgroup = os.path.join(sysfs, 'fs', 'cgroup')
        os.makedirs(cgroup)
        capacity = os.path.join(cgroup, 'misc.capacity')
        if misc_capacity is not None:
            with open(capacity, 'w') as f:
                f.write('res_a 10\ntdx %d\n' % misc_capacity)
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.host.MISC_CONTROL_GROUP_CAPACITY_FILE', capacity))
        return {('tracker', 'sysfs_root'): sysfs}

    def test_amd_sev(self):
        """SEV only (no SEV-ES in the kernel): one child, maxGuests slots."""
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_SEV,
            {'sev': True, 'sev-es': False, 'sev-snp': False})
        self._both('amd_sev', fakelibvirt.HostInfo(), overrides)

    def test_amd_sev_es(self):
        """SEV and SEV-ES (QEMU 8.0): maxGuests and maxESGuests."""
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_SEV,
            {'sev': True, 'sev-es': True, 'sev-snp': False})
        self._both('amd_sev_es', fakelibvirt.HostInfo(), overrides,
                   qemu_version=8000000)

    def test_amd_sev_snp(self):
        """SEV-SNP in the kernel and libvirt's launchSecurity: SEV and
        SNP (on maxESGuests); SEV-ES is then not offered."""
        overrides = self._mem_encryption(
            fakelibvirt.virConnect
            ._domain_capability_features_with_launch_security_SEV_SNP,
            {'sev': True, 'sev-es': True, 'sev-snp': True})
        self._both('amd_sev_snp', fakelibvirt.HostInfo(), overrides,
                   qemu_version=8000000)

    def test_amd_sev_es_old_qemu(self):
        """SEV-ES in the kernel but QEMU before 8.0: SEV only."""
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_SEV,
            {'sev': True, 'sev-es': True, 'sev-snp': False})
        self._both('amd_sev_es_old_qemu', fakelibvirt.HostInfo(), overrides,
                   qemu_version=7002000)

    def test_intel_tdx(self):
        """TDX with host-passthrough CPUs, its keys from the misc cgroup."""
        self.flags(cpu_mode='host-passthrough', group='libvirt')
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_TDX,
            misc_capacity=63)
        overrides[('libvirt', 'cpu_mode')] = 'host-passthrough'
        self._both('intel_tdx', fakelibvirt.HostInfo(), overrides)

    def test_intel_tdx_configured(self):
        """No misc cgroup (a container): [libvirt] num_intel_tdx_guests."""
        self.flags(cpu_mode='host-passthrough', num_intel_tdx_guests=7,
                   group='libvirt')
        overrides = self._mem_encryption(
            fakelibvirt.virConnect._domain_capability_features_with_TDX)
        overrides[('libvirt', 'cpu_mode')] = 'host-passthrough'
        overrides[('libvirt', 'num_intel_tdx_guests')] = 7
        self._both('intel_tdx_configured', fakelibvirt.HostInfo(), overrides)

    def test_plain_host(self):
        self._both('plain', fakelibvirt.HostInfo(
            cpu_nodes=2, cpu_sockets=1, cpu_cores=2, cpu_threads=2,
            kB_mem=16 * 1024 * 1024))
