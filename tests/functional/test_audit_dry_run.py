"""The audit's dry run is the repair itself, its writes recorded instead of
sent: what it lists is what --fix then sends, request by request, body
included, read from the wire below the report client on both runs."""
import json
import urllib.parse

import pytest

from tests.functional.report_client_fixtures import AGG
from tests.functional.report_client_fixtures import GPU0
from tests.functional.report_client_fixtures import GPU1
from tests.functional.report_client_fixtures import ROOT
from tests.functional.report_client_fixtures import VM1
from tests.functional.report_client_fixtures import VM2
from tests.functional.report_client_fixtures import host
from tests.functional.report_client_fixtures import placement  # noqa: F401 (fixture)
from tracker import audit as audit_mod
from tracker.drivers.base import HostSnapshot
from tracker.drivers.base import Instance
from tracker.placement.client import ReportClient
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid

GONE = stable_uuid('test-host', 'gone')
ORPHAN = stable_uuid('orphan')


class Wire:
    """Every write the clients it makes send, as it left: (method, path, body)."""

    def __init__(self, placement):
        self.placement = placement
        self.sent = []

    def client(self):
        adapter = self.placement.adapter(counted=False)
        adapter.session.session.hooks['response'].append(self._record)
        return ReportClient(adapter=adapter)

    def _record(self, response, *args, **kwargs):
        request = response.request
        if request.method != 'GET':
            body = json.loads(request.body) if request.body else None
            self.sent.append((request.method, urllib.parse.urlparse(request.url).path,
                              body))
        return response

    def since(self, marker):
        return self.sent[marker:]


def drift_placement(placement):
    """Placement as an earlier life of the host left it: the root's VCPU
    and traits and aggregates, a child's name, a GPU missing, a provider the
    host no longer has, one guest's allocation short, another's missing, an
    orphan."""
    old = host()
    old[0].inventories['VCPU'] = inventory(8)
    old[0].traits = {'HW_CPU_X86_AVX2'}
    old[1].name = 'test-host_numa0_before'
    old = [p for p in old if p.uuid != GPU1]
    old.append(Provider(GONE, 'test-host_gone', ROOT, inventories={'VGPU': inventory(2)}))
    writer = placement.client()
    assert writer.sync(old).errors == []
    result = writer.sync_allocations(ROOT, [
        Instance(VM1, 'vm1', 'p', 'u', {ROOT: {'VCPU': 1}}),
        Instance(ORPHAN, 'orphan', 'p', 'u', {ROOT: {'MEMORY_MB': 256}})])
    assert result.errors == []


def snapshot():
    providers = host()
    providers[0].aggregates = {AGG}
    return HostSnapshot('test-host', providers, [
        Instance(VM1, 'vm1', 'p', 'u', {ROOT: {'VCPU': 2}, GPU0: {'VGPU': 1}}),
        Instance(VM2, 'vm2', 'p', 'u', {GPU1: {'VGPU': 1}})])


@pytest.mark.parametrize('one_client', [False, True], ids=['two runs', 'one client'])
def test_the_dry_run_lists_what_the_fix_then_sends(placement, one_client):  # noqa: F811
    drift_placement(placement)
    wire = Wire(placement)
    dry_client = wire.client()
    dry = audit_mod.audit(snapshot(), dry_client, dry_run=True)
    assert sorted({d.kind for d in dry.drift}) == [
        'aggregates_missing', 'allocation_differs', 'allocation_missing',
        'allocation_orphan', 'inventory_differs', 'provider_extra', 'provider_missing',
        'provider_name_differs', 'traits_missing']
    assert wire.sent == []                       # a dry run writes nothing

    fix = audit_mod.audit(snapshot(), dry_client if one_client else wire.client(),
                          fix=True)
    assert fix.fixed and fix.remaining == [] and fix.errors == []
    assert [(w['method'], w['path']) for w in dry.writes] == [
        (method, path) for method, path, _ in wire.sent]
    assert [(w.method, w.path, w.body) for w in dry.written] == wire.sent
    assert dry.writes == fix.writes


def test_the_dry_run_leaves_the_client_as_it_was(placement):  # noqa: F811
    """A dry run's pretended writes are not taken for placement's: the
    client's next sync writes as if there had been no dry run."""
    drift_placement(placement)
    wire = Wire(placement)
    client = wire.client()
    audit_mod.audit(snapshot(), client, dry_run=True)
    marker = len(wire.sent)
    client.sync(snapshot().providers)
    assert wire.since(marker)                    # the repair still to send
