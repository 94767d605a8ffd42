"""Upstream placement's gabbi fixtures, re-expressed as HTTP calls.

Upstream's functional suite names its fixtures in each YAML file; upstream
builds their state in Python, straight into its own database. Here each
fixture of the same name builds the same state through the API of the
server under test, so the YAML files run unchanged against a real
``placement-server`` process on any database engine.

This module runs inside the gabbi side virtualenv (``gabbi_run.py`` loads
it as gabbi's fixture module), so it uses only the standard library and
gabbi.

What each fixture does (before the first test of a file):

``APIFixture``
    Empties the server (allocations, providers, custom resource classes
    and traits) and sets the environment the YAML files read: fresh uuids
    and names for RP_*, PROJECT_ID*, USER_ID*, CONSUMER_UUID,
    INSTANCE_UUID, MIGRATION_UUID, PARENT_PROVIDER_UUID, ...
``AllocationFixture``
    One provider (RP_UUID) with DISK_GB 2048 (step 10, min 10, max 1000)
    and VCPU 10; three consumers holding DISK_GB 1000, VCPU 6 and
    DISK_GB 20 + VCPU 1 (the last one for another user).
``SharedStorageFixture``, ``NUMAAggregateFixture``, ``NUMANetworkFixture``,
``DeepNUMANetworkFixture``, ``NonSharedStorageFixture``, ``GranularFixture``,
``NeutronQoSMultiSegmentFixture``
    Provider trees with inventories, traits, aggregates and (NUMA network)
    a few allocations, as the upstream fixture of the same name describes
    in its docstring.
``CORSFixture``, ``OpenPolicyFixture``, ``SecureRBACPolicyFixture``,
``LegacyRBACPolicyFixture``
    Need server configuration (CORS origins, an all-open policy file,
    ``enforce_new_defaults``): gabbi_run.py points files using them at a
    server started with that configuration; the fixture itself only does
    what ``APIFixture`` does.

Fixture writes follow upstream's fixture semantics where the API has a
choice: aggregates are set at microversion 1.18 (no generation bump, as
upstream's fixture does not bump it), every inventory and trait write and
every allocation write bumps the provider generation by one.
"""
import json
import os
import urllib.error
import urllib.request
import uuid as uuidlib

from gabbi import fixture

# The server the current suite runs against; gabbi_run.py sets it.
TARGET = None

_SENTINELS = {}


def sentinel(name):
    """A uuid that stays the same for a name for the whole run."""
    return _SENTINELS.setdefault(name, str(uuidlib.uuid4()))


def new_uuid():
    return str(uuidlib.uuid4())


class FixtureError(Exception):
    pass


