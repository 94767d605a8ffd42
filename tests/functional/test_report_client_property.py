"""The report client converges whatever the host becomes (hypothesis).

A host is a root and up to six child slots; each state of the host says
which children exist, under which parent (the root or a lower slot, so
trees stay acyclic), with which name, inventories, traits and aggregates.
For a random sequence of states, after each sync placement holds exactly
that state (read back with plain GETs) and a second sync sends nothing.
"""
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st

from placement_server.direct import PlacementDirect
from tests.functional.report_client_fixtures import Placement
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

V = '1.39'
SLOTS = 6
CLASSES = ['VGPU', 'SRIOV_NET_VF', 'CUSTOM_WIDGET']
TRAITS = ['CUSTOM_A', 'CUSTOM_B', 'HW_CPU_X86_AVX2']
AGGS = ['aaaaaaaa-0000-4000-8000-00000000000%d' % i for i in (1, 2)]
EXAMPLES = {'sqlite': 25, 'postgresql': 5, 'mysql': 5}

slot = st.one_of(st.none(), st.fixed_dictionaries({
    'parent': st.integers(-1, SLOTS - 1),      # -1: the root; else a lower slot
    'renamed': st.booleans(),
    'inventories': st.dictionaries(st.sampled_from(CLASSES), st.integers(1, 8), max_size=2),
    'traits': st.sets(st.sampled_from(TRAITS), max_size=2),
    'aggregates': st.sets(st.sampled_from(AGGS), max_size=2),
}))
state = st.fixed_dictionaries({'root_vcpu': st.integers(1, 64),
                               'slots': st.lists(slot, min_size=SLOTS, max_size=SLOTS)})


def providers(root, spec):
    """The host's providers for one state, parents first."""
    out = [Provider(root, 'host-%s' % root, inventories={'VCPU': inventory(spec['root_vcpu'])})]
    present = {}
    for i, child in enumerate(spec['slots']):
        if child is None:
            continue
        parent = child['parent'] if child['parent'] < i else -1
        uuid = str(uuidlib.uuid5(uuidlib.UUID(root), str(i)))
        present[i] = uuid
        out.append(Provider(
            uuid, 'host-%s-c%d%s' % (root, i, '-renamed' if child['renamed'] else ''),
            present.get(parent, root),
            inventories={rc: inventory(n) for rc, n in child['inventories'].items()},
            traits=set(child['traits']), aggregates=set(child['aggregates'])))
    return out


def read_back(writer, root):
    """{uuid: (name, parent, inventories, traits, aggregates)} from plain GETs."""
    def get(path):
        resp = writer.get(path, microversion=V)
        assert resp.status_code == 200, resp.text
        return resp.json()
    seen = {}
    for rp in get('/resource_providers?in_tree=%s' % root)['resource_providers']:
        base = '/resource_providers/%s/' % rp['uuid']
        inventories = {rc: rec['total'] for rc, rec in
                       get(base + 'inventories')['inventories'].items()}
        seen[rp['uuid']] = (rp['name'], rp['parent_provider_uuid'], inventories,
                            set(get(base + 'traits')['traits']),
                            set(get(base + 'aggregates')['aggregates']))
    return seen


def expected(desired):
    return {p.uuid: (p.name, p.parent_uuid,
                     {rc: rec['total'] for rc, rec in p.inventories.items()},
                     p.traits, p.aggregates) for p in desired}


def test_every_sequence_of_host_states_converges(database, request):
    backend = request.node.callspec.params['database']

    @hypothesis.settings(max_examples=EXAMPLES[backend], deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(state, min_size=1, max_size=4))
    def check(states):
        root = str(uuidlib.uuid4())           # each example its own host
        direct = PlacementDirect(database)
        with direct:
            placement = Placement(direct.new_adapter, 'ours')
            client = placement.client()
            writer = placement.other_writer()
            for spec in states:
                desired = providers(root, spec)
                result = client.sync(desired)
                assert result.errors == []
                assert read_back(writer, root) == expected(desired)
                marker = placement.count()
                assert client.sync(desired).requests == 0
                assert placement.since(marker) == []
    check()
