"""A real libvirtd with the QEMU driver, started by the test itself.

It runs as root in a private mount namespace whose /etc/libvirt,
/run/libvirt, /var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt
are directories of the test's own, so its configuration, state, logs and
guests' files live in a temporary directory and nothing of the machine's
changes. Clients reach it through its socket there
(qemu:///system?socket=...). Guests are TCG (<domain type='qemu'>): no KVM
needed. Everything it started is stopped by PID.

Two details of a bare machine (no libvirt-daemon-system package): the
QEMU driver looks up its default user 'libvirt-qemu' before reading
qemu.conf, so the namespace sees a passwd/group with that user; and there
is no virtlogd, so guests log to files (stdio_handler = "file").
"""
import os
import signal
import socket
import subprocess
import time

import libvirt
import pytest

# libvirt prints every error on stderr; the fixture handles them itself
libvirt.registerErrorHandler(lambda _ctx, _err: None, None)

LIBVIRTD_CONF = '''\
unix_sock_dir = "{sock}"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
'''

QEMU_CONF = '''\
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
stdio_handler = "file"
'''

# directory under the test's root -> where libvirtd looks for it
MOUNTS = (('etc', '/etc/libvirt'), ('run', '/run/libvirt'),
          ('lib', '/var/lib/libvirt'), ('log', '/var/log/libvirt'),
          ('cache', '/var/cache/libvirt'))

# Its own pid file: the default, /run/libvirtd.pid, is outside the bound
# directories, and two test modules' daemons (xdist workers) would fight
# over it.
START = '''\
set -e
{binds}
mount --bind {root}/passwd /etc/passwd
mount --bind {root}/group /etc/group
exec libvirtd --config /etc/libvirt/libvirtd.conf --pid-file {root}/libvirtd.pid
'''


def _with_line(source, line):
    """The text of ``source`` with one more line."""
    with open(source) as f:
        text = f.read()
    return (text if text.endswith('\n') else text + '\n') + line + '\n'


class Libvirtd:
    """libvirtd of one test module; ``uri`` reaches it."""

    def __init__(self, root):
        self.root = str(root)
        self.sock = os.path.join(self.root, 'sock')
        self.uri = 'qemu:///system?socket=%s/libvirt-sock' % self.sock
        self.proc = None
        self._made = []            # mount points this fixture created

    def log(self):
        path = os.path.join(self.root, 'log', 'libvirtd.log')
        try:
            with open(path, errors='replace') as f:
                return f.read()[-4000:]
        except OSError:
            return ''

    def _write(self, rel, text):
        with open(os.path.join(self.root, rel), 'w') as f:
            f.write(text)

    def start(self, timeout=30):
        if os.geteuid() != 0:
            raise RuntimeError('the real-libvirtd tests start libvirtd as '
                               'root (CI runs them as root)')
        os.makedirs(self.sock, exist_ok=True)
        for rel, target in MOUNTS:
            os.makedirs(os.path.join(self.root, rel), exist_ok=True)
            if not os.path.isdir(target):     # a mount point must exist
                os.makedirs(target)
                self._made.append(target)
        self._write('etc/libvirtd.conf', LIBVIRTD_CONF.format(sock=self.sock))
        self._write('etc/qemu.conf', QEMU_CONF)
        for name, line in (('passwd', 'libvirt-qemu:x:64055:64055::/:/bin/false'),
                           ('group', 'libvirt-qemu:x:64055:')):
            self._write(name, _with_line('/etc/' + name, line))
        binds = '\n'.join('mount --bind %s/%s %s' % (self.root, rel, target)
                          for rel, target in MOUNTS)
        script = START.format(binds=binds, root=self.root)
        with open(os.path.join(self.root, 'libvirtd.out'), 'ab') as out:
            # unshare and sh both exec: self.proc.pid is libvirtd's
            self.proc = subprocess.Popen(
                ['unshare', '--mount', '--propagation', 'private',
                 'sh', '-c', script],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('libvirtd exited %s: %s' % (
                    self.proc.returncode, self.log()))
            try:
                libvirt.open(self.uri).close()
                return self
            except libvirt.libvirtError:
                time.sleep(0.1)
        raise RuntimeError('libvirtd did not answer in %ss: %s'
                           % (timeout, self.log()))

    def connect(self):
        return libvirt.open(self.uri)

    def stop(self):
        """Destroy the guests, stop libvirtd, then any guest left (by the
        PID files libvirtd keeps), and remove the mount points made."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                conn = self.connect()
                for dom in conn.listAllDomains(
                        libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                    dom.destroy()
                conn.close()
            except libvirt.libvirtError:
                pass              # the PID files below still find them
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        qemu_run = os.path.join(self.root, 'run', 'qemu')
        for name in os.listdir(qemu_run) if os.path.isdir(qemu_run) else []:
            if name.endswith('.pid'):
                _kill_pid_file(os.path.join(qemu_run, name))
        for target in reversed(self._made):
            try:
                os.rmdir(target)
            except OSError:
                pass


def _kill_pid_file(path):
    try:
        with open(path) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


class NbdServer:
    """qemu-nbd exporting one raw file: a network disk for guests."""

    def __init__(self, path, port):
        self.path, self.port = str(path), port
        self.proc = None

    def start(self, timeout=10):
        self.proc = subprocess.Popen(
            ['qemu-nbd', '--persistent', '--shared=4', '-f', 'raw',
             '-b', '127.0.0.1', '-p', str(self.port), '-x', 'volume',
             self.path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(('127.0.0.1', self.port), 1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError('qemu-nbd did not listen on %d' % self.port)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope='module')
def hypervisor(tmp_path_factory):
    """A running libvirtd for the test module."""
    daemon = Libvirtd(tmp_path_factory.mktemp('libvirtd')).start()
    yield daemon
    daemon.stop()
