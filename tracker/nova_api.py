"""Beside nova-compute: what nova's API says is moving.

Placement alone cannot tell nova's moves from drift: nova 34 writes its
consumers untyped (its report client stays below microversion 1.38), so a
migration's consumer looks like any other. Where the audit would write
(tracker/reconcile.py), it first asks nova, with the credentials and the
service catalog the agent already uses for placement (the ``[placement]``
session and auth; the catalog's ``compute`` service), at compute API
microversion 2.80:

- ``GET /servers/{uuid}``: is this consumer a server, and is nova doing
  something to it (a ``task_state``, or a status of a move)?
- ``GET /os-migrations?project_id=&user_id=``: is this consumer a
  migration (nova writes a migration's consumer with its instance's
  project and user), for which instance, and is it still in progress?

Only GETs, only for the consumers a finding is about (a steady host asks
nothing). Any failure (no compute endpoint in the catalog, a refusal, an
answer that is not nova's) makes the answer ``UNASKED``, on which the audit
writes nothing it could not judge without nova.
"""
from collections.abc import Callable
import dataclasses
import logging
from typing import Any
from typing import Protocol

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

LOG = logging.getLogger(__name__)

VERSION = '2.80'      # migrations' uuid (2.59), project and user filters (2.80)
PAGE = 1000           # nova's default [api] max_limit
TIMEOUT = 30.0        # seconds; [placement] timeout when it is set
SERVER, MIGRATION, NONE, UNASKED = 'server', 'migration', 'none', 'unasked'

# nova's own meaning of "ended" (migration_get_in_progress_by_host_and_node);
# an evacuation 'done' still holds the source until nova-compute starts there
ENDED = frozenset(('confirmed', 'reverted', 'error', 'failed', 'completed', 'cancelled',
                   'done'))
EVACUATION_PENDING = frozenset(('accepted', 'pre-migrating', 'done'))
# a server in these holds allocations for a move whatever its task_state
MOVING_STATUSES = frozenset(('RESIZE', 'VERIFY_RESIZE', 'REVERT_RESIZE', 'MIGRATING',
                             'REBUILD'))


class NovaUnavailable(Exception):
    """nova's API could not be asked (one line)."""


class Source(Protocol):
    """nova's answers: NovaApi over HTTP, or a test's."""

    def server(self, uuid: str) -> dict[str, Any] | None: ...

    def migrations(self, project_id: str, user_id: str) -> list[dict[str, Any]]: ...


