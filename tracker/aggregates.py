"""Host aggregates mirrored into placement, after nova's mirroring.

An aggregates file describes aggregates by name, uuid and host names::

    aggregates:
      - name: rack-a
        uuid: 5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d
        hosts: [compute1, compute2]

Placement only knows aggregate uuids, on providers; a host belongs to an
aggregate when its compute node (root) provider does. The file is the
whole truth for the aggregates it lists: their members become exactly the
hosts listed (added, and removed when they are not listed). Aggregates the
file does not list are left alone, and so are sharing providers in them.
The report says what was done to each membership, and why one failed.
"""
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging
from typing import TYPE_CHECKING
from typing import Any
import uuid as uuidlib

from oslo_utils import uuidutils
import yaml

if TYPE_CHECKING:     # the report client is imported only when a sync runs
    from tracker.placement.client import ReportClient

LOG = logging.getLogger(__name__)


class AggregateFileError(ValueError):
    """The aggregates file cannot be used; the message says why."""


@dataclasses.dataclass
class Aggregate:
    name: str
    uuid: str
    hosts: list[str]


def load(path: str) -> list[Aggregate]:
    """The aggregates described in the YAML file at ``path``."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise AggregateFileError('%s: %s' % (path, exc.strerror)) from None
    except yaml.YAMLError as exc:
        raise AggregateFileError('%s: not YAML: %s' % (
            path, ' '.join(str(exc).split()))) from None
    return parse(data, path)


def parse(data: Any, source: str = 'aggregates') -> list[Aggregate]:
    if not isinstance(data, dict) or not isinstance(data.get('aggregates'), list):
        raise AggregateFileError('%s: expected a mapping with an "aggregates" '
                                 'list' % source)
    result: list[Aggregate] = []
    names: set[str] = set()
    uuids: set[str] = set()
    for index, item in enumerate(data['aggregates']):
        where = '%s: aggregates[%d]' % (source, index)
        if not isinstance(item, dict):
            raise AggregateFileError('%s: expected a mapping' % where)
        unknown = set(item) - {'name', 'uuid', 'hosts'}
        if unknown:
            raise AggregateFileError('%s: unknown key(s) %s' % (
                where, ', '.join(sorted(unknown))))
        name, uuid, hosts = item.get('name'), item.get('uuid'), item.get('hosts', [])
        if not isinstance(name, str) or not name:
            raise AggregateFileError('%s: "name" must be a non-empty string' % where)
        if not isinstance(uuid, str) or not uuidutils.is_uuid_like(uuid):
            raise AggregateFileError('%s (%s): "uuid" must be a uuid' % (where, name))
        uuid = str(uuidlib.UUID(uuid))
        if not isinstance(hosts, list) or not all(
                isinstance(h, str) and h for h in hosts):
            raise AggregateFileError('%s (%s): "hosts" must be a list of host '
                                     'names' % (where, name))
        if name in names or uuid in uuids:
            raise AggregateFileError('%s: aggregate %s is described twice' % (
                where, name))
        names.add(name)
        uuids.add(uuid)
        result.append(Aggregate(name, uuid, sorted(set(hosts))))
    return result


def find(aggregates: Sequence[Aggregate], name_or_uuid: str) -> str:
    """The uuid of an aggregate named in ``aggregates``, or a uuid given."""
    for aggregate in aggregates:
        if name_or_uuid in (aggregate.name, aggregate.uuid):
            return aggregate.uuid
    if uuidutils.is_uuid_like(name_or_uuid):
        return str(uuidlib.UUID(name_or_uuid))
    raise AggregateFileError('unknown aggregate %r (give its uuid, or a name '
                             'from the aggregates file)' % name_or_uuid)


EXIT_OK = 0
EXIT_FAILED = 1         # placement refused or did not answer: run the sync again
EXIT_UNKNOWN_HOST = 3   # the file names hosts placement does not have


@dataclasses.dataclass
class SyncReport:
    # (outcome, aggregate, host)
    done: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # (what, why)
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    # (aggregate, host, why)
    unknown: list[tuple[str, str, Exception]] = dataclasses.field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.failed:
            return EXIT_FAILED
        return EXIT_UNKNOWN_HOST if self.unknown else EXIT_OK

    def as_text(self) -> str:
        words = {'added': 'added %s to %s', 'removed': 'removed %s from %s',
                 'unchanged': '%s already as described in %s'}
        lines = [words[outcome] % (host, aggregate)
                 for outcome, aggregate, host in self.done]
        lines += ['FAILED to %s: %s' % failure for failure in self.failed]
        lines += ['NOT added %s to %s: %s' % (host, aggregate, why)
                  for aggregate, host, why in self.unknown]
        counts = {o: sum(1 for d in self.done if d[0] == o)
                  for o in ('added', 'removed', 'unchanged')}
        summary = ('%d added, %d removed, %d unchanged, %d failed, %d unknown host(s)'
                   % (counts['added'], counts['removed'], counts['unchanged'],
                      len(self.failed), len(self.unknown)))
        if self.failed:
            summary += ' (placement refused or did not answer: run the sync again)'
        elif self.unknown:
            summary += (' (the file names hosts placement does not have: fix the '
                        'file, or sync again once their agents reported them)')
        return '\n'.join(lines + [summary])


def plan(aggregates: Sequence[Aggregate], present: Mapping[str, Sequence[str]]
         ) -> list[tuple[bool, Aggregate, str]]:
    """[(member: bool, aggregate, host)] that make placement match the file;
    ``present`` maps an aggregate uuid to the hosts placement has in it."""
    return [(host in aggregate.hosts, aggregate, host)
            for aggregate in aggregates
            for host in sorted(set(aggregate.hosts) | set(present.get(aggregate.uuid, ())))]


def sync(client: 'ReportClient', aggregates: Sequence[Aggregate]) -> SyncReport:
    """Make placement's members of each aggregate of the file its hosts."""
    from tracker.placement import errors
    report = SyncReport()
    present: dict[str, list[str]] = {}
    for aggregate in aggregates:
        try:
            present[aggregate.uuid] = client.aggregate_hosts(aggregate.uuid)
        except errors.PlacementError as exc:
            report.failed.append(('read the members of %s' % aggregate.name,
                                  ' '.join(str(exc).split())))
            aggregates = [a for a in aggregates if a is not aggregate]
    for member, aggregate, host in plan(aggregates, present):
        try:
            outcome = client.aggregate_membership(aggregate.uuid, host, member)
        except errors.UnknownHost as exc:
            report.unknown.append((aggregate.name, host, exc))
        except errors.PlacementError as exc:
            what = ('add %s to %s' if member else 'remove %s from %s') % (
                host, aggregate.name)
            report.failed.append((what, ' '.join(str(exc).split())))
        else:
            report.done.append((outcome, aggregate.name, host))
    return report
