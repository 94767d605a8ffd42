"""Which traits and aggregates the tracker wrote, kept across restarts.

Traits and aggregates are shared with other writers (nova's
COMPUTE_STATUS_DISABLED, tracker-manage's aggregates): the sync removes
only what it wrote itself and the host no longer reports. Kept in memory
only, that knowledge dies with the process, and a trait the driver stopped
reporting across a restart would stay forever. So it is saved in a small
JSON file (``[tracker] state_path``/ownership-<host>.json), replaced
atomically after each sync that changed it.

A kill -9 between a write and the save loses at most that cycle's
ownership: the trait stays (the old behaviour), never is one removed that
the tracker did not write.
"""
import json
import logging
import os

from tracker.placement.known import Owned

LOG = logging.getLogger(__name__)
PARTS = ('traits', 'aggregates')


def path_for(state_path: str | None, host: str) -> str | None:
    if not state_path:
        return None
    return os.path.join(state_path, 'ownership-%s.json' % host)


class OwnershipFile:
    """``{provider uuid: {'traits': set, 'aggregates': set}}`` on disk."""

    def __init__(self, path: str) -> None:
        self.path = path
        # what the file holds, as last read or written
        self._saved: dict[str, dict[str, list[str]]] | None = None
        self._warned = False

    def load(self) -> Owned:
        """What the file holds; {} when there is none or it is unreadable."""
        try:
            with open(self.path) as f:
                data = json.load(f)
            owned = {uuid: {part: set(parts.get(part, ())) for part in PARTS}
                     for uuid, parts in data['providers'].items()}
        except FileNotFoundError:
            owned = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # Forgetting is safe: nothing foreign is ever removed.
            LOG.warning('ignoring %s (%s): traits and aggregates the tracker '
                        'wrote before are kept', self.path, exc)
            owned = {}
        self._saved = _plain(owned)
        return owned

    def save(self, owned: Owned) -> None:
        """Write ``owned`` if it changed since the last load or save."""
        plain = _plain(owned)
        if plain == self._saved:
            return
        tmp = self.path + '.tmp'
        try:
            os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
            with open(tmp, 'w') as f:
                json.dump({'version': 1, 'providers': plain}, f, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            if not self._warned:     # once: every cycle would say it again
                LOG.warning('cannot save %s (%s): after a restart, traits and '
                            'aggregates the host no longer reports may stay',
                            self.path, exc)
                self._warned = True
            return
        self._saved = plain


def _plain(owned: Owned) -> dict[str, dict[str, list[str]]]:
    return {uuid: {part: sorted(parts.get(part, ())) for part in PARTS}
            for uuid, parts in owned.items()}