class NovaApi:
    """nova's compute API through a keystoneauth1 Adapter."""

    def __init__(self, adapter: ks_adapter.Adapter) -> None:
        self.adapter = adapter

    @classmethod
    def beside(cls, placement: ks_adapter.Adapter) -> 'NovaApi':
        """The compute service of the catalog placement's adapter uses: same
        session, auth, interface and region."""
        return cls(ks_adapter.Adapter(
            placement.session, auth=placement.auth, service_type='compute',
            interface=placement.interface, region_name=placement.region_name,
            additional_headers=placement.additional_headers, raise_exc=False))

    def _get(self, path: str) -> tuple[int, Any]:
        try:
            # a nova that does not answer must not stop the cycle
            resp = self.adapter.get(path, microversion=VERSION, raise_exc=False,
                                    connect_retries=0,
                                    timeout=self.adapter.session.timeout or TIMEOUT)
        except ks_exc.ClientException as exc:
            raise NovaUnavailable('%s: %s' % (type(exc).__name__, exc)) from None
        # a catalog-less token (admin_token) sends any service to placement
        if 'compute' not in resp.headers.get('OpenStack-API-Version', ''):
            raise NovaUnavailable('GET %s was not answered by nova\'s API (%d)'
                                  % (path, resp.status_code))
        if resp.status_code == 404:
            return 404, None
        if resp.status_code != 200:
            raise NovaUnavailable('GET %s: %d %s' % (path, resp.status_code,
                                                     resp.text[:200]))
        return 200, resp.json()

    def server(self, uuid: str) -> dict[str, Any] | None:
        status, body = self._get('/servers/%s' % uuid)
        return None if status == 404 else dict(body['server'])

    def migrations(self, project_id: str, user_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        marker = ''
        while True:
            path = '/os-migrations?project_id=%s&user_id=%s&limit=%d%s' % (
                project_id, user_id, PAGE, '&marker=' + marker if marker else '')
            status, body = self._get(path)
            page = list((body or {}).get('migrations') or [])
            found += page
            if len(page) < PAGE:
                return found
            marker = page[-1]['uuid']


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What nova says of one consumer."""
    kind: str                       # SERVER, MIGRATION, NONE, UNASKED
    moving: bool = False            # nova holds it for a move in flight
    reason: str = ''
    instance: str | None = None     # a migration's instance
    owner: tuple[str | None, str | None] = (None, None)   # a server's project, user


class Moves:
    """One check's questions to nova, each asked once; after the first
    failure every answer is UNASKED (no retries within a check)."""

    def __init__(self, source: Source | None, why_not: str = 'nova\'s API not configured'
                 ) -> None:
        self.source = source
        self.failed = None if source is not None else why_not
        self._servers: dict[str, Verdict] = {}
        self._migrations: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def _ask(self, call: Callable[[], Any]) -> Any:
        if self.failed is not None:
            return None
        try:
            return call()
        except NovaUnavailable as exc:
            self.failed = str(exc)
            LOG.warning('nova\'s API not asked about moves (%s): findings it would '
                        'settle are reported, not repaired', exc)
            return None

    def unasked(self) -> Verdict:
        return Verdict(UNASKED, reason='nova\'s API could not be asked: %s' % self.failed)

    def server(self, uuid: str) -> Verdict:
        """What nova says of a server (a guest's or a consumer's uuid)."""
        if uuid in self._servers:
            return self._servers[uuid]
        source = self.source
        found = self._ask(lambda: (uuid, source.server(uuid)) if source else None)
        if found is None:
            return self.unasked()
        server = found[1]
        if server is None:
            verdict = Verdict(NONE, reason='nova has no server %s' % uuid)
        else:
            status, task = server.get('status'), server.get('OS-EXT-STS:task_state')
            verdict = Verdict(
                SERVER, moving=bool(task) or status in MOVING_STATUSES,
                reason='nova\'s server is %s (task_state %s)' % (status, task),
                owner=(server.get('tenant_id'), server.get('user_id')))
        self._servers[uuid] = verdict
        return verdict

    def consumer(self, uuid: str, project_id: str | None, user_id: str | None) -> Verdict:
        """What nova says of a consumer with no domain here: a server, a
        migration (in flight or ended), or nothing nova knows."""
        verdict = self.server(uuid)
        if verdict.kind == UNASKED or verdict.moving:
            return verdict
        if not project_id or not user_id:
            return Verdict(UNASKED, reason='placement gives the consumer no owner')
        listed = self._owned(project_id, user_id)
        if listed is None:
            return self.unasked()
        if verdict.kind == SERVER:
            # a server at rest whose evacuation nova has still to clean up here
            for migration in listed:
                found = migration_verdict(migration)
                if migration.get('instance_uuid') == uuid and found.moving:
                    return found
            return verdict
        for migration in listed:
            if migration.get('uuid') == uuid:
                return migration_verdict(migration)
        return Verdict(NONE, reason='neither a server nor a migration of nova\'s')

    def _owned(self, project_id: str, user_id: str) -> list[dict[str, Any]] | None:
        key = (project_id, user_id)
        if key not in self._migrations:
            source = self.source
            listed = self._ask(lambda: source.migrations(*key) if source else None)
            if listed is None:
                return None
            self._migrations[key] = listed
        return self._migrations[key]


def migration_verdict(migration: dict[str, Any]) -> Verdict:
    status, kind = migration.get('status'), migration.get('migration_type')
    moving = status not in ENDED or (kind == 'evacuation' and status in EVACUATION_PENDING)
    return Verdict(MIGRATION, moving=moving,
                   reason='nova\'s %s %s of server %s is %s' % (
                       kind or 'migration', migration.get('uuid'),
                       migration.get('instance_uuid'), status),
                   instance=migration.get('instance_uuid'))
