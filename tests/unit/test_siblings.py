"""The workers' announcements of writes (``placement_server.siblings``),
on real unix sockets."""
import os
import shutil
import socket
import tempfile

import pytest

from placement_server import siblings


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(siblings, '_inbox', None)
    monkeypatch.setattr(siblings, '_due', False)
    monkeypatch.setattr(siblings, '_idle_work', [])
    monkeypatch.setattr(siblings, '_siblings', ([], -1))


@pytest.fixture
def inbox(fresh, monkeypatch):
    # (a socket's path holds 107 bytes at most: not under pytest's tmp_path)
    directory = tempfile.mkdtemp(prefix='sib', dir='/tmp')
    monkeypatch.setattr(tempfile, 'tempdir', directory)
    own = siblings.listen(os.getpid())
    assert own is not None
    yield own
    own.close()
    shutil.rmtree(directory)


def test_a_worker_that_cannot_listen_still_works(fresh, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path / ('x' * 100)))
    assert siblings.listen(os.getpid()) is None
    assert 'workers will not tell each other of writes' in caplog.text
    assert 'AF_UNIX path too long' in caplog.text
    siblings.announce()            # told to nobody, due here
    assert siblings.due()


def _sibling(directory, name):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(os.path.join(directory, name))
    sock.setblocking(False)
    return sock


def test_a_write_is_told_to_every_sibling_and_a_gone_one_forgotten(inbox):
    directory = os.path.dirname(inbox.getsockname())
    assert oct(os.stat(directory).st_mode & 0o777) == '0o700'
    alive = [_sibling(directory, str(n)) for n in (1, 2)]
    gone = _sibling(directory, '3')
    gone.close()                      # a worker killed: its path stays
    assert not siblings.due()
    siblings.announce()
    assert siblings.due()
    assert [s.recv(8) for s in alive] == [b'.', b'.']
    assert sorted(os.listdir(directory)) == sorted(['1', '2', str(os.getpid())])
    for s in alive:
        s.close()


def test_what_is_heard_is_due_and_the_idle_work_done_once(inbox):
    done = []
    siblings.when_idle(lambda still_idle: done.append(still_idle()))
    sibling = _sibling(os.path.dirname(inbox.getsockname()), '1')
    for _ in range(3):
        sibling.sendto(b'.', inbox.getsockname())
    siblings.heard(inbox)
    with pytest.raises(BlockingIOError):
        inbox.recv(8)                 # drained
    assert siblings.due()
    siblings.idle(lambda: True)
    assert (done, siblings.due()) == ([True], False)
    sibling.close()


def test_failing_idle_work_is_logged_not_raised(inbox, caplog):
    def broken(still_idle):
        raise RuntimeError('no database')
    siblings.when_idle(broken)
    siblings.announce()
    siblings.idle(lambda: True)
    assert 'work while idle failed: no database' in caplog.text
    assert not siblings.due()


def test_the_siblings_are_listed_again_only_when_one_came_or_went(inbox, monkeypatch):
    directory = os.path.dirname(inbox.getsockname())
    first = _sibling(directory, '1')
    siblings.announce()
    assert siblings._siblings[1] == -1     # (changed just now: listed each time)
    settled = os.stat(directory).st_mtime_ns + siblings._SETTLED_NS + 1
    monkeypatch.setattr(siblings.time, 'time_ns', lambda: settled)
    siblings.announce()
    listings = []
    listed = siblings._listed
    monkeypatch.setattr(siblings, '_listed', lambda own: listings.append(own) or listed(own))
    siblings.announce()
    assert not listings
    later = _sibling(directory, '2')    # started since
    siblings.announce()
    assert len(listings) == 1
    assert b''.join(first.recv(8) for _ in range(4)) == b'....'
    assert later.recv(8) == b'.'
    for s in (first, later):
        s.close()
