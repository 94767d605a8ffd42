"""Seeded random call sequences over the whole placement API.

A ``Call`` is (method, path, version, body). Two kinds of placeholder are
left for the runner to fill at send time, so that a sequence stays
meaningful when the shrinker drops calls from it:

- ``{T}`` in a path or a string: a token fresh for each replay, in custom
  resource class and trait names (upstream keeps classes and traits
  between replays, so each replay uses names of its own);
- ``$gen:<uuid>`` / ``$cgen:<uuid>`` as a body value: the provider's
  generation / the consumer's generation as upstream holds it just before
  the call (0 / None when it has none). Stale generations are also sent,
  as plain numbers.

The generator keeps a rough model (which providers it created and under
which parent) only to make most calls meaningful; it never sees answers,
so a sequence depends on the seed alone.

uuids are now and then spelt as upstream does not store them (upper case,
or without dashes: ``spell``), of existing and unknown providers and
consumers, wherever a call takes one; two of the aggregates are always
spelt so (upstream stores an aggregate as spelt). Amounts and generations
are now and then around 2^31 and 2^63 (``BIG``), past the database's
integers.

Shapes upstream gets wrong (docs/compat.md, known.py) are not generated:
the reshaper is never sent reserved > total, ``group_policy=isolate``
is only sent when no two groups ask for the same class, and an aggregate
is never spelt two ways (on MariaDB upstream then loses it).
"""
import dataclasses
import json
import random
import urllib.parse
import uuid as uuidlib

MAX_MINOR = 39

STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF')
CUSTOM_CLASSES = ('CUSTOM_D{T}_GPU', 'CUSTOM_D{T}_FPGA')
STANDARD_TRAITS = ('HW_CPU_X86_AVX', 'STORAGE_DISK_SSD', 'MISC_SHARES_VIA_AGGREGATE')
CUSTOM_TRAITS = ('CUSTOM_D{T}_FAST', 'CUSTOM_D{T}_GOLD')
CONSUMER_TYPES = ('INSTANCE', 'MIGRATION')
# Around the database's integer bounds (32-bit columns, 64-bit parameters)
BIG = (2 ** 31 - 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63)


@dataclasses.dataclass(frozen=True)
class Call:
    method: str
    path: str
    version: str
    body: object = None

    def is_write(self):
        return self.method != 'GET'

    def __str__(self):
        text = '%s %s  @%s' % (self.method, self.path, self.version)
        if self.body is not None:
            text += '  ' + (self.body if isinstance(self.body, str)
                            else json.dumps(self.body, sort_keys=True))
        return text


