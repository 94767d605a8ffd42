"""Beside nova-compute: whose providers these are, and where guests land.

nova-compute (2023.1 and later) keeps its compute node's uuid in the file
``compute_id`` under ``[DEFAULT] state_path`` and names the root provider
after libvirt's hostname; it writes the root's and its children's
inventories, traits and aggregates itself. Beside it the agent adopts that
tree as nova's: it writes none of it, and only compares each guest's
allocations with the domain libvirt runs (tracker/reconcile.py).

The driver describes the host in the agent's own uuids (drivers/layout.py);
``adopt`` moves each guest's claims onto nova's providers: the root's
resources onto nova's root, a device's onto nova's child for the same PCI
address (nova names it ``<root>_<address>`` for PCI in placement and
``<root>_pci_<dddd>_<bb>_<ss>_<f>`` for a GPU offering mdevs), in the class
that child offers.
"""
import dataclasses
import logging
import os
import re
import uuid as uuidlib

from oslo_config import cfg

from tracker.drivers import base
from tracker.drivers.layout import MEM_ENCRYPTION_TRAITS
from tracker.providers.provider import Provider
from tracker.providers.tree import ProviderTree

LOG = logging.getLogger(__name__)

COMPUTE_ID_FILE = 'compute_id'
BESIDE, ABSENT, AUTO = 'beside', 'absent', 'auto'

_NODEDEV = re.compile(r'^pci_([0-9a-f]{4})_([0-9a-f]{2})_([0-9a-f]{2})_([0-7])$')
_ADDRESS = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')


class NovaTreeError(Exception):
    """nova's compute node cannot be adopted (one line, for the cycle)."""


def compute_id_path(conf: cfg.ConfigOpts) -> str:
    state_path: str = conf.state_path
    return os.path.join(state_path, COMPUTE_ID_FILE)


def read_compute_id(path: str) -> str | None:
    """The uuid in nova's compute_id file; None when there is no file."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NovaTreeError('cannot read nova\'s %s: %s' % (path, exc.strerror)) from None
    try:
        return str(uuidlib.UUID(text))
    except ValueError:
        raise NovaTreeError('nova\'s %s does not hold a uuid: %r' % (path, text[:60])) from None


def compute_node_uuid(conf: cfg.ConfigOpts) -> str | None:
    """nova's compute node uuid when the agent runs beside nova-compute,
    None when it reports the host itself ([tracker] nova_compute)."""
    mode = conf.tracker.nova_compute
    if mode == ABSENT:
        return None
    path = compute_id_path(conf)
    found = read_compute_id(path)
    if found is None and mode == BESIDE:
        raise NovaTreeError('[tracker] nova_compute = beside, but nova\'s %s does not '
                            'exist ([DEFAULT] state_path)' % path)
    return found


def device_address(name: str, root_name: str) -> str | None:
    """The PCI address a provider of nova's tree stands for, from its name
    (``<root>_<address>`` or ``<root>_pci_0000_81_00_0``); None otherwise."""
    prefix = root_name + '_'
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):].lower()
    if _ADDRESS.match(rest):
        return rest
    found = _NODEDEV.match(rest)
    if found:
        return '%s:%s:%s.%s' % found.groups()
    return None


def child_key(name: str, root_name: str) -> str | None:
    """What a child of the compute node stands for, from its name: a PCI
    address (``device_address``) or a memory-encryption model
    (``<root>_amd_sev``, nova 34's); None otherwise."""
    address = device_address(name, root_name)
    if address is not None:
        return address
    model = name[len(root_name) + 1:] if name.startswith(root_name + '_') else ''
    return model if model in MEM_ENCRYPTION_TRAITS else None


@dataclasses.dataclass
class Adopted:
    """The host's guests on nova's tree; ``unplaced``: claims on a device
    nova reports no provider for ({guest: [our provider names]})."""
    root_uuid: str
    root_name: str
    instances: list[base.Instance]
    unplaced: dict[str, list[str]] = dataclasses.field(default_factory=dict)


def adopt(snapshot: base.HostSnapshot, nova_tree: ProviderTree, root_uuid: str) -> Adopted:
    """Move the snapshot's guests' claims onto nova's tree (a ProviderTree
    read from placement). Raises NovaTreeError when nova's root is missing."""
    root = nova_tree.find(root_uuid)
    if root is None:
        raise NovaTreeError('nova\'s compute node provider %s is not in placement '
                            '(has nova-compute reported this host yet?)' % root_uuid)
    by_key: dict[str, Provider] = {}
    for child in nova_tree.subtree(root_uuid):
        key = child_key(child.name, root.name)
        if key is not None:
            by_key[key] = child
    ours = {p.uuid: p for p in snapshot.providers}
    # our provider uuid -> nova's provider (None: unplaced)
    mapping: dict[str, Provider | None] = {}
    for provider in snapshot.providers:
        if provider.uuid == snapshot.root.uuid:
            mapping[provider.uuid] = root
        elif provider.parent_uuid is not None:
            key = child_key(provider.name, snapshot.root.name)
            # a NUMA child of ours holds what nova keeps on its root
            mapping[provider.uuid] = by_key.get(key) if key else root
    adopted = Adopted(root_uuid, root.name, [])
    for instance in snapshot.instances:
        claims: dict[str, dict[str, int]] = {}
        for rp, amounts in instance.allocations.items():
            nova_provider = mapping.get(rp)
            classes: set[str] | None
            if rp not in ours:       # a sharing provider: the same for nova
                target, classes = rp, None
            elif nova_provider is None:
                adopted.unplaced.setdefault(instance.uuid, []).append(ours[rp].name)
                continue
            else:
                target, classes = nova_provider.uuid, set(nova_provider.inventories)
            for rc, n in amounts.items():
                rc = _nova_class(rc, classes)
                held = claims.setdefault(target, {})
                held[rc] = held.get(rc, 0) + n
        adopted.instances.append(base.Instance(
            uuid=instance.uuid, name=instance.name, project_id=instance.project_id,
            user_id=instance.user_id, allocations=claims))
    return adopted


def _nova_class(rc: str, classes: set[str] | None) -> str:
    """A device's class as nova's provider offers it: nova names PCI classes
    its own way (CUSTOM_PCI_<VENDOR>_<PRODUCT>); a child with one class is
    the device's."""
    if classes is None or rc in classes or len(classes) != 1:
        return rc
    return next(iter(classes))
