"""GET /resource_providers: the providers a query's filters select, as
the list's JSON text.

``parse`` reads the query string (its keys checked by the handler against
the version's schema) into a ``ListRequest``; ``find`` answers it as
``candidates.find`` answers a candidate request: from this worker's
resource view (``placement_server.view``), brought up to date first, with
the filters of ``placement_server.filters`` (which candidates use too)
judged in upstream's order for lists (``_selected``). A whole answer is
kept in the view until the view changes at all (``ResourceView.kept``):
it depends on nothing but the view's providers and names.
"""
import dataclasses
import datetime
import json

import sqlalchemy as sa
import webob.multidict

from placement_server import filters
from placement_server import microversion
from placement_server import query
from placement_server import view as view_mod

# A provider's links: (from version, rel, suffix of its URL).
LINKS = (((1, 0), 'self', ''), ((1, 0), 'inventories', '/inventories'),
         ((1, 0), 'usages', '/usages'), ((1, 1), 'aggregates', '/aggregates'),
         ((1, 6), 'traits', '/traits'), ((1, 11), 'allocations', '/allocations'))


@dataclasses.dataclass
class ListRequest:
    version: microversion.Version
    group: filters.RequestGroup   # resources, traits, aggregates, in_tree
    name: str | None = None
    uuid: str | None = None


# A provider as the list shows it: (uuid, name, generation, parent's uuid,
# root's uuid). A plain tuple: a NamedTuple costs ten times as much to
# make, 2 ms more for a list of 3000.
Listed = tuple[str, str, int, str | None, str | None]


def parse(params: webob.multidict.MultiDict, version: microversion.Version
          ) -> ListRequest:
    """The ListRequest of a query string (its key set validated already).
    A repeated key counts once, its last value, but for member_of and
    required."""
    def last(key: str) -> str:
        return str(params.getall(key)[-1])
    group = filters.RequestGroup('')
    if 'member_of' in params:
        group.member_of, group.forbidden_aggs = query.parse_member_of(
            params.getall('member_of'), version)
    if 'required' in params:
        group.required, group.forbidden = query.parse_required(params.getall('required'),
                                                               version)
    request = ListRequest(version, group)
    if 'name' in params:
        request.name = last('name') or None   # an empty name filters nothing, as upstream
    if 'uuid' in params:
        request.uuid = last('uuid')
    if 'resources' in params:
        group.resources = query.parse_resources(last('resources'))
    if 'in_tree' in params:
        group.in_tree = last('in_tree')
    return request


def find(conn: sa.Connection, request: ListRequest, base: str, key: str
         ) -> tuple[bytes, datetime.datetime | None]:
    """The list's JSON text, with links under ``base`` (the providers' URL
    as the client sees it, ending in '/'), and the newest creation or
    update time of the providers it shows, from the view of ``conn``'s
    database. ``key`` names the request (its query string): the same key
    and version, the same answer, kept while nothing changes."""
    view = view_mod.of(conn)
    with view.lock:
        view.refresh(conn)
        # Rendering 1000 providers costs a millisecond: kept.
        return view.kept(('providers', request.version, base, key),
                         lambda: _answer(view, request, base))


def _answer(view: view_mod.ResourceView, request: ListRequest, base: str
            ) -> tuple[bytes, datetime.datetime | None]:
    found = _selected(view, request)
    rows, details = view.rows, view.details
    listed: list[Listed] = [
        (row.uuid, details[rp][0], row.generation,
         None if row.parent is None else rows[row.parent].uuid, rows[row.root].uuid)
        for rp in found for row in (rows[rp],)]
    return body(request.version, base, listed), view.last_modified(found)


def _selected(view: view_mod.ResourceView, request: ListRequest) -> list[int]:
    """Ids of the providers the request selects, in id order. Unknown
    classes and traits are 400s; unknown aggregates or an unknown in_tree
    provider match nothing.

    Upstream's order: a filter that leaves nothing ends the search before
    a later unknown name is looked at. The tree first, then each required
    trait in turn (the first unknown named alone), then whether any
    provider has the required traits, the forbidden traits, whether any
    provider is in the aggregates, the classes."""
    group = request.group
    if group.in_tree is not None and filters.root_of_uuid(view, group.in_tree) is None:
        return []
    for any_of in group.required:
        for trait in sorted(any_of):
            filters.known_traits(view, [trait], filters.IN_REQUIRED)
    required = [frozenset(view.trait_ids[t] for t in any_of) for any_of in group.required]
    if required and not any(all(mine & any_of for any_of in required)
                            for mine in view.traits.values()):
        return []
    filters.known_traits(view, group.forbidden, filters.IN_REQUIRED)
    if group.member_of and not filters.in_every_aggregate(view, group.member_of):
        return []
    filters.known_classes(view, group.resources)
    selection = filters.group_query(view, group)
    if selection is None:
        return []
    meets = filters.passes(view, selection)
    among = (filters.with_room(view, selection.resources) if selection.resources
             else view.rows)
    found = sorted(among if meets is None else filter(meets, among))
    if request.uuid is not None:
        wanted = view.provider_of(request.uuid)
        found = [rp for rp in found if rp == wanted]
    if request.name is not None:
        found = [rp for rp in found if view.details[rp][0] == request.name]
    return found


def body(version: microversion.Version, base: str, providers: list[Listed]) -> bytes:
    """The JSON of a provider list, the same as rendering each provider as
    a single one is (``handlers.resource_provider.renderer``) and encoding
    the whole, written as text: at 1000 providers building the dicts cost
    more than the query."""
    quoted = json.encoder.encode_basestring   # a JSON string, quotes included
    # Each provider's text up to its name is these pieces joined by its
    # uuid: '{"uuid":"<uuid>","links":[{"rel":"self","href":".../<uuid>"},...'
    pieces = ['{"uuid":"']
    links = [(rel, suffix) for wanted, rel, suffix in LINKS if version >= wanted]
    # The links' common start as JSON text, less its closing quote.
    prefix = quoted(base)[:-1]
    after = '","links":['
    for rel, suffix in links:
        pieces.append(after + '{"rel":"%s","href":%s' % (rel, prefix))
        after = suffix + '"},'
    pieces.append(after[:-1] + '],"name":')
    nested = version >= (1, 14)

    def one(provider: Listed) -> str:
        uuid, name, generation, parent, root = provider
        head = uuid.join(pieces) + quoted(name)
        if nested:
            return '%s,"generation":%d,"parent_provider_uuid":%s,"root_provider_uuid":%s}' % (
                head, generation, 'null' if parent is None else quoted(parent),
                'null' if root is None else quoted(root))
        return '%s,"generation":%d}' % (head, generation)
    return ('{"resource_providers":[' + ','.join(map(one, providers)) + ']}').encode()
