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
from tracker.placement import http as http_mod
from tracker.placement import resources
from tracker.placement.known import KnownPlacement

LOG = logging.getLogger(__name__)


def check(http: http_mod.Transport, known: KnownPlacement, root_uuid: str, turn: int) -> str:
    """Run the ``turn``-th check of the tree at ``root_uuid``; returns what
    changed behind the tracker ('' when nothing), for the client to read
    again."""
    if root_uuid not in known.tree:
        return ''
    if turn % 2 == 0 or root_uuid not in known.consumers:
        return _generations(http, known, root_uuid)
    return _root_usage(http, known, root_uuid)


def _generations(http: http_mod.Transport, known: KnownPlacement, root_uuid: str) -> str:
    held = resources.generations(http, root_uuid)
    ours = {p.uuid: p.generation for p in known.tree.subtree(root_uuid)}
    if held == ours:
        return ''
    moved = sorted(u for u in held.keys() | ours.keys() if held.get(u) != ours.get(u))
    return 'provider generation moved: %s' % ', '.join(moved)


def _root_usage(http: http_mod.Transport, known: KnownPlacement, root_uuid: str) -> str:
    resp = http.request('GET', '/resource_providers/%s/usages' % root_uuid)
    if resp.status == 404:
        return 'root provider %s is gone' % root_uuid
    if not resp.ok:
        raise resources.unexpected(resp, 'reading usages', root_uuid)
    held = {rc: n for rc, n in resp.body['usages'].items() if n}
    expected: dict[str, int] = {}
    for record in known.consumers[root_uuid].values():
        on_root = alloc_mod.normalize(record['allocations']).get(root_uuid, {})
        for rc, n in on_root.items():
            expected[rc] = expected.get(rc, 0) + n
    generation = resp.body.get('resource_provider_generation')
    ours = known.tree.get(root_uuid).generation
    if held == expected and (generation is None or generation == ours):
        return ''
    return 'root usage %s, expected %s' % (held, expected)
