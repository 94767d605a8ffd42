"""Providers on the wire: read one or a tree, create, write one part, delete.

Each function is one request (or a fixed handful) and returns placement's
answer; deciding what to send and what to do about a 409 is the report
client's job.
"""
from collections.abc import Iterable
from typing import Any
from urllib import parse

from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.providers import provider as provider_mod
from tracker.providers import tree as tree_mod
from tracker.providers.provider import Inventory
from tracker.providers.provider import Provider

# the trait of a provider sharing its resources with its aggregates' members
SHARING = 'MISC_SHARES_VIA_AGGREGATE'


def _path(uuid: str, part: str = '') -> str:
    return '/resource_providers/%s%s' % (uuid, '/' + part if part else '')


def unexpected(resp: http_mod.Response, what: str,
               provider: str | None = None) -> errors.PlacementError:
    return errors.PlacementError('%s: placement answered %d %s: %s'
                                 % (what, resp.status, resp.code or '', resp.detail),
                                 status=resp.status, code=resp.code, provider=provider)


def read_inventories(body: dict[str, Any]) -> dict[str, Inventory]:
    return {rc: provider_mod.inventory(**rec)
            for rc, rec in (body.get('inventories') or {}).items()}


def list_providers(http: http_mod.Transport, **query: str) -> list[dict[str, Any]]:
    resp = http.request('GET', '/resource_providers?' + parse.urlencode(query))
    if resp.status == 404:       # in_tree naming a provider that does not exist
        return []
    if not resp.ok:
        raise unexpected(resp, 'listing providers')
    providers: list[dict[str, Any]] = resp.body['resource_providers']
    return providers


def fill(http: http_mod.Transport, provider: Provider) -> Provider | None:
    """Read a provider's inventories, traits and aggregates into it."""
    for part in ('inventories', 'traits', 'aggregates'):
        resp = http.request('GET', _path(provider.uuid, part))
        if resp.status == 404:
            return None
        if not resp.ok:
            raise unexpected(resp, 'reading %s' % part, provider.uuid)
        if part == 'inventories':
            provider.inventories = read_inventories(resp.body)
        else:
            setattr(provider, part, set(resp.body[part]))
        if 'resource_provider_generation' in resp.body:
            provider.generation = resp.body['resource_provider_generation']
    return provider


def from_listing(item: dict[str, Any]) -> Provider:
    return provider_mod.Provider(uuid=item['uuid'], name=item['name'],
                                 parent_uuid=item.get('parent_provider_uuid'),
                                 generation=item['generation'])


def fetch_provider(http: http_mod.Transport, uuid: str) -> Provider | None:
    """The provider as placement has it now, or None."""
    resp = http.request('GET', _path(uuid))
    if resp.status == 404:
        return None
    if not resp.ok:
        raise unexpected(resp, 'reading provider', uuid)
    return fill(http, from_listing(resp.body))


def fetch_tree(http: http_mod.Transport, root_uuid: str,
               known: tree_mod.ProviderTree | None = None) -> tree_mod.ProviderTree:
    """Every provider of the tree rooted at ``root_uuid``, filled in.

    With ``known`` (a ProviderTree), a provider whose generation did not
    move is taken from it instead of being read again: every change to
    inventories, traits or aggregates bumps the generation (aggregates
    only from 1.19, so before that everything is read).
    """
    if known is not None and not http.supports('aggregate_generation'):
        known = None
    listing = [from_listing(item) for item in list_providers(http, in_tree=root_uuid)]
    tree = tree_mod.ProviderTree()
    pending = listing
    while pending:             # placement's order is not parents-first
        placed = [p for p in pending
                  if p.parent_uuid is None or p.parent_uuid in tree.uuids()]
        if not placed:
            raise errors.PlacementError('tree %s: providers whose parents are not '
                                        'in the tree' % root_uuid)
        for provider in placed:
            cached = known.find(provider.uuid) if known is not None else None
            if cached is not None and cached.generation == provider.generation:
                provider.inventories = cached.inventories
                provider.traits, provider.aggregates = cached.traits, cached.aggregates
                tree.add(provider)
            elif fill(http, provider) is not None:
                tree.add(provider)
        pending = [p for p in pending if p not in placed]
    return tree



