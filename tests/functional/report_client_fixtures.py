"""A placement under test for the report client, whoever serves it.

``Placement`` hands out keystoneauth1 Adapters onto one placement (ours in
process through PlacementDirect, or upstream as a real process) and counts,
below the report client, every request its clients send: the proof that a
steady host costs no HTTP is read from the wire, not from the client's own
counters.
"""
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
import pytest

from placement_server.direct import PlacementDirect
from tracker.placement.client import ReportClient
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid

ADMIN = 'admin'
V = '1.39'
ROOT = stable_uuid('test-host')
NUMA0 = stable_uuid('test-host', 'numa0')
NUMA1 = stable_uuid('test-host', 'numa1')
GPU0 = stable_uuid('test-host', 'gpu0')
GPU1 = stable_uuid('test-host', 'gpu1')
VM1 = stable_uuid('vm1')
VM2 = stable_uuid('vm2')
AGG = stable_uuid('aggregate')


def http_adapter(url, token=ADMIN):
    """An Adapter onto placement at ``url`` with a noauth2 token.

    Upstream's default policy lets only the ``service`` role reshape: the
    tracker's placement credentials carry it, and so do the tests'.
    """
    session = ks_session.Session(auth=token_endpoint.Token(url, token))
    return ks_adapter.Adapter(session, service_type='placement', raise_exc=False,
                              additional_headers={'X-Roles': 'admin,service'})


class Placement:

    def __init__(self, make_adapter, name):
        self.make_adapter = make_adapter
        self.name = name
        self.sent = []            # (method, path) of every counted request

    def adapter(self, counted=True):
        adapter = self.make_adapter()
        if counted:
            adapter.session.session.hooks['response'].append(self._record)
        return adapter

    def _record(self, response, *args, **kwargs):
        url = urllib.parse.urlparse(response.request.url)
        self.sent.append((response.request.method, url.path))
        return response

    def client(self, **kwargs):
        return ReportClient(adapter=self.adapter(), **kwargs)

    def other_writer(self):
        """A plain adapter for the 'someone else' of the tests (not counted)."""
        return self.adapter(counted=False)

    def count(self):
        """A marker; ``since(marker)`` lists what was sent after it."""
        return len(self.sent)

    def since(self, marker):
        return self.sent[marker:]


@pytest.fixture
def placement(database):
    """Our placement in process, on each database backend."""
    direct = PlacementDirect(database)
    with direct:
        yield Placement(direct.new_adapter, 'ours')

def host(vgpu_on_root=False, gpus=(GPU0, GPU1)):
    """A compute node with two NUMA cells and a GPU under each."""
    root = Provider(ROOT, 'test-host', inventories={
        'VCPU': inventory(16), 'MEMORY_MB': inventory(32768, reserved=512)},
        traits={'HW_CPU_X86_AVX2', 'CUSTOM_TRACKER'})
    if vgpu_on_root:
        root.inventories['VGPU'] = inventory(8)
    providers = [root, Provider(NUMA0, 'test-host_numa0', ROOT),
                 Provider(NUMA1, 'test-host_numa1', ROOT)]
    for gpu, numa in zip(gpus, (NUMA0, NUMA1)):
        gpu_provider = Provider(gpu, 'test-host_gpu%d' % (gpu == GPU1), numa)
        if not vgpu_on_root:
            gpu_provider.inventories['VGPU'] = inventory(4)
        providers.append(gpu_provider)
    return providers

def get(placement, path):
    resp = placement.other_writer().get(path, microversion=V)
    assert resp.status_code == 200, resp.text
    return resp.json()

def put(placement, path, body):
    return placement.other_writer().put(path, json=body, microversion=V)

def allocations(placement, consumer):
    """{rp: {rc: n}} of one consumer, as placement has it."""
    return {rp: a['resources'] for rp, a in
            get(placement, '/allocations/%s' % consumer)['allocations'].items()}

def custom_trait(placement, name):
    resp = placement.other_writer().put('/traits/%s' % name, microversion=V)
    assert resp.status_code in (201, 204), resp.text

def generation(placement, uuid):
    return get(placement, '/resource_providers/%s' % uuid)['generation']
