"""gunicorn's sync worker, as placement-server runs it.

Two departures from gunicorn's own:

- Malformed HTTP is answered as placement answers every error, with a JSON
  error document. gunicorn refuses some requests before the application
  sees them (a Content-Length that is not a number, a bad request line or
  header) and writes an HTML page for them; placement's clients parse JSON
  errors.
- A connection whose request was read to its end is closed at once after
  the response. gunicorn half-closes and then waits, up to two seconds,
  for the client to close its side, so that request bytes still unread
  cannot make the kernel reset the connection under the response. With
  nothing unread there is nothing to protect, and a sync worker waiting on
  a busy client serves nobody in the meantime. Anything else (a body the
  application did not read, bytes already waiting, an error) takes
  gunicorn's way.
"""
import json
import socket
import uuid

from gunicorn import util as gunicorn_util
from gunicorn.http import body as gunicorn_body
from gunicorn.workers import sync


def write_error(sock, status_int, reason, mesg):
    if 'CONTENT-LENGTH' in mesg.upper():
        mesg = 'content-length header must be an integer'   # upstream's words
    body = json.dumps({'errors': [{
        'status': status_int, 'title': reason, 'detail': mesg,
        'request_id': 'req-%s' % uuid.uuid4()}]}).encode()
    head = ('HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n'
            'Content-Length: %d\r\n\r\n' % (status_int, reason, len(body))).encode('latin1')
    gunicorn_util.write_nonblock(sock, head + body)


def read_to_the_end(req):
    """The request's body was read whole (or it had none)."""
    body = req.body
    reader = getattr(body, 'reader', None)
    return (isinstance(reader, gunicorn_body.LengthReader) and reader.length == 0
            and not body.buf.tell())


def nothing_waiting(sock):
    """No bytes from the client wait unread on ``sock``."""
    try:
        return not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False


class Worker(sync.SyncWorker):

    def init_process(self):
        # gunicorn's handlers look these up in gunicorn.util when they run:
        # in this worker process they are ours.
        gunicorn_util.write_error = write_error
        graceful = gunicorn_util.close_graceful

        def close(sock, *args, **kwargs):
            if self.request_read and nothing_waiting(sock):
                sock.close()
            else:
                graceful(sock, *args, **kwargs)

        self.request_read = False
        gunicorn_util.close_graceful = close
        super().init_process()

    def handle_request(self, listener, req, client, addr):
        self.request_read = False
        super().handle_request(listener, req, client, addr)
        self.request_read = read_to_the_end(req)
