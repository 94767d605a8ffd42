"""Host aggregates mirrored into placement, after nova's mirroring.

An aggregates file describes aggregates by name, uuid and host names::

    aggregates:
      - name: rack-a
        uuid: 5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d
        hosts: [compute1, compute2]

Placement only knows aggregate uuids, on providers; a host belongs to an
aggregate when its compute node (root) provider does. The file is
authoritative for the hosts it names: each is added to the aggregates
listing it and removed from the other aggregates of the file. Every write
that fails is a warning; running the sync again reconciles.
"""
import dataclasses
import logging
import uuid as uuidlib

import yaml
from oslo_utils import uuidutils

LOG = logging.getLogger(__name__)


class AggregateFileError(ValueError):
    """The aggregates file cannot be used; the message says why."""


@dataclasses.dataclass
class Aggregate:
    name: str
    uuid: str
    hosts: list


def load(path):
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


def parse(data, source='aggregates'):
    if not isinstance(data, dict) or not isinstance(data.get('aggregates'), list):
        raise AggregateFileError('%s: expected a mapping with an "aggregates" '
                                 'list' % source)
    result, names, uuids = [], set(), set()
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


def find(aggregates, name_or_uuid):
    """The uuid of an aggregate named in ``aggregates``, or a uuid given."""
    for aggregate in aggregates:
        if name_or_uuid in (aggregate.name, aggregate.uuid):
            return aggregate.uuid
    if uuidutils.is_uuid_like(name_or_uuid):
        return str(uuidlib.UUID(name_or_uuid))
    raise AggregateFileError('unknown aggregate %r (give its uuid, or a name '
                             'from the aggregates file)' % name_or_uuid)


@dataclasses.dataclass
class SyncReport:
    members: list = dataclasses.field(default_factory=list)   # (aggregate, host)
    outside: list = dataclasses.field(default_factory=list)
    failed: list = dataclasses.field(default_factory=list)    # (verb, aggregate, host)

    def as_text(self):
        lines = ['%s in %s' % (h, a) for a, h in self.members]
        lines += ['%s not in %s' % (h, a) for a, h in self.outside]
        lines += ['FAILED to %s %s / %s' % f for f in self.failed]
        summary = '%d membership(s) checked, %d failed' % (
            len(self.members) + len(self.outside) + len(self.failed),
            len(self.failed))
        if self.failed:
            summary += ' (see the warnings; run the sync again to reconcile)'
        return '\n'.join(lines + [summary])


def plan(aggregates):
    """[(member: bool, aggregate, host)] that make placement match the file."""
    hosts = sorted({h for a in aggregates for h in a.hosts})
    return [(host in aggregate.hosts, aggregate, host)
            for aggregate in aggregates for host in hosts]


def sync(client, aggregates):
    """Apply ``plan(aggregates)`` through the report client (whose writes
    are no-ops when placement already agrees)."""
    report = SyncReport()
    for member, aggregate, host in plan(aggregates):
        if member:
            ok = client.aggregate_add_host(aggregate.uuid, host)
            bucket, verb = report.members, 'add'
        else:
            ok = client.aggregate_remove_host(aggregate.uuid, host)
            bucket, verb = report.outside, 'remove'
        (bucket if ok else report.failed).append(
            (aggregate.name, host) if ok else (verb, aggregate.name, host))
    return report
