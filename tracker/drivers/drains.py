"""Devices taken out of scheduling: drained by the operator
(``tracker-manage device drain``), kept in ``[tracker] state_path``.

The file, ``drained-devices-<host>.json``, maps a PCI address to the
reason; the layout reads it every cycle (as the provider config), so a
drain takes effect at the next cycle (``tracker-manage refresh`` for one
now). A drained device's provider keeps its allocations but takes no new
one: its reserved inventory grows by the drained units (a whole device, a
GPU: all of it; a VF: one of its PF's), with the trait
CUSTOM_DEVICE_DRAINED.
"""
import json
import logging
import os
import tempfile

from oslo_config import cfg

from tracker import agent_opts
from tracker.drivers.errors import DiscoveryError

LOG = logging.getLogger(__name__)
TRAIT = 'CUSTOM_DEVICE_DRAINED'


def register(conf: cfg.ConfigOpts) -> None:
    """The agent's state_path, which the drivers read for the drains."""
    for opt in agent_opts.tracker_opts:
        if opt.dest == 'state_path':
            conf.register_opt(opt, group='tracker')


def path(state_path: str, host: str) -> str:
    return os.path.join(state_path, 'drained-devices-%s.json' % host)


def load(state_path: str | None, host: str) -> dict[str, str]:
    """{address: reason}; none without a state path or a file."""
    if not state_path:
        return {}
    try:
        with open(path(state_path, host)) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DiscoveryError('drained devices file %s: %s'
                             % (path(state_path, host), exc)) from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise DiscoveryError('drained devices file %s: expected {address: '
                             'reason}' % path(state_path, host))
    return data


def save(state_path: str, host: str, drained: dict[str, str]) -> None:
    """Replace the file whole (a reader never sees half of it)."""
    os.makedirs(state_path, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=state_path, prefix='.drained-')
    with os.fdopen(fd, 'w') as f:
        json.dump(drained, f, indent=1, sort_keys=True)
    os.replace(tmp, path(state_path, host))


def add(state_path: str | None, host: str, failing: dict[str, str]) -> None:
    """Drain the failing devices a health source found ({address: reason}),
    those not drained yet; an earlier reason is kept."""
    if not failing or not state_path:
        return
    drained = load(state_path, host)
    new = {a: r for a, r in failing.items() if a not in drained}
    if new:
        for address, reason in sorted(new.items()):
            LOG.warning('device %s drained: %s', address, reason)
        save(state_path, host, {**drained, **new})