class Placement:
    """Just enough of a client to build fixture state."""

    def __init__(self, url):
        self.url = url.rstrip('/')
        self.generations = {}

    def call(self, method, path, body=None, version='1.18', expect=(200, 201, 204)):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header('X-Auth-Token', 'admin')
        request.add_header('OpenStack-API-Version', 'placement %s' % version)
        request.add_header('Accept', 'application/json')
        if data is not None:
            request.add_header('Content-Type', 'application/json')
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        if status not in expect:
            raise FixtureError('%s %s -> %s: %s' % (method, path, status, raw[:500]))
        return json.loads(raw) if raw else None

    # -- emptying ---------------------------------------------------------

    def empty(self):
        providers = self.call('GET', '/resource_providers', version='1.14')['resource_providers']
        consumers = set()
        for rp in providers:
            allocs = self.call('GET', '/resource_providers/%s/allocations' % rp['uuid'])
            consumers.update(allocs['allocations'])
        for consumer in consumers:
            self.call('DELETE', '/allocations/%s' % consumer, expect=(204, 404))
        depth = {rp['uuid']: rp['parent_provider_uuid'] for rp in providers}

        def level(u):
            n = 0
            while depth.get(u):
                u, n = depth[u], n + 1
            return n
        for rp in sorted(providers, key=lambda rp: -level(rp['uuid'])):
            self.call('DELETE', '/resource_providers/%s' % rp['uuid'])
        for rc in self.call('GET', '/resource_classes')['resource_classes']:
            if rc['name'].startswith('CUSTOM_'):
                self.call('DELETE', '/resource_classes/%s' % rc['name'])
        for trait in self.call('GET', '/traits?name=startswith:CUSTOM_')['traits']:
            self.call('DELETE', '/traits/%s' % trait)
        self.generations.clear()

    # -- building ---------------------------------------------------------

    def provider(self, name, *aggregates, parent=None, uuid=None):
        uuid = uuid or sentinel(name)
        body = {'name': name, 'uuid': uuid}
        if parent:
            body['parent_provider_uuid'] = parent
        rp = self.call('POST', '/resource_providers', body, version='1.20')
        self.generations[uuid] = rp['generation']
        if aggregates:
            self.aggregates(uuid, *aggregates)
        return uuid

    def aggregates(self, uuid, *aggregates):
        # 1.18: the fixture's aggregate write leaves the generation alone
        self.call('PUT', '/resource_providers/%s/aggregates' % uuid, list(aggregates))

    def resource_class(self, name):
        if name.startswith('CUSTOM_'):
            self.call('PUT', '/resource_classes/%s' % name, version='1.7')

    def inventory(self, uuid, resource_class, total, **fields):
        self.resource_class(resource_class)
        fields.setdefault('max_unit', total)
        body = dict(fields, resource_class=resource_class, total=total,
                    resource_provider_generation=self.generations[uuid])
        self.call('POST', '/resource_providers/%s/inventories' % uuid, body)
        self.generations[uuid] += 1

    def traits(self, uuid, *traits):
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.call('PUT', '/traits/%s' % trait, version='1.6')
        body = {'traits': list(traits), 'resource_provider_generation': self.generations[uuid]}
        self.call('PUT', '/resource_providers/%s/traits' % uuid, body, version='1.6')
        self.generations[uuid] += 1

    def allocate(self, uuid, resources, project, user, consumer=None):
        consumer = consumer or new_uuid()
        body = {'allocations': {uuid: {'resources': resources}},
                'project_id': project, 'user_id': user}
        self.call('PUT', '/allocations/%s' % consumer, body, version='1.12')
        self.generations[uuid] += 1
        return consumer


class APIFixture(fixture.GabbiFixture):
    """An empty server and the environment every YAML file reads."""

    def start_fixture(self):
        if not TARGET:
            raise FixtureError('gabbi_fixtures.TARGET is not set')
        self.placement = Placement(TARGET)
        self.placement.empty()
        for name in ('RP_UUID', 'RP_NAME', 'RP_UUID1', 'RP_NAME1', 'RP_UUID2',
                     'RP_NAME2', 'PROJECT_ID', 'ADMIN_PROJECT_ID', 'SERVICE_PROJECT_ID',
                     'USER_ID', 'PROJECT_ID_ALT', 'USER_ID_ALT', 'INSTANCE_UUID',
                     'MIGRATION_UUID', 'CONSUMER_UUID', 'PARENT_PROVIDER_UUID',
                     'ALT_PARENT_PROVIDER_UUID'):
            os.environ[name] = new_uuid()
        for suffix in ('', '1', '2'):
            os.environ['CUSTOM_RES_CLASS' + suffix] = 'CUSTOM_IRON_NFV' + suffix
        self.make_entities()

    def make_entities(self):
        pass

    def stop_fixture(self):
        pass


# Fixtures that differ only in the server's configuration: gabbi_run.py
# runs their files against a server configured for them.
class CORSFixture(APIFixture):
    pass


class OpenPolicyFixture(APIFixture):
    pass


class SecureRBACPolicyFixture(APIFixture):
    pass


class LegacyRBACPolicyFixture(APIFixture):
    pass


