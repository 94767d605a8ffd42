"""Consumers on the wire: read, put and delete allocations.

A consumer's record is what GET /allocations/{consumer} says::

    {'allocations': {rp_uuid: {'resources': {rc: n}}},
     'project_id': ..., 'user_id': ..., 'consumer_generation': n}

The tracker rewrites only the host's part of a consumer (its tree and the
sharing providers it uses, see consumers.py) and keeps the rest, e.g. the
other host's part during a migration.
"""
from tracker.placement import errors
from tracker.placement import resources

# What placement itself files consumers under when no project is known.
UNKNOWN_PROJECT = '00000000-0000-0000-0000-000000000000'
DEFAULT_CONSUMER_TYPE = 'INSTANCE'


def normalize(allocations):
    """{rp: {rc: n}} from either that form or {rp: {'resources': {...}}}."""
    out = {}
    for rp, amounts in (allocations or {}).items():
        amounts = amounts.get('resources', amounts)
        amounts = {rc: int(n) for rc, n in amounts.items() if n}
        if amounts:
            out[rp] = amounts
    return out


def on_tree(allocations, tree_uuids):
    return {rp: res for rp, res in normalize(allocations).items() if rp in tree_uuids}


def get_consumer(http, consumer):
    """The consumer's record; an empty one if it has no allocations."""
    resp = http.request('GET', '/allocations/%s' % consumer)
    if not resp.ok:
        raise resources.unexpected(resp, 'reading allocations of %s' % consumer)
    body = resp.body or {}
    return {'allocations': normalize(body.get('allocations')),
            'project_id': body.get('project_id'),
            'user_id': body.get('user_id'),
            'consumer_generation': body.get('consumer_generation'),
            'consumer_type': body.get('consumer_type')}


def for_tree(http, tree_uuids):
    """{consumer: record} for every consumer with allocations on the tree."""
    consumers = set()
    for uuid in sorted(tree_uuids):
        consumers.update(resources.provider_allocations(http, uuid))
    return {c: get_consumer(http, c) for c in sorted(consumers)}


def put(http, consumer, allocations, project_id, user_id, consumer_generation=None,
        consumer_type=None):
    """PUT the consumer's whole allocation; the Response, unraised."""
    body = {'allocations': {rp: {'resources': res}
                            for rp, res in normalize(allocations).items()},
            'project_id': project_id or UNKNOWN_PROJECT,
            'user_id': user_id or UNKNOWN_PROJECT}
    if http.supports('consumer_generation'):
        body['consumer_generation'] = consumer_generation
    if http.supports('consumer_type'):
        body['consumer_type'] = consumer_type or DEFAULT_CONSUMER_TYPE
    return http.request('PUT', '/allocations/%s' % consumer, body)


def delete(http, consumer):
    return http.request('DELETE', '/allocations/%s' % consumer)


def raise_for(resp, consumer):
    if resp.code == errors.CONCURRENT_UPDATE:
        raise errors.ConsumerConflict(
            'consumer %s changed behind the tracker: %s' % (consumer, resp.detail),
            resp.status, resp.code)
    if not resp.ok and resp.status != 404:
        raise resources.unexpected(resp, 'writing allocations of %s' % consumer)
