"""Both servers on one engine, and a sequence of calls sent to each.

``Pair(engine, workdir)`` starts upstream placement 16.0.0 (one process,
one worker, as tests/upstream.py runs it) and ``instances`` of our
``placement-server`` with ``workers`` workers each, every server on its
own scratch database of ``engine`` (sqlite, postgresql or mysql). Writes
go to our instances in turn; a read goes to another instance than the
write before it, so a read after a write is answered by another worker,
from that worker's own view of the database. Every request opens its own
connection.

``Pair.run(calls)`` empties both servers, picks a fresh token for custom
names, sends each call to upstream then to ours, and stops at the first
divergence that ``known.tolerated`` does not explain.
"""
import contextlib
import dataclasses
import json
import os
import random
import re
import string
import urllib.parse
import uuid as uuidlib

import requests
import sqlalchemy as sa

from placement_server.db import changes
from tests import databases
from tests import upstream
from tests.differential import compare
from tests.differential import known
from tests.integration import servers

ENGINES = ('sqlite', 'postgresql', 'mysql')
SERVICE_ROLES = {'X-Roles': 'admin,service'}   # the reshaper is for services
ALLOCATION_WRITE = re.compile(r'^/(allocations(/[^/?]+)?|reshaper)$')

# Our tables as tests/databases.py empties them, less classes and traits:
# upstream keeps those (its workers cache them), so both keep them.
_OUR_WIPE = ('allocations', 'consumers', 'consumer_types', 'projects', 'users',
             'inventories', 'resource_provider_traits', 'resource_provider_aggregates',
             'placement_aggregates')


@dataclasses.dataclass
class Exchange:
    call: object       # the Call as generated
    sent: str          # the call as sent (placeholders filled)
    want: tuple        # upstream's (status, body), normalised
    got: tuple         # ours
    tolerated: str = None
    wording: bool = False   # only the error texts differ

    @property
    def diverges(self):
        return self.want != self.got and not self.tolerated and not self.wording


@dataclasses.dataclass
class Result:
    exchanges: list

    @property
    def divergence(self):
        """Index of the first untolerated divergence, or None."""
        for i, ex in enumerate(self.exchanges):
            if ex.diverges:
                return i
        return None


@contextlib.contextmanager
def scratch_database(engine, workdir, label):
    """A URL of an empty database on ``engine``, dropped afterwards."""
    name = 'placement_diff_%s_%s' % (label, uuidlib.uuid4().hex[:10])
    if engine == 'sqlite':
        yield 'sqlite:///%s' % os.path.join(workdir, name + '.sqlite')
        return
    admin = sa.engine.make_url(databases.ADMIN_URLS[engine])
    admin_engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with admin_engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin_engine.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s%s' % (
                name, ' WITH (FORCE)' if engine == 'postgresql' else ''))
        admin_engine.dispose()


