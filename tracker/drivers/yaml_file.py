"""Reading the YAML files drivers take (fake host, host instances)."""
from typing import Any

import yaml

from tracker.drivers.errors import DiscoveryError

# libyaml's loader is ~10x faster on large instance lists; same results.
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def load(path: str) -> Any:
    """A YAML file's content, or a DiscoveryError saying what is wrong."""
    try:
        with open(path) as f:
            return yaml.load(f, Loader=_LOADER)
    except OSError as exc:
        raise DiscoveryError('cannot read %s: %s' % (path, exc.strerror)) \
            from None
    except yaml.YAMLError as exc:
        raise DiscoveryError('%s is not valid YAML: %s'
                             % (path, str(exc).replace('\n', ' '))) from None
