"""The wire: microversion negotiation, request ids, retries, counters.

Everything the report client sends goes through ``Transport.request``. It
is the one place that knows about keystoneauth1, HTTP status codes and
placement's error document, and the one place that counts requests.

It is also where the writes are seen, one by one: ``Transport.recording``
lists those sent meanwhile, and ``DryRun`` sends none, answering each as
placement answers a write it accepts, so that the code that writes runs to
its end and its list is what it would have sent (the audit's --dry-run).
"""
from collections.abc import Iterator
import contextlib
import copy
import dataclasses
import logging
import random
import time
from typing import Any
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

from tracker.placement import errors

LOG = logging.getLogger(__name__)

WANT = (1, 39)   # the newest microversion the client knows
MINIMUM = (1, 14)   # nested providers (in_tree, parent_provider_uuid)

# What changes with the microversion, and where the client degrades.
FEATURES = {
    'required_traits': (1, 18),        # GET /resource_providers?required=
    'aggregate_generation': (1, 19),   # aggregates PUT/GET carry the generation
    'provider_body_on_create': (1, 20),
    'error_codes': (1, 23),
    'consumer_generation': (1, 28),
    'reshaper': (1, 30),
    'reparent': (1, 37),
    'consumer_type': (1, 38),
}

RETRY_STATUS = (503,)
WRITE_METHODS = ('PUT', 'POST', 'DELETE')


# a microversion, (major, minor)
Version = tuple[int, int]


def parse_version(text: str) -> Version:
    major, minor = str(text).split('.')
    return int(major), int(minor)


def version_text(version: Version) -> str:
    return '%d.%d' % version


@dataclasses.dataclass
class Counters:
    """What the client sent; the agent reports these per cycle."""
    requests: int = 0
    writes: int = 0       # successful PUT/POST/DELETE
    conflicts: int = 0    # 409 concurrent_update seen
    retries: int = 0      # connection failures and 503s retried

    def snapshot(self) -> 'Counters':
        return dataclasses.replace(self)


@dataclasses.dataclass
class Response:
    status: int
    body: Any               # parsed JSON, or None
    code: str | None = None
    detail: str = ''
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclasses.dataclass(frozen=True)
class Write:
    """One write as it left the client (or, in a dry run, would have)."""
    method: str
    path: str
    body: Any = None


def new_request_id() -> str:
    return 'req-%s' % uuid.uuid4()


class Transport:
    """Speaks to placement through a keystoneauth1 Adapter."""

    def __init__(self, adapter: ks_adapter.Adapter, *, want: str | None = None,
                 attempts: int = 4, retry_delay: float = 0.5,
                 max_retry_delay: float = 8.0) -> None:
        self.adapter = adapter
        self.want = min(WANT, parse_version(want)) if want else WANT
        self.attempts = max(1, attempts)
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.global_request_id = new_request_id()
        self.version: Version | None = None        # negotiated
        self.counters = Counters()
        self.written: list[Write] | None = None     # while recording()

    # -- microversion --------------------------------------------------

    def negotiate(self) -> Version:
        """Learn the server's range once; settle on the newest both know."""
        if self.version is not None:
            return self.version
        resp = self._send('GET', '/', None, None)
        if not resp.ok:
            raise errors.PlacementError('GET / answered %d: %s'
                                        % (resp.status, resp.detail), resp.status)
        versions = (resp.body or {}).get('versions') or [{}]
        server_max = parse_version(versions[0].get('max_version') or '1.0')
        version = min(self.want, server_max)
        if version < MINIMUM:
            raise errors.PlacementTooOld(
                'placement serves up to microversion %s; the tracker needs %s'
                % (version_text(server_max), version_text(MINIMUM)))
        if version < WANT:
            LOG.info('placement microversion %s: older features only',
                     version_text(version))
        self.version = version
        return version

    def supports(self, feature: str) -> bool:
        return self.negotiate() >= FEATURES[feature]

    # -- requests ------------------------------------------------------

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[Write]]:
        """The writes sent meanwhile, in order, whatever placement answered."""
        outer, self.written = self.written, []
        try:
            yield self.written
        finally:
            if outer is not None:
                outer.extend(self.written)
            self.written = outer

    def request(self, method: str, url: str, body: Any = None,
                at_most: Version | None = None) -> Response:
        """Send one request at the negotiated microversion, or at
        ``at_most`` when that is older (a request whose body must not
        carry what a newer version adds)."""
        version = version_text(min(self.negotiate(), at_most or WANT))
        if method in WRITE_METHODS and self.written is not None:
            self.written.append(Write(method, url, copy.deepcopy(body)))
        resp = self._send(method, url, body, version)
        if resp.code == errors.CONCURRENT_UPDATE:
            self.counters.conflicts += 1
        if resp.ok and method in WRITE_METHODS:
            self.counters.writes += 1
        return resp

    def _send(self, method: str, url: str, body: Any, version: str | None) -> Response:
        for attempt in range(1, self.attempts + 1):
            self.counters.requests += 1
            try:
                raw = self.adapter.request(
                    url, method, json=body, microversion=version,
                    global_request_id=self.global_request_id, raise_exc=False,
                    connect_retries=0, status_code_retries=0)
            except ks_exc.ConnectionError as e:
                failure = '%s %s: %s' % (method, url, e)
            except ks_exc.ClientException as e:
                # no endpoint in the catalog, credentials refused: retrying
                # now would not help, the next cycle tries again
                raise errors.PlacementUnreachable('%s %s: %s: %s' % (
                    method, url, type(e).__name__, e)) from e
            else:
                if raw.status_code not in RETRY_STATUS:
                    return _response(raw)
                failure = '%s %s: %d' % (method, url, raw.status_code)
            if attempt < self.attempts:
                self.counters.retries += 1
                delay = min(self.max_retry_delay, self.retry_delay * 2 ** (attempt - 1))
                delay *= random.uniform(0.5, 1.0)   # no thundering herd of agents
                # DEBUG: the agent logs the change of state once, not
                # every retry of every cycle while placement is away.
                LOG.debug('placement unavailable (%s); retry %d in %.1fs',
                          failure, attempt, delay)
                time.sleep(delay)
        raise errors.PlacementUnreachable('placement unreachable after %d attempts: %s'
                                          % (self.attempts, failure))


