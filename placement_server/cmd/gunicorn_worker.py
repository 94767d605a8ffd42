"""gunicorn's threaded worker, as placement-server runs it.

The worker's event loop reads each request whole, head and body, before
one of its threads runs the application: a client that is slow, stalled
mid-request or idle costs a buffer and a file descriptor, never a thread,
so ``--threads`` only sets how many requests a worker runs at once.
While a request is being read:

- its head must arrive within ``--header-timeout`` seconds of its first
  byte (or of the connection), its body within ``--body-timeout`` of the
  head; otherwise 408 and the connection is closed;
- a request line over ``--limit-request-line`` bytes is 414, a body over
  ``--limit-request-body`` 413, a malformed chunk size 400, each answered
  at once without reading further;
- a client that goes away before its request is complete is forgotten.

Requests a client sends without waiting for the answers (pipelined) are
taken one per turn of the event loop, each connection in its turn: one
client's queue never holds the others (nor nests a call per request). A
kept-alive connection whose next request arrived while the loop was busy
is read, not closed at its keep-alive expiry with the request unanswered.

With ``--threads 1`` the event loop runs the application itself, one
request at a time per process, as a sync worker would but with every
request read whole first: no thread pool, no hand-off of each request to
a thread and back (a pipe write, a future, the GIL passed twice). Its
answer is written without blocking the loop: what the client does not
take at once waits in a buffer the loop sends as the socket drains, for
``--body-timeout`` seconds at most.
When such a loop has nothing to do after a write (its own or a sibling
worker's), it brings the resource view up to date before the next
request comes (``placement_server.siblings``, ``catch_up``).

A request read whole that is plain HTTP/1.x, as placement's clients send
them, is answered without gunicorn's parser and response objects
(``plain_http``: the same environ, the same bytes back); anything else
goes through gunicorn's own code.

A request gunicorn cannot parse (a bad request line or header, a
Content-Length that is not a number) is refused, as every placement error
is, with a JSON error document; gunicorn writes an HTML page, and
placement's clients (and upstream's API tests) parse JSON.
"""
import collections
import concurrent.futures
import errno
from functools import partial
import itertools
import json
import selectors
import socket
import time
from typing import Any
import uuid

from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi as gunicorn_wsgi
from gunicorn.workers import gthread

from placement_server import siblings
from placement_server.cmd import plain_http
from placement_server.cmd import request_framing

# Parse errors gunicorn answers with a status other than 400 (or that are
# the application's): left to gunicorn.
_NOT_400 = (http_errors.ConfigurationProblem, http_errors.ExpectationFailed,
            http_errors.UnsupportedTransferCoding, http_errors.LimitRequestLine,
            http_errors.LimitRequestHeaders, http_errors.ForbiddenProxyRequest,
            http_errors.InvalidResponseHeader, http_errors.InvalidResponseHeaderName)
_RECV = 256 * 1024


class Serving:
    """What placement-server sets before the workers fork (its options)."""
    limits = request_framing.Limits(request_line=8190, head=8190 + 100 * 8192 + 4,
                                    body=16 << 20)
    header_timeout = 20.0
    body_timeout = 60.0


def error_document(exc: BaseException | str, status: int = 400,
                   title: str = 'Bad Request') -> bytes:
    """A JSON error answer, as bytes on the wire; the connection closes."""
    detail = str(exc)
    if 'CONTENT-LENGTH' in detail.upper():
        detail = 'content-length header must be an integer'   # upstream's words
    body = json.dumps({'errors': [{
        'status': status, 'title': title, 'detail': detail,
        'request_id': 'req-%s' % uuid.uuid4()}]}).encode()
    head = ('HTTP/1.1 %d %s\r\nConnection: close\r\n'
            'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n'
            % (status, title, len(body)))
    return head.encode('latin1') + body


