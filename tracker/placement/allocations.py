"""Consumers on the wire: read, put and delete allocations.

A consumer's record is what GET /allocations/{consumer} says::

    {'allocations': {rp_uuid: {'resources': {rc: n}}},
     'project_id': ..., 'user_id': ..., 'consumer_generation': n}

The tracker rewrites only the host's part of a consumer (its tree and the
sharing providers it uses, see consumers.py) and keeps the rest, e.g. the
other host's part during a migration.
"""
from collections.abc import Iterable
from typing import Any
from typing import Protocol

from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import resources
from tracker.placement.known import ConsumerRecord

# {provider uuid: {resource class: amount}}
Allocations = dict[str, dict[str, int]]

# What placement itself files consumers under when no project is known.
UNKNOWN_PROJECT = '00000000-0000-0000-0000-000000000000'
DEFAULT_CONSUMER_TYPE = 'INSTANCE'
# What placement (1.38 and later) shows for a consumer written without a
# type: every consumer of nova 34, whose report client stays below 1.38.
UNTYPED = 'unknown'
# The newest microversion whose allocation writes carry no consumer_type: an
# untyped consumer is written there and stays untyped (at 1.38 and later
# placement wants a type, and refuses 'unknown').
_MAJOR, _MINOR = http_mod.FEATURES['consumer_type']
BEFORE_TYPES = (_MAJOR, _MINOR - 1)


class Instance(Protocol):
    """A running instance as the sync sees it (a driver's Instance)."""
    uuid: str
    project_id: str | None
    user_id: str | None
    allocations: dict[str, Any]   # any shape normalize() reads


def normalize(allocations: dict[str, Any] | None) -> Allocations:
    """{rp: {rc: n}} from that form, {rp: {'resources': {...}}} or a whole
    consumer record ({'allocations': ..., 'consumer_generation': ...}).
    The one reading of allocations: the sync and the audit compare these."""
    if allocations and 'allocations' in allocations:
        allocations = allocations['allocations']
    out = {}
    for rp, amounts in (allocations or {}).items():
        if not isinstance(amounts, dict):
            continue
        amounts = amounts.get('resources', amounts)
        amounts = {rc: int(n) for rc, n in amounts.items() if n}
        if amounts:
            out[rp] = amounts
    return out


def host_part(allocations: dict[str, Any] | None, managed: set[str],
              wanted: Iterable[str] = ()) -> Allocations:
    """The host's part of a consumer's allocations: on the ``managed``
    providers (its tree, the sharing providers it uses) and on those its
    instance asks for (``wanted``). The rest (another host's, during a
    migration) is not the host's to write: the sync keeps it, the audit
    ignores it."""
    mine = managed | set(wanted)
    return {rp: res for rp, res in normalize(allocations).items() if rp in mine}


def on_tree(allocations: dict[str, Any], tree_uuids: set[str]) -> Allocations:
    return {rp: res for rp, res in normalize(allocations).items() if rp in tree_uuids}


def get_consumer(http: http_mod.Transport, consumer: str) -> ConsumerRecord:
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


def for_tree(http: http_mod.Transport, tree_uuids: Iterable[str]) -> dict[str, ConsumerRecord]:
    """{consumer: record} for every consumer with allocations on the tree."""
    consumers: set[str] = set()
    for uuid in sorted(tree_uuids):
        consumers.update(resources.provider_allocations(http, uuid))
    return {c: get_consumer(http, c) for c in sorted(consumers)}


def untyped(consumer_type: str | None) -> bool:
    """Whether a consumer's record says it has no type (None: placement
    older than 1.38 does not say)."""
    return consumer_type is None or consumer_type == UNTYPED


def put(http: http_mod.Transport, consumer: str, allocations: dict[str, Any],
        project_id: str | None, user_id: str | None, consumer_generation: int | None = None,
        consumer_type: str | None = DEFAULT_CONSUMER_TYPE) -> http_mod.Response:
    """PUT the consumer's whole allocation (empty: all of it removed,
    from 1.28, as the consumer's generation allows); the Response,
    unraised. ``consumer_type`` None or 'unknown': written without a type,
    at a microversion before types, so that it stays as its writer (nova)
    made it."""
    body: dict[str, Any] = {
        'allocations': {rp: {'resources': res}
                        for rp, res in normalize(allocations).items()},
        'project_id': project_id or UNKNOWN_PROJECT,
        'user_id': user_id or UNKNOWN_PROJECT}
    if http.supports('consumer_generation'):
        body['consumer_generation'] = consumer_generation
    if untyped(consumer_type):
        return http.request('PUT', '/allocations/%s' % consumer, body,
                            at_most=BEFORE_TYPES)
    if http.supports('consumer_type'):
        body['consumer_type'] = consumer_type
    return http.request('PUT', '/allocations/%s' % consumer, body)


def delete(http: http_mod.Transport, consumer: str) -> http_mod.Response:
    return http.request('DELETE', '/allocations/%s' % consumer)


def raise_for(resp: http_mod.Response, consumer: str) -> None:
    if resp.code == errors.CONCURRENT_UPDATE:
        raise errors.ConsumerConflict(
            'consumer %s changed behind the tracker: %s' % (consumer, resp.detail),
            resp.status, resp.code)
    if not resp.ok and resp.status != 404:
        raise resources.unexpected(resp, 'writing allocations of %s' % consumer)