def generations(http: http_mod.Transport, root_uuid: str) -> dict[str, int]:
    """{provider: generation} for the tree at ``root_uuid``: one GET."""
    return {item['uuid']: item['generation']
            for item in list_providers(http, in_tree=root_uuid)}


def sharing_providers(http: http_mod.Transport, tree: tree_mod.ProviderTree) -> list[Provider]:
    """Providers outside the tree sharing their resources with it."""
    aggregates = sorted({a for p in tree.providers() for a in p.aggregates})
    if not aggregates or not http.supports('required_traits'):
        return []
    listing = list_providers(http, member_of='in:' + ','.join(aggregates), required=SHARING)
    return [from_listing(i) for i in listing if i['uuid'] not in tree.uuids()]

def create(http: http_mod.Transport, provider: Provider) -> int:
    """POST the provider; returns its generation (new providers start at 0)."""
    body = {'uuid': provider.uuid, 'name': provider.name}
    if provider.parent_uuid:
        body['parent_provider_uuid'] = provider.parent_uuid
    resp = http.request('POST', '/resource_providers', body)
    if resp.ok:   # before 1.20 there is no body: a new provider is at 0
        return (resp.body or {}).get('generation', 0) if isinstance(resp.body, dict) else 0
    if resp.status == 409:   # placement.duplicate_name: uuid or name taken
        raise errors.DuplicateProviderName(resp.detail, resp.status, resp.code,
                                           provider.uuid)
    raise unexpected(resp, 'creating provider %s' % provider.name, provider.uuid)


def put_provider(http: http_mod.Transport, provider: Provider) -> http_mod.Response:
    """Write name and parent."""
    body: dict[str, str | None] = {'name': provider.name}
    if provider.parent_uuid or http.supports('reparent'):
        body['parent_provider_uuid'] = provider.parent_uuid
    return http.request('PUT', _path(provider.uuid), body)


def put_inventories(http: http_mod.Transport, uuid: str, generation: int | None,
                    inventories: dict[str, Inventory]) -> http_mod.Response:
    return http.request('PUT', _path(uuid, 'inventories'),
                        {'resource_provider_generation': generation,
                         'inventories': inventories})


def put_traits(http: http_mod.Transport, uuid: str, generation: int | None,
               traits: Iterable[str]) -> http_mod.Response:
    return http.request('PUT', _path(uuid, 'traits'),
                        {'resource_provider_generation': generation,
                         'traits': sorted(traits)})


def put_aggregates(http: http_mod.Transport, uuid: str, generation: int | None,
                   aggregates: Iterable[str]) -> http_mod.Response:
    body: dict[str, Any] | list[str]
    if http.supports('aggregate_generation'):
        body = {'resource_provider_generation': generation,
                'aggregates': sorted(aggregates)}
    else:
        body = sorted(aggregates)
    return http.request('PUT', _path(uuid, 'aggregates'), body)


def delete(http: http_mod.Transport, uuid: str) -> http_mod.Response:
    return http.request('DELETE', _path(uuid))


def usages(http: http_mod.Transport, uuid: str) -> dict[str, int]:
    resp = http.request('GET', _path(uuid, 'usages'))
    if resp.status == 404:
        return {}
    if not resp.ok:
        raise unexpected(resp, 'reading usages', uuid)
    return {rc: n for rc, n in resp.body['usages'].items() if n}


def provider_allocations(http: http_mod.Transport, uuid: str) -> dict[str, dict[str, int]]:
    """{consumer: {rc: n}} held against one provider."""
    resp = http.request('GET', _path(uuid, 'allocations'))
    if resp.status == 404:
        return {}
    if not resp.ok:
        raise unexpected(resp, 'reading allocations', uuid)
    return {c: a['resources'] for c, a in resp.body['allocations'].items()}


def ensure_custom_names(http: http_mod.Transport, resource_classes: Iterable[str],
                        traits: Iterable[str], known: set[tuple[str, str]]) -> None:
    """Create the CUSTOM_ classes and traits placement may not have yet.

    ``known`` remembers what was ensured, so steady state sends nothing.
    """
    for kind, names in (('resource_classes', resource_classes), ('traits', traits)):
        for name in sorted(names):
            if not name.startswith('CUSTOM_') or (kind, name) in known:
                continue
            resp = http.request('PUT', '/%s/%s' % (kind, name))
            if not resp.ok:
                raise unexpected(resp, 'creating %s %s' % (kind, name))
            known.add((kind, name))
