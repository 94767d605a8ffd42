"""Placing a flavor as a scheduler does, through the API: GET
/allocation_candidates?limit=1, then PUT /allocations of the candidate
answered, until no candidate comes. What the capacity series' flavor
counts must equal."""
import urllib.parse
import uuid

from prometheus_client import parser

SHARES = 'MISC_SHARES_VIA_AGGREGATE'
V = '1.39'


def generation(api, rp):
    return api.get('/resource_providers/%s' % rp, version=V).json['generation']


def set_traits(api, rp, *names):
    for name in names:
        if name.startswith('CUSTOM_'):
            assert api.put('/traits/%s' % name, version=V).status_int in (201, 204)
    resp = api.put('/resource_providers/%s/traits' % rp, {
        'traits': sorted(names), 'resource_provider_generation': generation(api, rp)},
        version=V)
    assert resp.status_int == 200, resp.body


def set_aggregates(api, rp, *aggs):
    resp = api.put('/resource_providers/%s/aggregates' % rp, {
        'aggregates': sorted(aggs), 'resource_provider_generation': generation(api, rp)},
        version=V)
    assert resp.status_int == 200, resp.body


def claim(api, allocations, consumer=None):
    """PUT /allocations of a new consumer; its response."""
    return api.put('/allocations/%s' % (consumer or uuid.uuid4()), {
        'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')


def query(resources, required=()):
    params = [('resources', ','.join('%s:%d' % rc for rc in sorted(resources.items())))]
    if required:
        params.append(('required', ','.join(sorted(required))))
    return urllib.parse.urlencode(params)


def place(api, resources, required=(), consumers=None):
    """{root uuid: instances placed}: one at a time until nothing fits.
    An instance counts for the root of the providers it takes from that
    share nothing (the host), else for the one root of the sharing
    providers it takes from. The consumers made are added to ``consumers``."""
    placed = {}
    sharing = {}
    while True:
        resp = api.get('/allocation_candidates?%s&limit=1' % query(resources, required),
                       version=V)
        if resp.status_int == 400:
            return placed     # a name placement lacks: nothing fits
        assert resp.status_int == 200, resp.body
        body = resp.json
        if not body['allocation_requests']:
            return placed
        allocations = body['allocation_requests'][0]['allocations']
        summaries = body['provider_summaries']
        for rp in allocations:
            sharing[rp] = SHARES in summaries[rp]['traits']
        hosts = {summaries[rp]['root_provider_uuid'] for rp in allocations if not sharing[rp]}
        if not hosts:
            hosts = {summaries[rp]['root_provider_uuid'] for rp in allocations}
        assert len(hosts) == 1, allocations
        consumer = str(uuid.uuid4())
        resp = claim(api, {rp: a['resources'] for rp, a in allocations.items()}, consumer)
        assert resp.status_int == 204, resp.body
        if consumers is not None:
            consumers.append(consumer)
        root = hosts.pop()
        placed[root] = placed.get(root, 0) + 1


def scrape(exporter):
    """{name: {frozenset(labels.items()): value}} of one scrape."""
    found = {}
    for family in parser.text_string_to_metric_families(exporter.text().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return found


def fits(exporter, flavor):
    """(the summed count, {hostname: count}) of ``flavor`` in one scrape."""
    found = scrape(exporter)
    total = found['openstack_placement_flavor_fits'][frozenset({'flavor': flavor}.items())]
    per_host = {dict(k)['hostname']: v
                for k, v in found.get('openstack_placement_flavor_host_fits', {}).items()
                if dict(k)['flavor'] == flavor}
    return total, per_host
