"""nova's fakelibvirt as the agent's libvirt driver reads it.

The agent's driver imports libvirt-python, which nova's functional venv
does not have: importing this module first gives it nova's fakelibvirt,
with the few names fakelibvirt lacks; ``Connection`` answers as libvirt
does where fakelibvirt differs.
"""
import sys
import types

from nova.tests.fixtures import libvirt as fakelibvirt


def _read_write_refused(uri=None):
    # The driver asks a read-write connection for domain capabilities only;
    # beside nova the agent writes no trait, so it is refused here as a
    # libvirtd that allows the agent only to read would refuse it.
    raise fakelibvirt.libvirtError('read-write connections refused: %s' % uri)


def _libvirt_from_nova():
    """The agent's driver imports libvirt-python, which nova's functional
    venv does not have: it gets nova's fakelibvirt, with the few names
    fakelibvirt lacks (error codes for storage, the read-only open the
    test replaces by the compute's own connection)."""
    shim = types.ModuleType('libvirt')
    shim.__dict__.update(vars(fakelibvirt))
    shim.VIR_ERR_NO_STORAGE_POOL = 49
    shim.VIR_ERR_NO_STORAGE_VOL = 50
    shim.virStorageVol = object
    shim.openReadOnly = fakelibvirt.openAuth
    shim.open = _read_write_refused
    sys.modules.setdefault('libvirt', shim)


_libvirt_from_nova()


def _no_such(code, what):
    error = fakelibvirt.libvirtError('no %s' % what)
    error.err = (code,)
    return error


class Domain:
    """A fakelibvirt domain; no block info (as libvirt for a domain whose
    disks it cannot read): the driver reads the image file."""

    def __init__(self, dom):
        self.dom = dom

    def __getattr__(self, name):
        return getattr(self.dom, name)

    def blockInfo(self, disk, flags=0):
        raise _no_such(fakelibvirt.VIR_ERR_INTERNAL_ERROR, 'block info')


class Connection:
    """A compute's fakelibvirt connection as libvirt answers the agent's
    driver: every domain for flags 0 (fakelibvirt lists none), the mdevs
    for CAP_MDEV, no storage pools (the disks are files under
    instances_path)."""

    def __init__(self, conn):
        self.conn = conn

    def __getattr__(self, name):
        return getattr(self.conn, name)

    def listAllDomains(self, flags=0):
        return [Domain(d) for d in self.conn.listAllDomains(
            flags or (fakelibvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
                      | fakelibvirt.VIR_CONNECT_LIST_DOMAINS_INACTIVE))]

    def listAllDevices(self, flags):
        """fakelibvirt lists no mdev for CAP_MDEV (nova looks them up by
        name); libvirt does."""
        found = list(self.conn.listAllDevices(flags))
        if flags & fakelibvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_MDEV:
            found += [fakelibvirt.NodeDevice(self.conn, xml=dev.XMLDesc(0))
                      for dev in self.conn.mdev_info.devices.values()]
        return found

    def storageVolLookupByPath(self, path):
        raise _no_such(50, 'storage volume')


