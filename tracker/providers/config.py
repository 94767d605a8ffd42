"""Operator provider configuration: YAML files that add to what drivers find.

Every ``*.yaml`` / ``*.yml`` file in ``[compute] provider_config_location``
is one document::

    meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: $COMPUTE_NODE        # or: name: <provider name>
        inventories:
          additional:
            - CUSTOM_LICENSE: {total: 4, reserved: 0}
        traits:
          additional: [CUSTOM_GOLD]

``$COMPUTE_NODE`` stands for this host's compute node (the tree's root).
As in nova, only custom resource classes (``CUSTOM_*``) may be added, and
traits must be custom or standard ones (os-traits): placement refuses
anything else, and one refused name would fail every write of the
provider's inventories or traits, cycle after cycle. Additional
inventories win over a driver's record of the same class: the operator
knows something the hardware does not say.

A configuration that does not validate (a file, or any entry of it) is an
error naming the file and the field, and is not applied at all:
``ProviderConfigSource`` keeps serving the last good configuration, and
raises when there is none yet (a fresh process), so that the caller writes
nothing rather than remove what the operator configured.
"""
from collections.abc import Iterable
import dataclasses
import glob
import logging
import os

import jsonschema
import os_traits
import yaml

from tracker.providers import provider as provider_mod
from tracker.providers import tree as tree_mod

LOG = logging.getLogger(__name__)

COMPUTE_NODE = '$COMPUTE_NODE'
SUPPORTED_MAJOR = 1