class Pair:
    def __init__(self, engine, workdir, instances=2, workers=2, texts=False):
        assert engine in ENGINES, engine
        self.texts = texts
        self.engine = engine
        self.workdir = workdir
        self.instances = instances
        self.workers = workers
        self.stack = contextlib.ExitStack()
        self.upstream = None
        self.ours = []
        self.token = None
        self.replays = 0
        self.requests = 0

    # life

    def start(self):
        try:
            up_url = self.stack.enter_context(
                scratch_database(self.engine, self.workdir, 'upstream'))
            our_url = self.stack.enter_context(
                scratch_database(self.engine, self.workdir, 'ours'))
            self.upstream = upstream.UpstreamPlacement(
                up_url, os.path.join(self.workdir, 'upstream'))
            self.upstream.start()
            self.stack.callback(self.upstream.stop)
            self.ours = servers.start_servers(our_url, os.path.join(self.workdir, 'ours'),
                                              count=self.instances, workers=self.workers)
            for server in self.ours:
                self.stack.callback(server.stop)
            self._up_engine = sa.create_engine(up_url)
            self._our_engine = sa.create_engine(our_url)
            self.stack.callback(self._up_engine.dispose)
            self.stack.callback(self._our_engine.dispose)
        except Exception:
            self.stack.close()
            raise
        return self

    def stop(self):
        self.stack.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def reset(self):
        """Both servers empty (but for classes and traits); a fresh token."""
        upstream.wipe(self.upstream.db_url)
        with self._our_engine.begin() as conn:
            for table in _OUR_WIPE:
                conn.exec_driver_sql('DELETE FROM %s' % table)
            conn.exec_driver_sql('UPDATE resource_providers SET parent_provider_id = NULL, '
                                 'root_provider_id = NULL')
            conn.exec_driver_sql('DELETE FROM resource_providers')
            changes.invalidate_all(conn)
        self.token = 'R' + ''.join(random.choices(string.ascii_uppercase + string.digits, k=6))
        self.replays += 1
        self.aliases = {'upstream': {}, 'ours': {}}

    def note_generated(self, our_url, name):
        """The uuids each server gave a provider created without one."""
        alias = 'generated-%d' % len(self.aliases['ours'])
        for side, base in (('upstream', self.upstream.url), ('ours', our_url)):
            status, body = self.send(base, 'GET', '/resource_providers?name='
                                     + urllib.parse.quote(str(name)), '1.0')
            for rp in (body or {}).get('resource_providers', ()) if status == 200 else ():
                self.aliases[side][rp['uuid']] = alias

    def forget_leaked_consumers(self):
        """Upstream keeps a consumer row after a failed allocation write,
        and after a POST /allocations giving a new consumer no allocation
        (known.py): drop consumers holding no allocation from its database.
        Run after every allocation write."""
        with self._up_engine.begin() as conn:
            conn.exec_driver_sql('DELETE FROM consumers WHERE uuid NOT IN '
                                 '(SELECT consumer_id FROM allocations)')

    # calls

    def run(self, calls, stop=True):
        self.reset()
        exchanges = []
        last_write = 0
        for n, call in enumerate(calls):
            path = call.path.replace('{T}', self.token)
            body = self.fill(call.body)
            if call.is_write():
                ours = self.ours[n % len(self.ours)]
                last_write = n % len(self.ours)
            else:
                ours = self.ours[(last_write + 1) % len(self.ours)]
            want = self.send(self.upstream.url, call.method, path, call.version, body)
            got = self.send(ours.url, call.method, path, call.version, body)
            if call.is_write() and ALLOCATION_WRITE.match(path.split('?')[0]):
                self.forget_leaked_consumers()
            if (call.method == 'POST' and path == '/resource_providers'
                    and isinstance(body, dict) and 'uuid' not in body
                    and want[0] < 300 and got[0] < 300):
                self.note_generated(ours.url, body.get('name'))
            ex = Exchange(call, '%s %s  @%s%s' % (call.method, path, call.version,
                                                  '' if body is None else '  ' + (
                                                      body if isinstance(body, str)
                                                      else json.dumps(body, sort_keys=True))),
                          compare.normalise(*want, self.token, self.aliases['upstream']),
                          compare.normalise(*got, self.token, self.aliases['ours']))
            if ex.want != ex.got:
                ex.wording = not self.texts and (compare.without_texts(ex.want)
                                                 == compare.without_texts(ex.got))
                ex.tolerated = known.tolerated(self.engine, call.method, path, call.version,
                                               body, ex.want, ex.got)
            exchanges.append(ex)
            if stop and ex.diverges:
                break
        return Result(exchanges)

    def fill(self, value):
        """Placeholders filled: the token, and generations as upstream holds them."""
        if isinstance(value, str):
            if value.startswith('$gen:'):
                status, body = self.send(self.upstream.url, 'GET',
                                         '/resource_providers/' + value[5:], '1.14')
                return body['generation'] if status == 200 else 0
            if value.startswith('$cgen:'):
                status, body = self.send(self.upstream.url, 'GET',
                                         '/allocations/' + value[6:], '1.28')
                return body.get('consumer_generation') if status == 200 else None
            return value.replace('{T}', self.token)
        if isinstance(value, dict):
            return {self.fill(k): self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        return value

    def send(self, base, method, path, version, body=None):
        headers = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement ' + version,
                   'Connection': 'close'}
        if path.startswith('/reshaper'):
            headers.update(SERVICE_ROLES)
        data = None
        if body is not None:
            headers['Content-Type'] = 'application/json'
            data = body if isinstance(body, str) else json.dumps(body)
        self.requests += 1
        resp = requests.request(method, base + path, headers=headers, data=data, timeout=60)
        try:
            decoded = resp.json() if resp.content else None
        except ValueError:
            decoded = resp.text[:300]
        return resp.status_code, decoded
