"""gunicorn's threaded worker, as placement-server runs it.

One departure: a request gunicorn cannot parse (a bad request line or
header, a Content-Length that is not a number) is refused, as every
placement error is, with a JSON error document; gunicorn writes an HTML
page, and placement's clients (and upstream's API tests) parse JSON.
Everything else, other statuses included, is gunicorn's own.
"""
import json
from typing import Any
import uuid

from gunicorn.http import errors as http_errors
from gunicorn.workers import gthread

# Parse errors gunicorn answers with a status other than 400 (or that are
# the application's): left to gunicorn.
_NOT_400 = (http_errors.ConfigurationProblem, http_errors.ExpectationFailed,
            http_errors.UnsupportedTransferCoding, http_errors.LimitRequestLine,
            http_errors.LimitRequestHeaders, http_errors.ForbiddenProxyRequest,
            http_errors.InvalidResponseHeader, http_errors.InvalidResponseHeaderName)


def error_document(exc: BaseException) -> bytes:
    """The 400 answer to malformed HTTP, as bytes on the wire."""
    detail = str(exc)
    if 'CONTENT-LENGTH' in detail.upper():
        detail = 'content-length header must be an integer'   # upstream's words
    body = json.dumps({'errors': [{
        'status': 400, 'title': 'Bad Request', 'detail': detail,
        'request_id': 'req-%s' % uuid.uuid4()}]}).encode()
    head = ('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n'
            'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body))
    return head.encode('latin1') + body


class Worker(gthread.ThreadWorker):

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if not isinstance(exc, http_errors.ParseException) or isinstance(exc, _NOT_400):
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning('Invalid request from ip=%s: %s', (addr or ('',))[0], exc)
        try:
            client.sendall(error_document(exc))
        except OSError:
            self.log.debug('Failed to send error message.')