_NAME = {'type': 'string', 'pattern': '^[A-Z0-9_]+$', 'maxLength': 255}
_CUSTOM_NAME = {'type': 'string', 'pattern': '^CUSTOM_[A-Z0-9_]+$', 'maxLength': 255}
_COUNT = {'type': 'integer', 'minimum': 0}
_INVENTORY = {
    'type': 'object',
    'properties': {
        'total': _COUNT, 'reserved': _COUNT,
        'min_unit': {'type': 'integer', 'minimum': 1},
        'max_unit': {'type': 'integer', 'minimum': 1},
        'step_size': {'type': 'integer', 'minimum': 1},
        'allocation_ratio': {'type': 'number', 'exclusiveMinimum': 0},
    },
    'required': ['total'],
    'additionalProperties': False,
}
SCHEMA_V1 = {
    'type': 'object',
    'properties': {
        'meta': {
            'type': 'object',
            'properties': {'schema_version': {'type': 'string',
                                              'pattern': r'^1\.\d+$'}},
            'required': ['schema_version'],
        },
        'providers': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'identification': {
                        'type': 'object',
                        'properties': {
                            'uuid': {'type': 'string', 'pattern':
                                     r'^(\$COMPUTE_NODE|[0-9a-fA-F-]{32,36})$'},
                            'name': {'type': 'string', 'minLength': 1,
                                     'maxLength': 200},
                        },
                        'minProperties': 1, 'maxProperties': 1,
                        'additionalProperties': False,
                    },
                    'inventories': {
                        'type': 'object',
                        'properties': {'additional': {
                            'type': 'array',
                            'items': {'type': 'object',
                                      'propertyNames': _CUSTOM_NAME,
                                      'additionalProperties': _INVENTORY,
                                      'minProperties': 1}}},
                        'additionalProperties': False,
                    },
                    'traits': {
                        'type': 'object',
                        'properties': {'additional': {'type': 'array',
                                                      'items': _NAME}},
                        'additionalProperties': False,
                    },
                },
                'required': ['identification'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['meta', 'providers'],
    'additionalProperties': False,
}


class ProviderConfigError(Exception):
    """A provider config file that cannot be used; names file and field."""

    def __init__(self, path: str, field: str | None, message: str) -> None:
        self.path = path
        self.field = field
        super().__init__('%s: %s: %s' % (path, field or '(document)', message))


@dataclasses.dataclass
class ProviderOverlay:
    """What one operator entry adds to one provider."""
    source: str                 # file it came from
    uuid: str | None = None     # a uuid or COMPUTE_NODE
    name: str | None = None
    inventories: dict[str, provider_mod.Inventory] = dataclasses.field(default_factory=dict)
    traits: set[str] = dataclasses.field(default_factory=set)

    @property
    def key(self) -> tuple[str, str | None]:
        return ('uuid', self.uuid) if self.uuid else ('name', self.name)


def _field(path_parts: Iterable[object]) -> str:
    text = ''
    for part in path_parts:
        text += '[%d]' % part if isinstance(part, int) else ('.' if text else '') + str(part)
    return text


def load_file(path: str) -> list[ProviderOverlay]:
    """The overlays of one file; ProviderConfigError if it is not valid."""
    try:
        with open(path, encoding='utf-8') as f:
            document = yaml.safe_load(f)
    except OSError as e:
        raise ProviderConfigError(path, None, 'cannot read: %s' % e.strerror)
    except yaml.YAMLError as e:
        raise ProviderConfigError(path, None, 'not valid YAML: %s'
                                  % str(e).replace('\n', ' '))
    meta = document.get('meta') if isinstance(document, dict) else None
    version = meta.get('schema_version') if isinstance(meta, dict) else None
    if isinstance(version, str) and not version.startswith('%d.' % SUPPORTED_MAJOR):
        raise ProviderConfigError(path, 'meta.schema_version',
                                  'unsupported version %r (supported: %d.x)'
                                  % (version, SUPPORTED_MAJOR))
    errors = sorted(jsonschema.Draft7Validator(SCHEMA_V1).iter_errors(document),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        message = err.message
        if err.validator == 'pattern' and err.schema is _CUSTOM_NAME:
            message = ('%r is not a custom resource class: only CUSTOM_* '
                       'classes may be added' % err.instance)
        raise ProviderConfigError(path, _field(err.absolute_path) or None, message)
    standard = frozenset(os_traits.get_traits())
    overlays = []
    for index, entry in enumerate(document['providers']):
        for n, trait in enumerate(entry.get('traits', {}).get('additional', [])):
            if not trait.startswith('CUSTOM_') and trait not in standard:
                raise ProviderConfigError(
                    path, 'providers[%d].traits.additional[%d]' % (index, n),
                    '%r is neither a custom trait (CUSTOM_*) nor a standard '
                    'one (os-traits)' % trait)
        ident = entry['identification']
        inventories: dict[str, provider_mod.Inventory] = {}
        for item in entry.get('inventories', {}).get('additional', []):
            for rc, record in item.items():
                inventories[rc] = provider_mod.inventory(**record)
        overlays.append(ProviderOverlay(
            source=path, uuid=ident.get('uuid'), name=ident.get('name'),
            inventories=inventories,
            traits=set(entry.get('traits', {}).get('additional', []))))
    return overlays


def load_directory(directory: str) -> list[ProviderOverlay]:
    """Every overlay in ``directory``; a provider named twice is an error."""
    if not os.path.isdir(directory):
        return []
    overlays: list[ProviderOverlay] = []
    seen: dict[tuple[str, str | None], str] = {}
    for path in sorted(glob.glob(os.path.join(directory, '*.yaml'))
                       + glob.glob(os.path.join(directory, '*.yml'))):
        for overlay in load_file(path):
            if overlay.key in seen:
                raise ProviderConfigError(
                    path, 'providers.identification',
                    'provider %s %r is already configured in %s'
                    % (overlay.key[0], overlay.key[1], seen[overlay.key]))
            seen[overlay.key] = path
            overlays.append(overlay)
    return overlays


class ProviderConfigSource:
    """The directory's configuration, keeping the last good one on errors."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        # the last good configuration, once there is one
        self.overlays: list[ProviderOverlay] | None = None
        self.error: ProviderConfigError | None = None

    def load(self) -> list[ProviderOverlay]:
        """Reread the directory; returns the overlays now in force.

        Raises ProviderConfigError when the directory does not validate and
        no good configuration was read before: applying none would remove
        from placement what the operator configured.
        """
        try:
            self.overlays = load_directory(self.directory)
        except ProviderConfigError as e:
            if self.overlays is None:
                self.error = e
                raise
            if str(e) != str(self.error):      # once, not every cycle
                LOG.error('provider config not applied, keeping the last good '
                          'one: %s', e)
            self.error = e
            return self.overlays
        if self.error is not None:
            LOG.info('provider config valid again: applied')
        self.error = None
        return self.overlays


def apply(overlays: list[ProviderOverlay], tree: tree_mod.ProviderTree,
          compute_node_uuid: str | None = None) -> list[ProviderOverlay]:
    """Add the overlays' inventories and traits to the providers of ``tree``.

    Returns the overlays that matched no provider (reported, not fatal: the
    device may appear later).
    """
    unmatched = []
    for overlay in overlays:
        if overlay.uuid == COMPUTE_NODE:
            target = compute_node_uuid or (tree.roots()[0].uuid if len(tree) else None)
        else:
            target = overlay.uuid or overlay.name
        provider = tree.find(target) if target else None
        if provider is None:
            LOG.warning('%s: no provider %s %r on this host', overlay.source,
                        overlay.key[0], overlay.key[1])
            unmatched.append(overlay)
            continue
        inventories = dict(provider.inventories)
        inventories.update({rc: dict(rec) for rc, rec in overlay.inventories.items()})
        tree.update(provider.uuid, inventories=inventories,
                    traits=set(provider.traits) | overlay.traits,
                    # the operator's ratios are the operator's to say
                    placement_ratios={
                        rc: fit for rc, fit in provider.placement_ratios.items()
                        if rc not in overlay.inventories})
    return unmatched
