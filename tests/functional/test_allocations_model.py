"""Property: any sequence of allocation and inventory writes leaves the
server agreeing with a small model of placement.

The model holds each consumer's allocations, each provider's inventory
and generation. For every operation it predicts the status (a claim is
granted only if every amount fits min_unit/max_unit/step_size and every
touched (provider, class) stays within (total - reserved) * ratio after the
request's consumers drop their old allocations) and the generations that
move; after every operation the usages, each consumer's allocations and
each provider's generation must match the model.
"""
import collections
import uuid

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

V = '1.39'
EXAMPLES = {'sqlite': 40, 'postgresql': 12, 'mysql': 12}
CONSUMERS = 4
# Per class: reserved, min_unit, max_unit, step_size, allocation_ratio.
RULES = {'VCPU': dict(reserved=2, min_unit=1, max_unit=4, step_size=1, allocation_ratio=2.0),
         'MEMORY_MB': dict(reserved=2, min_unit=2, max_unit=8, step_size=2,
                           allocation_ratio=1.0)}

amounts = st.dictionaries(st.sampled_from(sorted(RULES)), st.integers(1, 9), min_size=1)
claims = st.dictionaries(st.integers(0, 1), amounts, min_size=1)   # provider -> amounts
consumer = st.integers(0, CONSUMERS - 1)
operations = st.lists(st.one_of(
    st.tuples(st.just('put'), consumer, claims),
    st.tuples(st.just('empty'), consumer),
    st.tuples(st.just('delete'), consumer),
    st.tuples(st.just('post'), st.dictionaries(consumer, st.one_of(st.just({}), claims),
                                                min_size=1, max_size=3)),
    st.tuples(st.just('total'), st.integers(0, 1), st.sampled_from(sorted(RULES)),
              st.integers(1, 12)),
), min_size=1, max_size=12)


class Model:

    def __init__(self):
        self.totals = [{'VCPU': 4, 'MEMORY_MB': 8}, {'VCPU': 4, 'MEMORY_MB': 8}]
        self.generations = [1, 1]
        self.allocations = {}   # consumer index -> {provider index: {rc: used}}
        self.consumer_generations = {}

    def used(self, rp, rc, without=()):
        return sum(a.get(rp, {}).get(rc, 0) for c, a in self.allocations.items()
                   if c not in without)

    def fits(self, writes):
        """Would replacing these consumers' allocations be granted?"""
        wanted = collections.Counter()
        for allocs in writes.values():
            for rp, amounts in allocs.items():
                for rc, n in amounts.items():
                    rule = RULES[rc]
                    if n < rule['min_unit'] or n > rule['max_unit'] or n % rule['step_size']:
                        return False
                    wanted[rp, rc] += n
        for (rp, rc), n in wanted.items():
            rule = RULES[rc]
            capacity = (self.totals[rp][rc] - rule['reserved']) * rule['allocation_ratio']
            if self.used(rp, rc, without=writes) + n > capacity:
                return False
        return True

    def write(self, writes):
        touched = set()
        for c, allocs in writes.items():
            touched |= set(allocs or self.allocations.get(c, {}))
            self.consumer_generations[c] = self.consumer_generations.get(c, 0) + 1
            if allocs:
                self.allocations[c] = allocs
            else:
                self.allocations.pop(c, None)
                self.consumer_generations.pop(c)
        for rp in touched:
            self.generations[rp] += 1


def test_server_agrees_with_the_model(api, request):
    backend = request.node.callspec.params['database']

    @settings(max_examples=EXAMPLES[backend], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(operations)
    def run(ops):
        rps, consumers, model = [], [str(uuid.uuid4()) for _ in range(CONSUMERS)], Model()
        for i in range(2):
            rp = api.post('/resource_providers', {'name': 'rp-%s' % uuid.uuid4()},
                          version='1.20').json['uuid']
            _put_inventory(api, rp, model.totals[i], 0)
            rps.append(rp)

        def body(c, allocs):
            return {'allocations': {rps[rp]: {'resources': a} for rp, a in allocs.items()},
                    'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE',
                    'consumer_generation': model.consumer_generations.get(c)}

        for op in ops:
            kind = op[0]
            if kind in ('put', 'empty'):
                c, allocs = op[1], (op[2] if kind == 'put' else {})
                resp = api.put('/allocations/%s' % consumers[c], body(c, allocs), version=V)
                expected = model.fits({c: allocs})
                assert resp.status_int == (204 if expected else 409), (op, resp.body)
                if expected:
                    model.write({c: allocs})
            elif kind == 'delete':
                c = op[1]
                resp = api.delete('/allocations/%s' % consumers[c], version=V)
                assert resp.status_int == (204 if c in model.allocations else 404), op
                model.allocations.pop(c, None)
                model.consumer_generations.pop(c, None)
            elif kind == 'post':
                writes = op[1]
                resp = api.post('/allocations', {consumers[c]: body(c, a)
                                                 for c, a in writes.items()}, version=V)
                expected = model.fits(writes)
                assert resp.status_int == (204 if expected else 409), (op, resp.body)
                if expected:
                    model.write(writes)
            else:
                _, rp, rc, total = op
                model.totals[rp][rc] = total
                resp = _put_inventory(api, rps[rp], model.totals[rp], model.generations[rp])
                # At 1.25 reserved must stay below total; a refused write
                # changes nothing.
                if total <= RULES[rc]['reserved']:
                    assert resp.status_int == 400, (op, resp.body)
                    model.totals[rp][rc] = _stored_total(api, rps[rp], rc)
                else:
                    assert resp.status_int == 200, (op, resp.body)
                    model.generations[rp] += 1
            _check(api, rps, consumers, model)

    run()


def _put_inventory(api, rp, totals, generation):
    inventories = {rc: dict(RULES[rc], total=total) for rc, total in totals.items()}
    return api.put('/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': generation, 'inventories': inventories},
        version='1.25')


def _stored_total(api, rp, rc):
    return api.get('/resource_providers/%s/inventories/%s' % (rp, rc), version=V).json['total']


def _check(api, rps, consumers, model):
    for i, rp in enumerate(rps):
        resp = api.get('/resource_providers/%s/usages' % rp, version=V)
        assert resp.json == {
            'resource_provider_generation': model.generations[i],
            'usages': {rc: model.used(i, rc) for rc in RULES}}
    for c, uuid_ in enumerate(consumers):
        got = api.get('/allocations/%s' % uuid_, version=V).json
        want = {rps[rp]: amounts for rp, amounts in model.allocations.get(c, {}).items()}
        assert {rp: a['resources'] for rp, a in got['allocations'].items()} == want
        assert got.get('consumer_generation') == model.consumer_generations.get(c)