class _Outbox:
    """The socket an inline request's answer is written to: what the
    client does not take at once is kept, for the event loop to send."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.backlog = bytearray()

    def sendall(self, data: bytes) -> None:
        sent = 0
        if not self.backlog:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                pass
        self.backlog += memoryview(data)[sent:]

    def flush(self) -> None:
        """Sends what the socket takes now (OSError: the client is gone)."""
        try:
            del self.backlog[:self.sock.send(self.backlog)]
        except (BlockingIOError, InterruptedError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def _readable(sock: socket.socket) -> bool:
    """Whether a request (or the client's close) is waiting on ``sock``."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    return True


class Worker(gthread.ThreadWorker):
    alive: bool     # (gunicorn's: whether the worker is still to serve)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = Serving.limits
        self.header_timeout = Serving.header_timeout
        self.body_timeout = Serving.body_timeout
        self.reading: dict[Any, None] = {}     # connections being read, in order
        self.writing: dict[Any, None] = {}     # inline answers being sent
        self.ready: collections.deque[Any] = collections.deque()   # pipelined, to judge
        self.inline = self.cfg.threads == 1
        # gunicorn's settings, read once rather than per request
        self.plain = plain_http.available(self.cfg)
        self.plain_environ = gunicorn_wsgi.base_environ(self.cfg)
        self.plain_environ['wsgi.multithread'] = True     # as gthread says
        self.keepalive = self.cfg.keepalive
        self.field_limits = (self.cfg.limit_request_fields, self.cfg.limit_request_field_size)

    # -- reading requests in the event loop ---------------------------------

    def accept(self, listener: Any) -> None:
        try:
            client, addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = gthread.TConn(self.cfg, client, addr, listener.getsockname())
        self._start_reading(conn, b'')

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        """A kept-alive connection has its next request coming."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._start_reading(conn, b'')

    def _start_reading(self, conn: Any, data: bytes) -> None:
        conn.sock.setblocking(False)
        conn.request = bytearray(data)
        conn.framing = request_framing.Framing()
        conn.continued = False
        conn.plain = False
        conn.timeout = time.monotonic() + self.header_timeout
        self.reading[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._read, conn))
        if data:
            self.ready.append(conn)   # the loop's next turn judges it

    def run(self) -> None:
        inbox = siblings.listen(self.ppid) if self.inline else None
        if inbox is not None:
            self.poller.register(inbox, selectors.EVENT_READ, siblings.heard)
        super().run()

    def _idle(self) -> bool:
        """Whether nothing waits for the loop."""
        return not self.ready and not self.poller.select(0)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """A turn of the event loop: what arrived, then each connection
        whose next request was already here (pipelined) takes its turn.
        Idle after a write, it catches up first."""
        if self.inline and siblings.due() and self._idle():
            siblings.idle(self._idle)
        ready, self.ready = self.ready, collections.deque()
        super().wait_for_and_dispatch_events(0 if ready else timeout)
        for conn in ready:
            if conn in self.reading:    # (not read meanwhile, nor closed)
                self._read(conn, conn.sock, received=True)

    def murder_keepalived(self, force: bool = False) -> None:
        if not force:
            now = time.monotonic()
            # (in the order they expire)
            expired = itertools.takewhile(lambda c: c.timeout <= now, self.keepalived_conns)
            for conn in list(expired):
                if _readable(conn.sock):   # it came while the loop was busy
                    self.on_client_socket_readable(conn, conn.sock)
        super().murder_keepalived(force)

    def _read(self, conn: Any, client: Any, received: bool = False) -> None:
        try:
            self._take(conn, received)
        except Exception:
            # In the event loop: a surprise must cost one connection, not
            # the worker and every connection it holds.
            self.log.exception('Error reading a request from ip=%s', conn.client[0])
            if conn in self.reading:
                self._close(conn)

    def _take(self, conn: Any, received: bool) -> None:
        """Reads what has arrived; answers, or hands the request to a
        thread, once it is judged."""
        if not received:
            try:
                data = conn.sock.recv(_RECV)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b''
            if not data:      # gone before the request was complete
                self._close(conn)
                return
            conn.request += data
        framing = request_framing.judge(conn.request, self.limits, conn.framing)
        if framing.refusal is not None:
            refusal = framing.refusal
            self.log.warning('Refused request from ip=%s: %s %s', conn.client[0],
                             refusal.status, refusal.detail)
            self._answer_and_close(conn, error_document(refusal.detail, refusal.status,
                                                        refusal.title))
            return
        if framing.head_end is not None and conn.framing.head_end is None:
            conn.timeout = time.monotonic() + self.body_timeout
        conn.framing = framing
        if framing.expects_continue and not conn.continued:
            self._send(conn, b'HTTP/1.1 100 Continue\r\n\r\n')
            conn.continued = True
        if framing.end is not None:
            if conn.continued:   # answered: gunicorn must not send another
                conn.request[:framing.head_end] = request_framing.without_expect(
                    bytes(conn.request[:framing.head_end]))
            self.poller.unregister(conn.sock)
            del self.reading[conn]
            if self.inline:
                self._run_inline(conn)
            else:
                self.enqueue_req(conn)

    def _run_inline(self, conn: Any) -> None:
        """Runs the application here, in the event loop; its answer is
        sent as the client takes it."""
        conn.outbox = None
        keepalive = self.handle(conn)
        if conn.outbox is None or not conn.outbox.backlog:
            self._after_answer(conn, keepalive)
            return
        conn.keepalive = keepalive
        conn.timeout = time.monotonic() + self.body_timeout
        self.writing[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._write, conn))

    def _write(self, conn: Any, client: Any) -> None:
        try:
            conn.outbox.flush()
        except OSError:
            conn.outbox.backlog.clear()
            conn.keepalive = False
        if not conn.outbox.backlog:
            self.poller.unregister(conn.sock)
            del self.writing[conn]
            self._after_answer(conn, conn.keepalive)

    def _after_answer(self, conn: Any, keepalive: bool) -> None:
        """Keep-alive or close, decided where a thread's answer is
        (finish_request takes the outcome a thread's future would give)."""
        if conn.plain:
            self._finish_plain(conn, keepalive)
            return
        future: Any = concurrent.futures.Future()
        future.set_result(keepalive)
        self.finish_request(conn, future)

    def _send(self, conn: Any, data: bytes) -> None:
        try:
            conn.sock.send(data)
        except OSError:
            pass

    def _answer_and_close(self, conn: Any, answer: bytes) -> None:
        self._send(conn, answer)
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._close(conn)

    def _close(self, conn: Any) -> None:
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        self.reading.pop(conn, None)
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c in self.writing if c.timeout <= now]:
            self.writing.pop(conn)
            self._close(conn)
        for conn in [c for c in self.reading if c.timeout <= now]:
            if self.inline and conn in self.reading:
                # what arrived while the loop ran an application counts
                self._read(conn, conn.sock)
            if conn not in self.reading or conn.timeout > now:
                continue
            if conn.request:
                self._answer_and_close(conn, error_document(
                    'The request did not arrive in time.', 408, 'Request Timeout'))
            else:
                self._close(conn)

    # -- running the application in a thread --------------------------------

    def handle(self, conn: Any) -> Any:
        conn.data_ready = True     # read whole already: no waiting here
        request = bytes(conn.request)
        conn.request = bytearray()
        plain = None
        if self.plain and not conn.continued and isinstance(conn.server, tuple):
            framing = conn.framing
            plain = plain_http.parse(request, framing.head_end, framing.end, *self.field_limits)
        conn.plain = plain is not None
        if plain is not None:
            conn.pending = request[conn.framing.end:]   # pipelined after it
            return self._serve_plain(conn, plain)
        try:
            conn.init()
        except Exception as e:
            self.handle_error(None, conn.sock, conn.client, e)
            return False
        conn.parser.unreader.unread(request)
        return super().handle(conn)

    def _serve_plain(self, conn: Any, request: plain_http.Request) -> bool:
        """Runs the application for a plain request and sends its answer
        (gthread's handle_request, without gunicorn's parser and response
        objects); whether the connection stays open."""
        self.nr += 1
        must_close = False
        if self.nr >= self.max_requests:
            if self.alive:
                self.log.info('Autorestarting worker after current request.')
                self.alive = False
            must_close = True
        if (not self.alive or not self.keepalive
                or len(self.keepalived_conns) >= self.max_keepalived):
            must_close = True
        response = plain_http.Response(request)
        try:
            answer = self.wsgi(plain_http.environ(self.plain_environ, request, conn.sock,
                                                  conn.client, conn.server),
                               response.start_response)
            try:
                for data in answer:
                    response.write(data)
            finally:
                if hasattr(answer, 'close'):
                    answer.close()
            data, keepalive = response.encode(must_close)
        except Exception as e:
            self.handle_error(None, conn.sock, conn.client, e)
            return False
        try:
            if self.inline:
                conn.outbox = _Outbox(conn.sock)
                conn.outbox.sendall(data)
            else:
                conn.sock.settimeout(self.body_timeout)
                conn.sock.sendall(data)
        except OSError:
            return False
        return keepalive

    def handle_request(self, req: Any, conn: Any) -> Any:
        # Only the answer is written from here: bounded, so that a client
        # that does not read it cannot hold the thread; inline, never
        # blocking: the loop sends what the client did not take yet.
        if not self.inline:
            conn.sock.settimeout(self.body_timeout)
            return super().handle_request(req, conn)
        sock = conn.sock
        sock.settimeout(0.0)
        conn.sock = conn.outbox = _Outbox(sock)
        try:
            return super().handle_request(req, conn)
        finally:
            conn.sock = sock

    def finish_request(self, conn: Any, fs: Any) -> None:
        try:
            keepalive = fs.result() if not fs.cancelled() else False
        except Exception:
            keepalive = False
        if conn.plain:
            self._finish_plain(conn, keepalive)
            return
        if keepalive and conn.parser.unreader.buf.getvalue():
            # Pipelined: the next request has begun; read the rest of it here.
            self._start_reading(conn, conn.parser.unreader.take_buffered())
            return
        super().finish_request(conn, fs)

    def _finish_plain(self, conn: Any, keepalive: bool) -> None:
        """After a plain request: its successor if already here, else
        kept alive as gthread keeps its connections, else closed."""
        pending, conn.pending = conn.pending, b''
        if keepalive and pending:
            self._start_reading(conn, pending)
            return
        if not keepalive:
            self.nr_conns -= 1
            # Nothing the client sent is left unread, unless it pipelined
            # more: only then must the close wait for it (RFC 9112 9.6).
            conn.close(graceful=bool(pending))
            return
        conn.sock.setblocking(False)
        conn.set_timeout()
        if not self.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + gthread.STOP_KEEPALIVE_LINGER)
        self.keepalived_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ,
                             partial(self.on_client_socket_readable, conn))

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if not isinstance(exc, http_errors.ParseException) or isinstance(exc, _NOT_400):
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning('Invalid request from ip=%s: %s', (addr or ('',))[0], exc)
        try:
            client.sendall(error_document(exc))
        except OSError:
            self.log.debug('Failed to send error message.')