class AllocationFixture(APIFixture):

    def make_entities(self):
        p = self.placement
        os.environ['ALT_USER_ID'] = new_uuid()
        project, user, alt_user = (os.environ['PROJECT_ID'], os.environ['USER_ID'],
                                   os.environ['ALT_USER_ID'])
        rp = p.provider(os.environ['RP_NAME'], uuid=os.environ['RP_UUID'])
        p.inventory(rp, 'DISK_GB', 2048, step_size=10, min_unit=10, max_unit=1000)
        p.inventory(rp, 'VCPU', 10, max_unit=10)
        os.environ['CONSUMER_0'] = p.allocate(rp, {'DISK_GB': 1000}, project, user)
        os.environ['CONSUMER_ID'] = p.allocate(rp, {'VCPU': 6}, project, user)
        os.environ['ALT_CONSUMER_ID'] = p.allocate(
            rp, {'DISK_GB': 20, 'VCPU': 1}, project, alt_user)
        # a provider the files create themselves
        os.environ['ALT_RP_UUID'] = new_uuid()
        os.environ['ALT_RP_NAME'] = new_uuid()


class SharedStorageFixture(APIFixture):
    """Two compute nodes (NUMA children with a VF PF each) and two sharing
    storage providers, all in one aggregate; only cn2 has local disk."""

    def make_entities(self):
        p = self.placement
        agg = os.environ['AGG_UUID'] = new_uuid()
        names = {}
        for name in ('cn1', 'cn2', 'ss', 'ss2'):
            names[name] = p.provider(name, agg)
        for cn in ('1', '2'):
            for numa in ('1', '2'):
                numa_name = 'numa%s_%s' % (cn, numa)
                names[numa_name] = p.provider(numa_name, parent=names['cn' + cn])
                pf_name = 'pf%s_%s' % (cn, numa)
                names[pf_name] = p.provider(pf_name, parent=names[numa_name])
        for name, uuid in names.items():
            os.environ[name.upper() + '_UUID'] = uuid
        for cn in ('cn1', 'cn2'):
            p.inventory(names[cn], 'VCPU', 24, allocation_ratio=16.0)
            p.inventory(names[cn], 'MEMORY_MB', 128 * 1024, allocation_ratio=1.5)
        p.traits(names['cn1'], 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2')
        p.inventory(names['cn2'], 'DISK_GB', 2000, reserved=100, allocation_ratio=1.0)
        for ss in ('ss', 'ss2'):
            p.inventory(names[ss], 'DISK_GB', 2000, reserved=100, allocation_ratio=1.0)
            p.traits(names[ss], 'MISC_SHARES_VIA_AGGREGATE')
        for pf in ('pf1_1', 'pf1_2', 'pf2_1', 'pf2_2'):
            p.inventory(names[pf], 'SRIOV_NET_VF', 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two compute nodes without inventory, two NUMA children with VCPU
    each, and two sharing storage providers in different aggregates."""

    def make_entities(self):
        p = self.placement
        agg_a, agg_b, agg_c = (new_uuid() for _ in range(3))
        os.environ.update(AGGA_UUID=agg_a, AGGB_UUID=agg_b, AGGC_UUID=agg_c)
        cn1 = p.provider('cn1', agg_a)
        cn2 = p.provider('cn2', agg_a, agg_b)
        ss1 = p.provider('ss1', agg_a)
        ss2 = p.provider('ss2', agg_c)
        numas = [p.provider('numa1_1', agg_c, parent=cn1),
                 p.provider('numa1_2', parent=cn1),
                 p.provider('numa2_1', parent=cn2),
                 p.provider('numa2_2', parent=cn2)]
        os.environ.update(CN1_UUID=cn1, CN2_UUID=cn2, SS1_UUID=ss1, SS2_UUID=ss2,
                          NUMA1_1_UUID=numas[0], NUMA1_2_UUID=numas[1],
                          NUMA2_1_UUID=numas[2], NUMA2_2_UUID=numas[3])
        for numa in numas:
            p.inventory(numa, 'VCPU', 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            p.inventory(ss, 'DISK_GB', 2000, reserved=100, allocation_ratio=1.0)
            p.traits(ss, 'MISC_SHARES_VIA_AGGREGATE')


class NUMANetworkFixture(APIFixture):
    """cn1 with two NUMA nodes (FPGAs, a PGPU), an SR-IOV agent with two
    bandwidth devices and an OVS agent with a bridge; cn2 with three NICs
    and their VF PFs; a sharing storage provider; two allocations."""

    def make_compute_nodes(self):
        return self.placement.provider('cn1'), self.placement.provider('cn2')

    def make_entities(self):
        p = self.placement
        agg_a = os.environ['AGGA_UUID'] = new_uuid()
        ss1 = p.provider('ss1', agg_a)
        p.traits(ss1, 'MISC_SHARES_VIA_AGGREGATE')
        p.inventory(ss1, 'DISK_GB', 2000)
        os.environ['SS1_UUID'] = ss1
        cn1, cn2 = self.make_compute_nodes()

        p.aggregates(cn1, agg_a)
        p.traits(cn1, 'COMPUTE_VOLUME_MULTI_ATTACH')
        os.environ['CN1_UUID'] = cn1
        numas = []
        for i in (0, 1):
            numa = p.provider('numa%d' % i, parent=cn1)
            p.traits(numa, 'HW_NUMA_ROOT', *(['CUSTOM_FOO'] if i else []))
            p.inventory(numa, 'VCPU', 4)
            numas.append(numa)
            os.environ['NUMA%d_UUID' % i] = numa
        p.inventory(numas[0], 'MEMORY_MB', 2048, min_unit=512, step_size=256)
        p.inventory(numas[1], 'MEMORY_MB', 2048, min_unit=256, max_unit=1024)
        project, user = 'numafx-project', 'numafx-user'
        p.allocate(numas[0], {'VCPU': 2}, project, user)
        fpga = p.provider('fpga0', parent=numas[0])
        p.inventory(fpga, 'FPGA', 1)
        os.environ['FPGA0_UUID'] = fpga
        pgpu = p.provider('pgpu0', parent=numas[0])
        p.inventory(pgpu, 'VGPU', 8)
        os.environ['PGPU0_UUID'] = pgpu
        for i in (0, 1):
            fpga = p.provider('fpga1_%d' % i, parent=numas[1])
            p.inventory(fpga, 'FPGA', 1)
            os.environ['FPGA1_%d_UUID' % i] = fpga
        agent = p.provider('sriov_agent', parent=cn1)
        p.traits(agent, 'CUSTOM_VNIC_TYPE_DIRECT')
        os.environ['SRIOV_AGENT_UUID'] = agent
        for i in (1, 2):
            dev = p.provider('esn%d' % i, parent=agent)
            p.traits(dev, 'CUSTOM_PHYSNET%d' % i)
            p.inventory(dev, 'NET_BW_EGR_KILOBIT_PER_SEC', 10000 * i)
            os.environ['ESN%d_UUID' % i] = dev
        agent = p.provider('ovs_agent', parent=cn1)
        p.traits(agent, 'CUSTOM_VNIC_TYPE_NORMAL')
        os.environ['OVS_AGENT_UUID'] = agent
        dev = p.provider('br_int', parent=agent)
        p.traits(dev, 'CUSTOM_PHYSNET0')
        p.inventory(dev, 'NET_BW_EGR_KILOBIT_PER_SEC', 1000)
        os.environ['BR_INT_UUID'] = dev

        p.aggregates(cn2, agg_a)
        p.inventory(cn2, 'VCPU', 8)
        p.allocate(cn2, {'VCPU': 3}, project, user)
        p.inventory(cn2, 'MEMORY_MB', 2048, min_unit=1024, step_size=128)
        p.inventory(cn2, 'DISK_GB', 1000)
        p.traits(cn2, 'CUSTOM_FOO')
        os.environ['CN2_UUID'] = cn2
        nics = []
        for i in (1, 2, 3):
            nic = p.provider('nic%d' % i, parent=cn2)
            p.traits(nic, 'CUSTOM_HW_NIC_ROOT')
            nics.append(nic)
            os.environ['NIC%d_UUID' % i] = nic
        # (nic index, pf suffix, physnet, VFs)
        pfs = [(0, '1_1', 1, 4), (0, '1_2', 2, 4),
               (1, '2_1', 1, 2), (1, '2_2', 2, 2), (1, '2_3', 1, 2), (1, '2_4', 2, 2),
               (2, '3_1', 1, 8)]
        for nic, suffix, physnet, vfs in pfs:
            pf = p.provider('pf%s' % suffix, parent=nics[nic])
            p.traits(pf, 'CUSTOM_PHYSNET%d' % physnet)
            p.inventory(pf, 'CUSTOM_VF', vfs)
            os.environ['PF%s_UUID' % suffix] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """NUMANetworkFixture with the compute nodes under a parent each and a
    common grandparent (gp1 -> p1 -> cn1, gp1 -> p2 -> cn2)."""

    def make_compute_nodes(self):
        p = self.placement
        gp1 = p.provider('gp1')
        p1 = p.provider('p1', parent=gp1)
        p2 = p.provider('p2', parent=gp1)
        return p.provider('cn1', parent=p1), p.provider('cn2', parent=p2)


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with VCPU, MEMORY_MB and local DISK_GB."""

    def make_entities(self):
        p = self.placement
        for name in ('AGGA_UUID', 'AGGB_UUID', 'AGGC_UUID'):
            os.environ[name] = new_uuid()
        for i in (1, 2, 3):
            cn = os.environ['CN%d_UUID' % i] = p.provider('cn%d' % i)
            p.inventory(cn, 'VCPU', 24)
            p.inventory(cn, 'MEMORY_MB', 128 * 1024)
            p.inventory(cn, 'DISK_GB', 2000)


class GranularFixture(APIFixture):
    """cn_left, cn_middle and cn_right with different inventories and
    traits, and sharing providers shr_disk_1, shr_disk_2 and shr_net across
    aggregates A, B and C."""

    def make_entities(self):
        p = self.placement
        p.resource_class('CUSTOM_NET_MBPS')
        agg = {k: sentinel('agg' + k) for k in 'ABC'}
        os.environ.update(AGGA=agg['A'], AGGB=agg['B'], AGGC=agg['C'])

        def node(env, name, aggs, inventories, traits):
            rp = os.environ[env] = p.provider(name, *aggs)
            for rc, total, fields in inventories:
                p.inventory(rp, rc, total, **fields)
            p.traits(rp, *traits)

        node('CN_LEFT', 'cn_left', [agg['A']],
             [('VCPU', 8, {}), ('MEMORY_MB', 4096, {}), ('DISK_GB', 500, {}),
              ('VGPU', 8, {}), ('SRIOV_NET_VF', 8, {}), ('CUSTOM_NET_MBPS', 4000, {})],
             ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_GPU_API_DXVA', 'HW_NIC_DCB_PFC',
              'CUSTOM_FOO'])
        node('CN_MIDDLE', 'cn_middle', [agg['A'], agg['B']],
             [('VCPU', 8, {}), ('MEMORY_MB', 4096, {}), ('SRIOV_NET_VF', 8, {}),
              ('CUSTOM_NET_MBPS', 4000, {})],
             ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE', 'HW_NIC_ACCEL_TLS'])
        node('CN_RIGHT', 'cn_right', [agg['B'], agg['C']],
             [('VCPU', 8, {}), ('MEMORY_MB', 4096, {}), ('DISK_GB', 500, {}),
              ('VGPU', 8, {'max_unit': 2})],
             ['HW_CPU_X86_MMX', 'HW_GPU_API_DXVA', 'CUSTOM_DISK_SSD'])
        node('SHR_DISK_1', 'shr_disk_1', [agg['A']], [('DISK_GB', 1000, {})],
             ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_DISK_SSD'])
        node('SHR_DISK_2', 'shr_disk_2', [agg['A'], agg['B']], [('DISK_GB', 1000, {})],
             ['MISC_SHARES_VIA_AGGREGATE'])
        node('SHR_NET', 'shr_net', [agg['C']],
             [('SRIOV_NET_VF', 16, {}), ('CUSTOM_NET_MBPS', 40000, {})],
             ['MISC_SHARES_VIA_AGGREGATE'])


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as neutron builds them for QoS minimum bandwidth
    and packet rate on a multi-segment network: compute -> OVS agent ->
    bridge(s), compute -> NIC switch agent -> PF(s); physnets OTHER, MSN_S1,
    MSN_S2, and compute3 on both segments with little bandwidth."""

    VNIC_DIRECT = ('CUSTOM_VNIC_TYPE_DIRECT', 'CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL',
                   'CUSTOM_VNIC_TYPE_MACVTAP')

    # compute: (bridges [(env suffix, device, physnet)], pfs [...], bandwidth)
    COMPUTES = {
        'compute0': ([('br_ex', 'br-ex', 'OTHER')], [('pf0', 'enp129s0f0', 'OTHER')],
                     5000, 10000),
        'compute1': ([('br_ex', 'br-ex', 'MSN_S1')], [('pf0', 'enp129s0f0', 'MSN_S1')],
                     5000, 10000),
        'compute2': ([('br_ex', 'br-ex', 'MSN_S2')], [('pf0', 'enp129s0f0', 'MSN_S2')],
                     5000, 10000),
        'compute3': ([('br_ex', 'br-ex', 'MSN_S1'), ('br_ex2', 'br-ex2', 'MSN_S2')],
                     [('pf0', 'enp129s0f0', 'MSN_S1'), ('pf1', 'enp129s0f1', 'MSN_S2')],
                     1000, 1000),
    }

    def make_entities(self):
        p = self.placement
        for compute, (bridges, pfs, bridge_bw, pf_bw) in self.COMPUTES.items():
            cn = os.environ[compute] = p.provider(compute)
            p.inventory(cn, 'VCPU', 8)
            p.inventory(cn, 'MEMORY_MB', 4096)
            p.inventory(cn, 'DISK_GB', 500)
            ovs = p.provider('%s:Open vSwitch agent' % compute, parent=cn)
            os.environ['%s:ovs_agent' % compute] = ovs
            p.inventory(ovs, 'NET_PACKET_RATE_KILOPACKET_PER_SEC', 1000)
            p.traits(ovs, 'CUSTOM_VNIC_TYPE_NORMAL')
            for suffix, device, physnet in bridges:
                self.device(ovs, '%s:Open vSwitch agent:%s' % (compute, device),
                            '%s:%s' % (compute, suffix), bridge_bw,
                            ['CUSTOM_VNIC_TYPE_NORMAL', 'CUSTOM_PHYSNET_' + physnet])
            sriov = p.provider('%s:NIC Switch agent' % compute, parent=cn)
            p.traits(sriov, *self.VNIC_DIRECT)
            for suffix, device, physnet in pfs:
                self.device(sriov, '%s:NIC Switch agent:%s' % (compute, device),
                            '%s:%s' % (compute, suffix), pf_bw,
                            list(self.VNIC_DIRECT) + ['CUSTOM_PHYSNET_' + physnet])
            os.environ['%s:sriov_agent' % compute] = sriov
        # upstream's fixture names compute2's agent for compute3 too
        os.environ['compute3:sriov_agent'] = os.environ['compute2:sriov_agent']

    def device(self, parent, name, env, bandwidth, traits):
        p = self.placement
        dev = os.environ[env] = p.provider(name, parent=parent)
        p.inventory(dev, 'NET_BW_EGR_KILOBIT_PER_SEC', bandwidth)
        p.inventory(dev, 'NET_BW_IGR_KILOBIT_PER_SEC', bandwidth)
        p.traits(dev, *traits)