class Generator:
    """One seed's sequence: ``next()`` gives the next call."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        rng = self.rng

        def ids(n):
            return [str(uuidlib.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n)]
        self.rps = ids(6)
        self.consumers = ids(5)
        upper, bare = ids(2)
        self.aggs = ids(3) + [upper.upper(), bare.replace('-', '')]
        self.projects = ids(2)
        self.users = ids(2)
        self.missing = ids(1)[0]
        self.parents = {}   # created provider: its parent (or None)

    # choices

    def version(self, minimum=0, maximum=MAX_MINOR):
        """Mostly within the call's range, sometimes below it."""
        if minimum and self.rng.random() < 0.07:
            return '1.%d' % self.rng.randrange(0, minimum)
        return '1.%d' % self.rng.randint(minimum, maximum)

    def spell(self, uuid, odds=0.06):
        """Now and then ``uuid`` in upper case or without its dashes."""
        roll = self.rng.random()
        if roll < odds / 2:
            return uuid.upper()
        if roll < odds:
            return uuid.replace('-', '')
        return uuid

    def big(self):
        return self.rng.choice(BIG)

    def rp(self, existing=0.85):
        """A provider's uuid (now and then spelt otherwise)."""
        return self.spell(self.canonical_rp(existing))

    def canonical_rp(self, existing=0.85):
        if self.parents and self.rng.random() < existing:
            return self.rng.choice(sorted(self.parents))
        return self.rng.choice(self.rps + [self.missing])

    def consumer(self):
        return self.spell(self.rng.choice(self.consumers))

    def rc(self):
        return self.rng.choice(STANDARD_CLASSES * 2 + CUSTOM_CLASSES)

    def trait(self):
        return self.rng.choice(STANDARD_TRAITS + CUSTOM_TRAITS)

    def some(self, items, low=0, high=2):
        return self.rng.sample(list(items), self.rng.randint(low, min(high, len(items))))

    def inventory(self, reshaper=False):
        rng = self.rng
        # (past upstream's bound, 2^31 - 1, now and then: both refuse it)
        total = self.big() if rng.random() < 0.02 else rng.randint(1, 16)
        inv = {'total': total}
        if rng.random() < 0.4:
            inv['reserved'] = rng.randint(0, total if reshaper else total + 1)
        if rng.random() < 0.3:
            inv['allocation_ratio'] = rng.choice([0.5, 1.0, 2.0, 16.0])
        if rng.random() < 0.25:
            inv['max_unit'] = rng.randint(1, total)
        if rng.random() < 0.15:
            inv['min_unit'] = rng.randint(1, 2)
        if rng.random() < 0.15:
            inv['step_size'] = rng.choice([1, 2])
        return inv

    def generation(self, rp):
        if self.rng.random() < 0.1:
            return self.rng.choice((0, 1, 7) + BIG)
        return '$gen:' + rp

    def amount(self):
        return self.big() if self.rng.random() < 0.03 else self.rng.randint(1, 4)

    def resources(self):
        return {rc: self.amount() for rc in self.some(
            STANDARD_CLASSES[:3] + CUSTOM_CLASSES[:1], 1, 2)}

    def claim(self):
        """A provider's part of an allocation body (1.12+): amounts now and
        then past the database's integers; the generation upstream ignores."""
        part = {'resources': self.resources()}
        if self.rng.random() < 0.05:
            part['generation'] = self.rng.choice((0, 1) + BIG)
        return part

    def mangle(self, body):
        """Now and then a body a schema refuses."""
        if not isinstance(body, dict) or self.rng.random() > 0.06:
            return body
        body = dict(body)
        if body and self.rng.random() < 0.5:
            body.pop(self.rng.choice(sorted(body)))
        else:
            body['bogus'] = 1
        return body

    # calls, by resource

    def next(self):
        kinds = [
            (self.create_provider, 8), (self.update_provider, 2), (self.delete_provider, 2),
            (self.get_provider, 2), (self.list_providers, 4),
            (self.put_inventories, 8), (self.one_inventory, 5), (self.get_inventories, 2),
            (self.resource_class, 3), (self.trait_call, 3), (self.provider_traits, 4),
            (self.aggregates, 4), (self.put_allocations, 9), (self.post_allocations, 3),
            (self.allocation_reads, 4), (self.usages, 3), (self.candidates, 10),
            (self.reshape, 2), (self.root, 1),
        ]
        make = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        call = make()
        if call.body is not None and not isinstance(call.body, str):
            call = dataclasses.replace(call, body=self.mangle(call.body))
        return call

    def root(self):
        return Call('GET', '/', self.version())

    def create_provider(self):
        rng = self.rng
        v = self.version()
        rp = rng.choice([u for u in self.rps if u not in self.parents] or self.rps)
        body = {'name': 'rp-%s' % rp[:4] if rng.random() < 0.9 else 'rp-shared-name',
                'uuid': self.spell(rp)}
        parent = None
        if self.parents and rng.random() < 0.4:
            parent = rng.choice(sorted(self.parents) + [self.missing])
            body['parent_provider_uuid'] = self.spell(parent)
        if int(v[2:]) >= 14 or not parent:
            self.parents.setdefault(rp, parent)
        return Call('POST', '/resource_providers', v, body)

    def update_provider(self):
        rp = self.rp()
        v = self.version()
        body = {'name': 'rp-%s-%d' % (rp[:4], self.rng.randint(0, 3))}
        if int(v[2:]) >= 14 and self.rng.random() < 0.5:
            choices = [None] + sorted(set(self.parents) - {rp})
            parent = self.rng.choice(choices)
            body['parent_provider_uuid'] = parent and self.spell(parent)
        return Call('PUT', '/resource_providers/' + rp, v, body)

    def delete_provider(self):
        rp = self.rp()
        if self.rng.random() < 0.5:
            self.parents.pop(rp, None)
        return Call('DELETE', '/resource_providers/' + rp, self.version())

    def get_provider(self):
        return Call('GET', '/resource_providers/' + self.rp(), self.version())

    def list_providers(self):
        rng = self.rng
        v = self.version()
        minor = int(v[2:])
        query = []
        if rng.random() < 0.2:
            query.append(('uuid', self.rp()))
        if rng.random() < 0.1:
            query.append(('name', 'rp-%s' % self.rp()[:4]))
        if minor >= 3 and rng.random() < 0.3:
            aggs = self.some(self.aggs, 1, 2)
            negate = '!' if minor >= 32 and rng.random() < 0.3 else ''
            query.append(('member_of', negate + ('in:' + ','.join(aggs) if len(aggs) > 1
                                                 else aggs[0])))
        if minor >= 4 and rng.random() < 0.3:
            query.append(('resources', ','.join(
                '%s:%d' % kv for kv in self.resources().items())))
        if minor >= 14 and rng.random() < 0.2:
            query.append(('in_tree', self.rp()))
        if minor >= 18 and rng.random() < 0.3:
            query.append(('required', self.traits_expr(minor)))
        return Call('GET', '/resource_providers' + qs(query), v)

    def traits_expr(self, minor):
        traits = self.some(STANDARD_TRAITS + CUSTOM_TRAITS, 1, 2)
        if minor >= 22 and self.rng.random() < 0.3:
            traits[-1] = '!' + traits[-1]
        if minor >= 39 and self.rng.random() < 0.2:
            return 'in:' + ','.join(t.lstrip('!') for t in traits)
        return ','.join(traits)

    def get_inventories(self):
        rp = self.rp()
        if self.rng.random() < 0.5:
            return Call('GET', '/resource_providers/%s/inventories' % rp, self.version())
        return Call('GET', '/resource_providers/%s/inventories/%s' % (rp, self.rc()),
                    self.version())

    def put_inventories(self):
        rp = self.rp()
        invs = {rc: self.inventory() for rc in self.some(
            STANDARD_CLASSES + CUSTOM_CLASSES, 0, 3)}
        return Call('PUT', '/resource_providers/%s/inventories' % rp, self.version(),
                    {'resource_provider_generation': self.generation(rp), 'inventories': invs})

    def one_inventory(self):
        rp = self.rp()
        rc = self.rc()
        path = '/resource_providers/%s/inventories' % rp
        kind = self.rng.choice(['post', 'put', 'delete', 'delete_all'])
        if kind == 'post':
            return Call('POST', path, self.version(), dict(
                self.inventory(), resource_class=rc,
                resource_provider_generation=self.generation(rp)))
        if kind == 'put':
            return Call('PUT', '%s/%s' % (path, rc), self.version(), dict(
                self.inventory(), resource_provider_generation=self.generation(rp)))
        if kind == 'delete':
            return Call('DELETE', '%s/%s' % (path, rc), self.version())
        return Call('DELETE', path, self.version(5))

    def resource_class(self):
        rng = self.rng
        name = rng.choice(CUSTOM_CLASSES + ('VCPU', 'CUSTOM_D{T}_OTHER'))
        kind = rng.choice(['list', 'post', 'get', 'put', 'delete'])
        if kind == 'list':
            return Call('GET', '/resource_classes', self.version(2))
        if kind == 'post':
            return Call('POST', '/resource_classes', self.version(2), {'name': name})
        if kind == 'get':
            return Call('GET', '/resource_classes/' + name, self.version(2))
        if kind == 'put':
            v = self.version(2)
            body = None if int(v[2:]) >= 7 else {'name': rng.choice(CUSTOM_CLASSES)}
            return Call('PUT', '/resource_classes/' + name, v, body)
        return Call('DELETE', '/resource_classes/' + name, self.version(2))

    def trait_call(self):
        rng = self.rng
        name = rng.choice(CUSTOM_TRAITS + ('HW_CPU_X86_AVX', 'CUSTOM_D{T}_OTHER', 'NOT_CUSTOM'))
        kind = rng.choice(['list', 'put', 'get', 'delete'])
        if kind == 'list':
            query = []
            if rng.random() < 0.5:
                query.append(('name', rng.choice(['startswith:CUSTOM_D{T}', 'in:' + ','.join(
                    self.some(STANDARD_TRAITS + CUSTOM_TRAITS, 1, 3))])))
            if rng.random() < 0.4:
                query.append(('associated', rng.choice(['true', 'false', 'True'])))
            return Call('GET', '/traits' + qs(query), self.version(6))
        method = {'put': 'PUT', 'get': 'GET', 'delete': 'DELETE'}[kind]
        return Call(method, '/traits/' + name, self.version(6))

    def provider_traits(self):
        rp = self.rp()
        path = '/resource_providers/%s/traits' % rp
        kind = self.rng.choice(['get', 'put', 'put', 'delete'])
        if kind == 'get':
            return Call('GET', path, self.version(6))
        if kind == 'delete':
            return Call('DELETE', path, self.version(6))
        return Call('PUT', path, self.version(6), {
            'resource_provider_generation': self.generation(rp),
            'traits': self.some(STANDARD_TRAITS + CUSTOM_TRAITS, 0, 3)})

    def aggregates(self):
        rp = self.rp()
        path = '/resource_providers/%s/aggregates' % rp
        v = self.version(1)
        if self.rng.random() < 0.35:
            return Call('GET', path, v)
        aggs = self.some(self.aggs, 0, 2)
        if int(v[2:]) >= 19:
            return Call('PUT', path, v, {'aggregates': aggs,
                                         'resource_provider_generation': self.generation(rp)})
        return Call('PUT', path, v, aggs)

    def consumer_fields(self, minor, consumer):
        fields = {}
        if minor >= 8 or self.rng.random() < 0.3:
            fields['project_id'] = self.rng.choice(self.projects)
            fields['user_id'] = self.rng.choice(self.users)
        if minor >= 28:
            fields['consumer_generation'] = (
                self.rng.choice((None, 0, 3) + BIG) if self.rng.random() < 0.1
                else '$cgen:' + consumer)
        if minor >= 38:
            fields['consumer_type'] = self.rng.choice(CONSUMER_TYPES)
        return fields

    def providers(self, low, high):
        return [self.spell(rp) for rp in self.some(sorted(self.parents) or self.rps, low, high)]

    def put_allocations(self):
        consumer = self.rng.choice(self.consumers)
        v = self.version()
        minor = int(v[2:])
        rps = self.providers(0 if minor >= 28 else 1, 2)
        if minor >= 12:
            allocs = {rp: self.claim() for rp in rps}
        else:
            allocs = [{'resource_provider': {'uuid': rp},
                       'resources': self.claim()['resources']} for rp in rps]
        # (upstream stores the path's uuid in canonical form)
        return Call('PUT', '/allocations/' + self.spell(consumer), v,
                    dict(self.consumer_fields(minor, consumer), allocations=allocs))

    def post_allocations(self):
        v = self.version(13)
        minor = int(v[2:])
        body = {}
        for consumer in self.some(self.consumers, 1, 2):
            consumer = self.spell(consumer)
            rps = self.providers(0, 2)
            body[consumer] = dict(self.consumer_fields(max(minor, 12), consumer),
                                  allocations={rp: self.claim() for rp in rps})
        return Call('POST', '/allocations', v, body)

    def allocation_reads(self):
        kind = self.rng.choice(['get', 'get', 'delete', 'provider'])
        consumer = self.consumer()
        if kind == 'get':
            return Call('GET', '/allocations/' + consumer, self.version())
        if kind == 'delete':
            return Call('DELETE', '/allocations/' + consumer, self.version())
        return Call('GET', '/resource_providers/%s/allocations' % self.rp(), self.version())

    def usages(self):
        if self.rng.random() < 0.5:
            return Call('GET', '/resource_providers/%s/usages' % self.rp(), self.version())
        v = self.version(9)
        query = [('project_id', self.rng.choice(self.projects))]
        if self.rng.random() < 0.4:
            query.append(('user_id', self.rng.choice(self.users)))
        if int(v[2:]) >= 38 and self.rng.random() < 0.4:
            query.append(('consumer_type', self.rng.choice(CONSUMER_TYPES + ('all', 'unknown'))))
        return Call('GET', '/usages' + qs(query), v)

    def candidates(self):
        rng = self.rng
        v = self.version(10)
        minor = int(v[2:])
        query = []
        groups = {'': self.resources()} if rng.random() < 0.8 or minor < 25 else {}
        if minor >= 25:
            for n in range(rng.choice([0, 0, 1, 2])):
                suffix = str(n + 1) if minor < 33 or rng.random() < 0.7 else '_g%d' % n
                groups[suffix] = self.resources()
        if not groups:
            groups[''] = self.resources()
        for suffix, res in groups.items():
            query.append(('resources' + suffix, ','.join('%s:%d' % kv for kv in res.items())))
            if minor >= 17 and rng.random() < 0.3:
                query.append(('required' + suffix, self.traits_expr(minor)))
            if minor >= 21 and rng.random() < 0.2:
                aggs = self.some(self.aggs, 1, 2)
                negate = '!' if minor >= 32 and rng.random() < 0.3 else ''
                query.append(('member_of' + suffix, negate + ('in:' if len(aggs) > 1 else '')
                              + ','.join(aggs)))
        granular = [s for s in groups if s]
        if granular and (len(granular) > 1 or rng.random() < 0.7):
            classes = [rc for s in granular for rc in groups[s]] + list(groups.get('', {}))
            # upstream inflates amounts when groups share a class under isolate
            isolate = len(classes) == len(set(classes)) and rng.random() < 0.5
            query.append(('group_policy', 'isolate' if isolate else 'none'))
        if minor >= 29 and rng.random() < 0.3:
            query.append(('limit', str(rng.randint(1, 3))))
        if minor >= 31 and rng.random() < 0.15:
            query.append(('in_tree', self.rp()))
        if minor >= 35 and rng.random() < 0.15:
            query.append(('root_required', self.traits_expr(minor).replace('in:', '')))
        if minor >= 36 and len(granular) > 1 and rng.random() < 0.3:
            query.append(('same_subtree', ','.join(granular)))
        return Call('GET', '/allocation_candidates' + qs(query), v)

    def reshape(self):
        v = self.version(30)
        minor = int(v[2:])
        rps = self.providers(1, 2)
        invs = {rp: {'resource_provider_generation': self.generation(rp),
                     'inventories': {rc: self.inventory(reshaper=True)
                                     for rc in self.some(STANDARD_CLASSES[:3], 1, 2)}}
                for rp in rps}
        allocs = {}
        for consumer in self.some(self.consumers, 0, 2):
            consumer = self.spell(consumer)
            allocs[consumer] = dict(self.consumer_fields(max(minor, 28), consumer),
                                    allocations={rp: self.claim()
                                                 for rp in self.some(rps, 1, 2)})
        return Call('POST', '/reshaper', v, {'inventories': invs, 'allocations': allocs})


def qs(pairs):
    if not pairs:
        return ''
    return '?' + urllib.parse.urlencode(pairs, safe=':,!{}')


def calls(seed, count):
    gen = Generator(seed)
    return [gen.next() for _ in range(count)]
