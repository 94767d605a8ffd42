"""Host aggregate membership by host name, as nova mirrors it.

A host belongs to an aggregate when its compute node (root) provider does.
Sharing providers (MISC_SHARES_VIA_AGGREGATE) are members of the same
aggregates on purpose, so they are never counted as hosts nor removed.
"""
from tracker.placement import errors
from tracker.placement import resources

SHARING = 'MISC_SHARES_VIA_AGGREGATE'


def hosts_in(client, aggregate_uuid):
    """Names of the compute node providers in the aggregate, sorted."""
    listing = resources.list_providers(client.http, member_of=aggregate_uuid)
    roots = [item for item in listing
             if item.get('root_provider_uuid', item['uuid']) == item['uuid']]
    names = []
    for item in roots:
        resp = client.http.request('GET', '/resource_providers/%s/traits' % item['uuid'])
        if not resp.ok:
            raise resources.unexpected(resp, 'reading traits', item['uuid'])
        if SHARING not in resp.body['traits']:
            names.append(item['name'])
    return sorted(names)


def set_member(client, aggregate_uuid, host_name, member):
    """Make the host's compute node a member of the aggregate, or not.

    Returns 'added', 'removed' or 'unchanged'. Raises UnknownHost when
    placement has no provider of that name, PlacementError otherwise.
    """
    found = resources.list_providers(client.http, name=host_name)
    if not found:
        raise errors.UnknownHost('no provider named %s in placement (has its agent '
                                 'reported it yet?)' % host_name)
    uuid = found[0]['uuid']
    for _ in range(client.conflict_retries + 1):
        resp = client.http.request('GET', '/resource_providers/%s/aggregates' % uuid)
        if not resp.ok:
            raise resources.unexpected(resp, 'reading aggregates', uuid)
        current = set(resp.body['aggregates'])
        generation = resp.body.get('resource_provider_generation')
        wanted = current | {aggregate_uuid} if member else current - {aggregate_uuid}
        if wanted == current:
            return 'unchanged'
        resp = resources.put_aggregates(client.http, uuid, generation, wanted)
        if resp.code == errors.CONCURRENT_UPDATE:
            continue
        if not resp.ok:
            raise resources.unexpected(resp, 'writing aggregates', uuid)
        if uuid in client.known:
            body = resp.body if isinstance(resp.body, dict) else {}
            client.known.update(uuid, aggregates=wanted, generation=body.get(
                'resource_provider_generation', client.known.get(uuid).generation))
        return 'added' if member else 'removed'
    raise errors.GenerationConflict('provider %s kept changing' % uuid, 409,
                                    errors.CONCURRENT_UPDATE, uuid)
