"""The fake driver: a host described in a YAML file ([fake] host_file).

For demos and the agent's tests. The file is read again on every
``discover()``, so editing it between cycles changes the host::

    hostname: fake-1               # default: [DEFAULT] host if set, else
                                   # the root's name
    providers:                     # the first is the root compute node
      - name: fake-1
        inventories:
          VCPU: 8                  # short form: the total
          MEMORY_MB: {total: 16384, reserved: 512, allocation_ratio: 1.5}
        traits: [COMPUTE_NODE, HW_CPU_X86_AVX2]
        aggregates: [c2d6...]
      - name: fake-1_NUMA0         # parent: the root unless 'parent' names one
        parent: fake-1
        uuid: ...                  # optional: derived from host and name
    instances:
      - uuid: 1f5c...
        name: vm1
        project_id: p
        user_id: u
        allocations:               # by provider name, or uuid of any provider
          fake-1: {VCPU: 2, MEMORY_MB: 2048}

The root's uuid is stable_uuid('compute-node', hostname) and a child's
stable_uuid(hostname, 'fake', name), like the other drivers' trees.
"""
import os
from typing import Any
import uuid as uuidlib

from oslo_config import cfg

from tracker.drivers import base
from tracker.drivers import yaml_file
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.layout import root_uuid
from tracker.providers.provider import Inventory
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid

# The YAML file's nodes are whatever the operator wrote (Any): each is
# checked where it is read.
_INVENTORY_KEYS = {'total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                   'allocation_ratio'}


class FakeDriver(base.Driver):
    name = 'fake'

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        if not conf.fake.host_file:
            raise DiscoveryError('the fake driver needs [fake] host_file')
        self.path: str = conf.fake.host_file

    def configured_host(self) -> str | None:
        """The file's ``hostname``, else [DEFAULT] host: the host this
        driver reports, so the agent is named after it too."""
        if not os.path.isfile(self.path):   # a pipe would be consumed here
            return _configured_host(self.conf) or None
        try:
            return self._hostname(yaml_file.load(self.path))
        except (DiscoveryError, AttributeError, IndexError, KeyError, TypeError):
            return _configured_host(self.conf) or None   # discover() says what is wrong

    def _hostname(self, data: Any) -> str:
        return str(data.get('hostname') or _configured_host(self.conf)
                   or _name(data['providers'][0]))

    def discover(self) -> base.HostSnapshot:
        data = yaml_file.load(self.path)
        if not isinstance(data, dict) or not data.get('providers'):
            raise DiscoveryError('%s: expected a mapping with a non-empty '
                                 '"providers" list' % self.path)
        try:
            return self._snapshot(data)
        except DiscoveryError as exc:
            raise DiscoveryError('%s: %s' % (self.path, exc)) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise DiscoveryError('%s: malformed host description: %s'
                                 % (self.path, exc)) from None

    def _snapshot(self, data: dict[str, Any]) -> base.HostSnapshot:
        entries = data['providers']
        if not isinstance(entries, list):
            raise DiscoveryError('"providers" must be a list')
        hostname = self._hostname(data)
        providers: list[Provider] = []
        by_name: dict[str, Provider] = {}
        for index, entry in enumerate(entries):
            provider = _provider(entry, hostname, index, by_name, providers)
            if provider.name in by_name:
                raise DiscoveryError('provider %r appears twice'
                                     % provider.name)
            by_name[provider.name] = provider
            providers.append(provider)
        by_uuid = {p.uuid: p for p in providers}
        instances = [_instance(entry, by_name, by_uuid)
                     for entry in data.get('instances') or []]
        return base.HostSnapshot(hostname=hostname, providers=providers,
                                 instances=instances)


def _configured_host(conf: cfg.ConfigOpts) -> str | None:
    """[DEFAULT] host when a file or override sets it (its default, the
    machine's name, says nothing of a described host)."""
    info = conf.get_location('host')     # None only for an unknown option
    if info is None or info.location is cfg.Locations.opt_default:
        return None
    host: str = conf.host
    return host


def _name(entry: Any) -> str:
    if not isinstance(entry, dict) or not entry.get('name'):
        raise DiscoveryError('every provider needs a name: %r' % (entry,))
    return str(entry['name'])


def _provider(entry: Any, hostname: str, index: int, by_name: dict[str, Provider],
              providers: list[Provider]) -> Provider:
    name = _name(entry)
    unknown = set(entry) - {'name', 'uuid', 'parent', 'inventories',
                            'traits', 'aggregates'}
    if unknown:
        raise DiscoveryError('provider %s: unknown keys %s'
                             % (name, ', '.join(sorted(unknown))))
    if index == 0:
        if entry.get('parent'):
            raise DiscoveryError('the first provider is the root: it has '
                                 'no parent')
        parent_uuid, default_uuid = None, root_uuid(hostname)
    else:
        parent_name = entry.get('parent') or providers[0].name
        if parent_name not in by_name:
            raise DiscoveryError('provider %s: parent %r must be listed '
                                 'before it' % (name, parent_name))
        parent_uuid = by_name[parent_name].uuid
        default_uuid = stable_uuid(hostname, 'fake', name)
    return Provider(
        uuid=_uuid(entry.get('uuid') or default_uuid, name),
        name=name, parent_uuid=parent_uuid,
        inventories={str(rc): _inventory(name, rc, record) for rc, record
                     in (entry.get('inventories') or {}).items()},
        traits={str(t) for t in entry.get('traits') or []},
        aggregates={_uuid(a, name) for a in entry.get('aggregates') or []})


def _uuid(value: Any, where: str) -> str:
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise DiscoveryError('%s: %r is not a uuid' % (where, value)) from None


def _inventory(name: str, rc: Any, record: Any) -> Inventory:
    if isinstance(record, int) and not isinstance(record, bool):
        record = {'total': record}
    if not isinstance(record, dict) or 'total' not in record:
        raise DiscoveryError('provider %s: inventory %s needs a total'
                             % (name, rc))
    unknown = set(record) - _INVENTORY_KEYS
    if unknown:
        raise DiscoveryError('provider %s: inventory %s has unknown keys %s'
                             % (name, rc, ', '.join(sorted(unknown))))
    return inventory(**record)


def _instance(entry: Any, by_name: dict[str, Provider],
              by_uuid: dict[str, Provider]) -> base.Instance:
    if not isinstance(entry, dict) or not entry.get('uuid'):
        raise DiscoveryError('every instance needs a uuid: %r' % (entry,))
    instance_uuid = str(entry['uuid'])
    allocations: dict[str, dict[str, int]] = {}
    for target, resources in (entry.get('allocations') or {}).items():
        if target in by_name:
            provider_uuid = by_name[target].uuid
        else:
            # Not ours (e.g. a sharing provider): accept any uuid.
            provider_uuid = _uuid(target, 'instance %s' % instance_uuid)
        if not isinstance(resources, dict):
            raise DiscoveryError('instance %s: allocations on %s must map '
                                 'resource classes to amounts'
                                 % (instance_uuid, target))
        allocations[provider_uuid] = {str(rc): int(amount)
                                      for rc, amount in resources.items()}
    return base.Instance(uuid=instance_uuid, name=str(entry.get('name', '')),
                         project_id=entry.get('project_id'),
                         user_id=entry.get('user_id'),
                         allocations=allocations)
