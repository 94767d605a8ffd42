"""Providers on the wire: read one or a tree, create, write one part, delete.

Each function is one request (or a fixed handful) and returns placement's
answer; deciding what to send and what to do about a 409 is the report
client's job.
"""
from urllib import parse

from tracker.placement import errors
from tracker.providers import provider as provider_mod
from tracker.providers import tree as tree_mod


def _path(uuid, part=''):
    return '/resource_providers/%s%s' % (uuid, '/' + part if part else '')


def unexpected(resp, what, provider=None):
    return errors.PlacementError('%s: placement answered %d %s: %s'
                                 % (what, resp.status, resp.code or '', resp.detail),
                                 status=resp.status, code=resp.code, provider=provider)


def read_inventories(body):
    return {rc: provider_mod.inventory(**rec)
            for rc, rec in (body.get('inventories') or {}).items()}


def list_providers(http, **query):
    resp = http.request('GET', '/resource_providers?' + parse.urlencode(query))
    if resp.status == 404:       # in_tree naming a provider that does not exist
        return []
    if not resp.ok:
        raise unexpected(resp, 'listing providers')
    return resp.body['resource_providers']


def fill(http, provider):
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


def from_listing(item):
    return provider_mod.Provider(uuid=item['uuid'], name=item['name'],
                                 parent_uuid=item.get('parent_provider_uuid'),
                                 generation=item['generation'])


def fetch_provider(http, uuid):
    """The provider as placement has it now, or None."""
    resp = http.request('GET', _path(uuid))
    if resp.status == 404:
        return None
    if not resp.ok:
        raise unexpected(resp, 'reading provider', uuid)
    return fill(http, from_listing(resp.body))


def fetch_tree(http, root_uuid, known=None):
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


def create(http, provider):
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


def put_provider(http, provider):
    """Write name and parent."""
    body = {'name': provider.name}
    if provider.parent_uuid or http.supports('reparent'):
        body['parent_provider_uuid'] = provider.parent_uuid
    return http.request('PUT', _path(provider.uuid), body)


def put_inventories(http, uuid, generation, inventories):
    return http.request('PUT', _path(uuid, 'inventories'),
                        {'resource_provider_generation': generation,
                         'inventories': inventories})


def put_traits(http, uuid, generation, traits):
    return http.request('PUT', _path(uuid, 'traits'),
                        {'resource_provider_generation': generation,
                         'traits': sorted(traits)})


def put_aggregates(http, uuid, generation, aggregates):
    if http.supports('aggregate_generation'):
        body = {'resource_provider_generation': generation,
                'aggregates': sorted(aggregates)}
    else:
        body = sorted(aggregates)
    return http.request('PUT', _path(uuid, 'aggregates'), body)


def delete(http, uuid):
    return http.request('DELETE', _path(uuid))


def usages(http, uuid):
    resp = http.request('GET', _path(uuid, 'usages'))
    if resp.status == 404:
        return {}
    if not resp.ok:
        raise unexpected(resp, 'reading usages', uuid)
    return {rc: n for rc, n in resp.body['usages'].items() if n}


def provider_allocations(http, uuid):
    """{consumer: {rc: n}} held against one provider."""
    resp = http.request('GET', _path(uuid, 'allocations'))
    if resp.status == 404:
        return {}
    if not resp.ok:
        raise unexpected(resp, 'reading allocations', uuid)
    return {c: a['resources'] for c, a in resp.body['allocations'].items()}


def ensure_custom_names(http, resource_classes, traits, known):
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
