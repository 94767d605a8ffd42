"""Operator provider configuration: YAML files that add to what drivers find.

Every ``*.yaml`` / ``*.yml`` file in ``[tracker] provider_config_location``
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
Additional inventories win over a driver's record of the same class: the
operator knows something the hardware does not say. A file that does not
validate is an error naming the file and the field; ``ProviderConfigSource``
then keeps serving the last good configuration.
"""
import dataclasses
import glob
import logging
import os

import jsonschema
from oslo_config import cfg
import yaml

from tracker.providers import provider as provider_mod

LOG = logging.getLogger(__name__)

COMPUTE_NODE = '$COMPUTE_NODE'
SUPPORTED_MAJOR = 1

opts = [
    cfg.StrOpt('provider_config_location',
               default='/etc/tracker/provider_config/',
               help='Directory of operator provider configuration files '
                    '(*.yaml) that add inventories and traits to the '
                    'providers the driver discovers.'),
]

_NAME = {'type': 'string', 'pattern': '^[A-Z0-9_]+$', 'maxLength': 255}
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
                                      'propertyNames': _NAME,
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


def list_opts():
    return [('tracker', opts)]


class ProviderConfigError(Exception):
    """A provider config file that cannot be used; names file and field."""

    def __init__(self, path, field, message):
        self.path = path
        self.field = field
        super().__init__('%s: %s: %s' % (path, field or '(document)', message))


@dataclasses.dataclass
class ProviderOverlay:
    """What one operator entry adds to one provider."""
    source: str                 # file it came from
    uuid: str | None = None     # a uuid or COMPUTE_NODE
    name: str | None = None
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: set = dataclasses.field(default_factory=set)

    @property
    def key(self):
        return ('uuid', self.uuid) if self.uuid else ('name', self.name)


def _field(path_parts):
    text = ''
    for part in path_parts:
        text += '[%d]' % part if isinstance(part, int) else ('.' if text else '') + str(part)
    return text


def load_file(path):
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
        raise ProviderConfigError(path, _field(err.absolute_path) or None, err.message)
    overlays = []
    for entry in document['providers']:
        ident = entry['identification']
        inventories = {}
        for item in entry.get('inventories', {}).get('additional', []):
            for rc, record in item.items():
                inventories[rc] = provider_mod.inventory(**record)
        overlays.append(ProviderOverlay(
            source=path, uuid=ident.get('uuid'), name=ident.get('name'),
            inventories=inventories,
            traits=set(entry.get('traits', {}).get('additional', []))))
    return overlays


def load_directory(directory):
    """Every overlay in ``directory``; a provider named twice is an error."""
    if not os.path.isdir(directory):
        return []
    overlays = []
    seen = {}
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

    def __init__(self, directory):
        self.directory = directory
        self.overlays = []
        self.error = None

    def load(self):
        """Reread the directory; returns the overlays now in force."""
        try:
            self.overlays = load_directory(self.directory)
            self.error = None
        except ProviderConfigError as e:
            self.error = e
            LOG.error('provider config not applied, keeping the last good '
                      'one: %s', e)
        return self.overlays


def apply(overlays, tree, compute_node_uuid=None):
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
                    traits=set(provider.traits) | overlay.traits)
    return unmatched