class DryRun(Transport):
    """Reads from placement; writes nothing. Each write is recorded
    (``written``) and answered as placement answers a write it accepts,
    with the generation it would move, so the caller goes on as after a
    real write. A write placement would refuse (a provider still in use,
    an inventory still allocated, a generation that moved meanwhile) is
    listed all the same: it is what would be sent. After a reshape the
    writes that follow carry the generations placement had before it."""

    def __init__(self, wire: Transport) -> None:
        super().__init__(wire.adapter, attempts=wire.attempts,
                         retry_delay=wire.retry_delay,
                         max_retry_delay=wire.max_retry_delay)
        self.want = wire.want
        self.version = wire.version
        self.global_request_id = wire.global_request_id
        self.written = []

    def _send(self, method: str, url: str, body: Any, version: str | None) -> Response:
        if method not in WRITE_METHODS:
            return super()._send(method, url, body, version)
        self.counters.requests += 1
        return accepted(method, url, body, self.version or MINIMUM)


def accepted(method: str, url: str, body: Any, version: Version) -> Response:
    """Placement's answer to a write it accepts, as far as the report
    client reads it: status, and the body it takes generations from."""
    parts = url.split('?')[0].strip('/').split('/')
    data = body if isinstance(body, dict) else {}
    if method == 'DELETE':
        return Response(204, None)
    if parts == ['resource_providers']:        # a new provider starts at 0
        if version < FEATURES['provider_body_on_create']:
            return Response(201, None)
        return Response(200, {
            'uuid': data.get('uuid'), 'name': data.get('name'), 'generation': 0,
            'parent_provider_uuid': data.get('parent_provider_uuid')})
    if parts[0] == 'resource_providers' and len(parts) == 2:
        # a rename or a new parent leaves the generation where it was
        return Response(200, {'uuid': parts[1], 'name': data.get('name'),
                              'parent_provider_uuid': data.get('parent_provider_uuid')})
    if parts[0] == 'resource_providers' and len(parts) == 3:
        part = parts[2]       # inventories, traits, aggregates: one more generation
        answer: dict[str, Any] = {part: body if isinstance(body, list) else data.get(part)}
        generation = data.get('resource_provider_generation')
        if isinstance(generation, int):
            answer['resource_provider_generation'] = generation + 1
        return Response(200, answer)
    if parts[0] in ('resource_classes', 'traits') and len(parts) == 2:
        return Response(201, None)
    return Response(204, None)     # allocations, the reshaper


def _response(raw: Any) -> Response:
    body = None
    if raw.content:
        try:
            body = raw.json()
        except ValueError:
            body = None
    code = detail = None
    if raw.status_code >= 400:
        err = ((body or {}).get('errors') or [{}])[0] if isinstance(body, dict) else {}
        code = err.get('code')
        detail = err.get('detail') or raw.text[:500]
        code = code or _code_from_detail(raw.status_code, detail)
    return Response(raw.status_code, body, code, detail or '', dict(raw.headers))


def _code_from_detail(status: int, detail: str) -> str | None:
    # Before 1.23 errors carry no code: recognise the two the client acts on.
    text = detail.lower()
    if status == 409 and 'generation' in text:
        return errors.CONCURRENT_UPDATE
    if status == 409 and 'in use' in text:
        return errors.INVENTORY_INUSE
    return None
