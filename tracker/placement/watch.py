"""The steady-state check: is placement still there, and as we left it?

A host that did not change costs no writes, but the client must still
notice, within a cycle or two, that placement went away or that someone
changed its data behind the tracker's back (deleted an allocation, edited
an inventory, wiped the database). Each steady cycle sends one GET, in
turn:

- the tree's listing (``GET /resource_providers?in_tree=``): every
  provider's generation, which moves with any write to its inventories,
  traits, aggregates or allocations, and tells a deleted provider;
- the root's usages (``GET /resource_providers/{root}/usages``): a deleted
  allocation moves no generation, but it changes the root's usage (every
  instance holds VCPU or memory there).

What differs makes the client reread that part at once; the full reread
every ``[placement] association_refresh_interval`` stays as the backstop
(a hand-made change to a child's allocation only, sharing providers
joining an aggregate). A request that gets no answer raises
PlacementUnreachable like any other, so the cycle fails and says so.
"""
import logging

from tracker.placement import allocations as alloc_mod
from tracker.placement import resources

LOG = logging.getLogger(__name__)


def check(client, root_uuid, turn):
    """Run the ``turn``-th check of the tree at ``root_uuid``; returns what
    changed behind the tracker ('' when nothing), having dropped from the
    client's cache what must be read again."""
    if root_uuid not in client.known:
        return ''
    if turn % 2 == 0 or root_uuid not in client._consumers:
        return _generations(client, root_uuid)
    return _root_usage(client, root_uuid)


def _generations(client, root_uuid):
    listing = resources.list_providers(client.http, in_tree=root_uuid)
    held = {item['uuid']: item['generation'] for item in listing}
    ours = {p.uuid: p.generation for p in client.known.subtree(root_uuid)}
    if held == ours:
        return ''
    moved = sorted(u for u in held.keys() | ours.keys() if held.get(u) != ours.get(u))
    client.reread(root_uuid)
    return 'provider generation moved: %s' % ', '.join(moved)


def _root_usage(client, root_uuid):
    resp = client.http.request('GET', '/resource_providers/%s/usages' % root_uuid)
    if resp.status == 404:
        client.reread(root_uuid)
        return 'root provider %s is gone' % root_uuid
    if not resp.ok:
        raise resources.unexpected(resp, 'reading usages', root_uuid)
    held = {rc: n for rc, n in resp.body['usages'].items() if n}
    expected = {}
    for record in client._consumers[root_uuid].values():
        on_root = alloc_mod.normalize(record['allocations']).get(root_uuid, {})
        for rc, n in on_root.items():
            expected[rc] = expected.get(rc, 0) + n
    generation = resp.body.get('resource_provider_generation')
    known = client.known.get(root_uuid).generation
    if held == expected and (generation is None or generation == known):
        return ''
    client.reread(root_uuid)
    return 'root usage %s, expected %s' % (held, expected)
