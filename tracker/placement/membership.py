"""Host aggregate membership by host name, as nova mirrors it.

A host belongs to an aggregate when its compute node (root) provider does.
Sharing providers (MISC_SHARES_VIA_AGGREGATE) are members of the same
aggregates on purpose, so they are never counted as hosts nor removed.
"""
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import resources
from tracker.placement.known import KnownPlacement


def hosts_in(http: http_mod.Transport, aggregate_uuid: str) -> list[str]:
    """Names of the compute node providers in the aggregate, sorted."""
    listing = resources.list_providers(http, member_of=aggregate_uuid)
    roots = [item for item in listing
             if item.get('root_provider_uuid', item['uuid']) == item['uuid']]
    names = []
    for item in roots:
        resp = http.request('GET', '/resource_providers/%s/traits' % item['uuid'])
        if not resp.ok:
            raise resources.unexpected(resp, 'reading traits', item['uuid'])
        if resources.SHARING not in resp.body['traits']:
            names.append(item['name'])
    return sorted(names)


def set_member(http: http_mod.Transport, known: KnownPlacement, aggregate_uuid: str,
               host_name: str, member: bool, conflict_retries: int) -> str:
    """Make the host's compute node a member of the aggregate, or not.

    Returns 'added', 'removed' or 'unchanged'. Raises UnknownHost when
    placement has no provider of that name, PlacementError otherwise.
    """
    found = resources.list_providers(http, name=host_name)
    if not found:
        raise errors.UnknownHost('no provider named %s in placement (has its agent '
                                 'reported it yet?)' % host_name)
    uuid = found[0]['uuid']
    for _ in range(conflict_retries + 1):
        resp = http.request('GET', '/resource_providers/%s/aggregates' % uuid)
        if not resp.ok:
            raise resources.unexpected(resp, 'reading aggregates', uuid)
        current = set(resp.body['aggregates'])
        generation = resp.body.get('resource_provider_generation')
        wanted = current | {aggregate_uuid} if member else current - {aggregate_uuid}
        if wanted == current:
            return 'unchanged'
        resp = resources.put_aggregates(http, uuid, generation, wanted)
        if resp.code == errors.CONCURRENT_UPDATE:
            continue
        if not resp.ok:
            raise resources.unexpected(resp, 'writing aggregates', uuid)
        if uuid in known.tree:
            body = resp.body if isinstance(resp.body, dict) else {}
            known.tree.update(uuid, aggregates=wanted, generation=body.get(
                'resource_provider_generation', known.tree.get(uuid).generation))
        return 'added' if member else 'removed'
    raise errors.GenerationConflict('provider %s kept changing' % uuid, 409,
                                    errors.CONCURRENT_UPDATE, uuid)
