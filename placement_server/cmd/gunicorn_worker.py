"""gunicorn's sync worker, answering malformed HTTP as placement answers
every error: a JSON error document.

gunicorn refuses some requests before the application sees them (a
Content-Length that is not a number, a bad request line or header) and
writes an HTML page for them; placement's clients parse JSON errors.
"""
import json
import uuid

from gunicorn import util as gunicorn_util
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


class Worker(sync.SyncWorker):

    def init_process(self):
        # gunicorn's error path calls util.write_error: in this worker process
        # it writes JSON instead.
        gunicorn_util.write_error = write_error
        super().init_process()
