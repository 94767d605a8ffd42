"""The worker's event loop at a kept-alive connection's expiry
(placement_server/cmd/gunicorn_worker.py), on socket pairs."""
import collections
import selectors
import socket
import time

from placement_server.cmd import gunicorn_worker


class _Conn:
    """What the loop keeps of a kept-alive connection."""

    def __init__(self, sock):
        self.sock = sock
        self.timeout = time.monotonic() - 1     # its keep-alive has expired
        self.closed = False

    def close(self):
        self.closed = True
        self.sock.close()


def _loop():
    """A worker's loop state, without a process around it."""
    worker = object.__new__(gunicorn_worker.Worker)
    worker.poller = selectors.DefaultSelector()
    worker.keepalived_conns = collections.deque()
    worker.reading, worker.ready = {}, collections.deque()
    worker.nr_conns = 0
    worker.header_timeout = 20.0
    return worker


def _kept_alive(worker):
    ours, theirs = socket.socketpair()
    conn = _Conn(ours)
    worker.keepalived_conns.append(conn)
    worker.poller.register(ours, selectors.EVENT_READ, None)
    worker.nr_conns += 1
    return conn, theirs


def test_a_request_that_came_at_the_keep_alive_expiry_is_read_not_cut_off():
    worker = _loop()
    idle, idle_client = _kept_alive(worker)
    asked, client = _kept_alive(worker)
    # the client sent while the loop was busy running another request
    client.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    worker.murder_keepalived()
    assert idle.closed and idle_client.recv(10) == b''
    assert not asked.closed and asked in worker.reading
    assert not worker.keepalived_conns and worker.nr_conns == 1
    for sock in (idle_client, client, asked.sock):
        sock.close()


def test_a_stop_still_closes_every_kept_alive_connection():
    worker = _loop()
    asked, client = _kept_alive(worker)
    client.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    worker.murder_keepalived(force=True)
    assert asked.closed and not worker.reading
    client.close()
