"""GET /allocation_candidates: provider summaries, from the resource view.

A summary shows a provider's capacity and usage per resource class, its
traits and its place in its tree, as far as the request's microversion
asks (``Shape``). It is written as JSON text once per provider and shape
and kept in the view until the provider changes (every write to it, an
allocation's included, reloads it): an answer shows up to every provider
of a cloud, and writing them out was most of its work.
"""
from collections.abc import Collection
from collections.abc import Iterable
import json
from typing import NamedTuple

from placement_server.candidates.request import CandidateRequest
from placement_server.view import ResourceView

quoted = json.encoder.encode_basestring   # a JSON string, quotes included


class Shape(NamedTuple):
    """What a microversion shows of a provider."""
    classes: frozenset[str] | None   # the requested ones (before 1.27), or every one
    traits: bool                     # 1.17
    tree: bool                       # 1.29: parent and root uuids


def shape_of(request: CandidateRequest) -> Shape:
    version = request.version
    return Shape(None if version >= (1, 27) else frozenset(request.all_classes()),
                 version >= (1, 17), version >= (1, 29))


def tree_members(view: ResourceView, root_ids: Iterable[int]) -> set[int]:
    """Ids of every provider in the given trees."""
    members = view.members
    return {rp for root in root_ids for rp in members.get(root, ())}


def texts(view: ResourceView, providers: Collection[int], shape: Shape) -> dict[int, str]:
    """{provider: its summary as a JSON object member: its quoted uuid, a
    colon, the summary}. Kept in the view for the shapes of 1.27 on (which
    show every class); an older request's (only its classes) is written for
    it alone."""
    if shape.classes is not None:
        return {rp: _text(view, rp, shape) for rp in providers}
    kept = view.summaries.get(shape)
    if kept is None:
        kept = view.summaries[shape] = {}
    for rp in providers:
        if rp not in kept:
            kept[rp] = _text(view, rp, shape)
    return {rp: kept[rp] for rp in providers}


def _text(view: ResourceView, rp: int, shape: Shape) -> str:
    names = view.class_names
    shown = []
    for rc in sorted(view.classes_of.get(rp, ())):
        name = names[rc]
        if shape.classes is None or name in shape.classes:
            # capacity rounded down, as upstream shows it
            shown.append('%s:{"capacity":%d,"used":%d}' % (
                quoted(name), int(view.inventories[rc][rp][0]),
                view.used[rc].get(rp, 0) if rc in view.used else 0))
    text = '%s:{"resources":{%s}' % (quoted(view.rows[rp].uuid), ','.join(shown))
    if shape.traits:
        # in trait id order (standard traits before custom ones), as upstream lists them
        text += ',"traits":[%s]' % ','.join(
            quoted(view.trait_names[t]) for t in sorted(view.traits.get(rp, ())))
    if shape.tree:
        _, _, parent, root, _ = view.rows[rp]
        text += ',"parent_provider_uuid":%s,"root_provider_uuid":%s' % (
            'null' if parent is None else quoted(view.rows[parent].uuid),
            quoted(view.rows[root].uuid))
    return text + '}'
