"""Reading the host's sysfs and procfs, rooted anywhere (tests use fakes)."""
import os

from tracker.drivers.errors import DiscoveryError


class HostPaths:
    """Where the host driver reads from: [tracker] sysfs_root and proc_root."""

    def __init__(self, sysfs_root: str = '/sys', proc_root: str = '/proc') -> None:
        self.sysfs_root = sysfs_root
        self.proc_root = proc_root

    def sys(self, *parts: str) -> str:
        return os.path.join(self.sysfs_root, *parts)

    def proc(self, *parts: str) -> str:
        return os.path.join(self.proc_root, *parts)


def read(path: str, default: str | None = None) -> str:
    """A sysfs attribute, stripped; ``default`` when absent (None: required)."""
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        if default is None:
            raise DiscoveryError('cannot read %s: it does not exist' % path) \
                from None
        return default
    except OSError as exc:
        if default is None:
            raise DiscoveryError('cannot read %s: %s' % (path, exc.strerror)) \
                from None
        return default


def read_int(path: str, default: int | None = None, base: int = 10) -> int:
    text = read(path, None if default is None else str(default))
    try:
        return int(text, base)
    except ValueError:
        raise DiscoveryError('%s: not a number: %r' % (path, text)) from None


def listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def link_name(path: str) -> str | None:
    """The last component of the symlink target at ``path``, or None."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def meminfo_kib(text: str, key: str) -> int:
    """The kB value of ``key`` in a /proc/meminfo (or node meminfo) text."""
    for line in text.splitlines():
        words = line.replace(':', ' ').split()
        # '/proc/meminfo': 'MemTotal: N kB'; node: 'Node 0 MemTotal: N kB'
        if key in words:
            return int(words[words.index(key) + 1])
    raise DiscoveryError('no %s in meminfo' % key)
