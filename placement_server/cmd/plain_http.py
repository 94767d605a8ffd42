"""The worker's short path for plain HTTP/1.x requests.

Once the event loop has a request whole (placement_server.cmd.
request_framing), gunicorn would parse it again through its socket
reader, build a response object per request and format the answer a
header at a time: about a third of what the worker spends on a request
the application answers at once (docs/bench/placement-server.md,
"Session 19"). A request in the plain subset of HTTP/1.x that placement's
clients send is served here instead, with the same environ, status line
and headers gunicorn would give it:

- origin-form target of printable ASCII (no fragment), method of 3 to 20
  capital letters, HTTP/1.0 or 1.1;
- ``Name: value`` header lines, names of token characters without ``_``,
  values of printable ASCII and tabs, within gunicorn's count and size
  limits, at most one Content-Length, of digits;
- none of the headers that make gunicorn do more: Transfer-Encoding,
  Expect, Upgrade, HTTP2-Settings, Forwarded and X-Forwarded-*.

Anything else (and any worker whose gunicorn settings add something per
request: TLS, an access log, request hooks, the PROXY protocol, h2c, a
SCRIPT_NAME in the environment) takes gunicorn's own path, unchanged.
"""
import email.utils
import io
import os
import re
import time
from typing import Any
from typing import Callable

import gunicorn
from gunicorn import util as gunicorn_util
from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi as gunicorn_wsgi

_REQUEST_LINE = re.compile(rb'([A-Z]{3,20}) (/(?!/)[!-"$-~]*|/) HTTP/1\.([01])')
_HEADER_LINE = re.compile(rb"([!#$%&'*+.^`|~0-9A-Za-z-]+):[ \t]*([\t -~]*?)[ \t]*")
# Headers after which gunicorn does more than this path does.
_GUNICORNS = (b'TRANSFER-ENCODING', b'EXPECT', b'UPGRADE', b'HTTP2-SETTINGS', b'FORWARDED')
_HOP_BY_HOP = frozenset(('connection', 'keep-alive', 'proxy-authenticate',
                         'proxy-authorization', 'te', 'trailers', 'transfer-encoding',
                         'upgrade'))


def available(cfg: Any) -> bool:
    """Whether this worker's settings leave nothing per request that only
    gunicorn's path does."""
    settings = cfg.settings
    return (getattr(cfg, 'protocol', 'http') == 'http' and not cfg.is_ssl
            and cfg.proxy_protocol in ('off', False, None)
            and cfg.http2_cleartext in ('off', False, None)
            and not (cfg.accesslog or cfg.logconfig or cfg.logconfig_dict
                     or cfg.logconfig_json or cfg.syslog)
            and cfg.pre_request is settings['pre_request'].default
            and cfg.post_request is settings['post_request'].default
            and not os.environ.get('SCRIPT_NAME'))


class Request:
    """A request of the plain subset, parsed from its bytes."""

    __slots__ = ('method', 'target', 'minor', 'headers', 'body', 'close')

    def __init__(self, method: str, target: str, minor: int,
                 headers: list[tuple[str, str]], body: bytes, close: bool) -> None:
        self.method = method
        self.target = target
        self.minor = minor              # HTTP/1.<minor>
        self.headers = headers          # (NAME, value), names in capitals
        self.body = body
        self.close = close              # the client asked to close after it


def parse(data: bytes, head_end: int, end: int, field_count: int,
          field_size: int) -> Request | None:
    """``data[:end]``, a whole request whose head ends at ``head_end``, if
    it is in the plain subset; None otherwise."""
    lines = data[:head_end - 4].split(b'\r\n')
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None or len(lines) - 1 > field_count:
        return None
    headers = []
    close: bool | None = None
    connection_seen = length_seen = False
    for line in lines[1:]:
        header = _HEADER_LINE.fullmatch(line)
        if header is None or len(line) > field_size:
            return None
        name = header.group(1).upper()
        if name in _GUNICORNS or name.startswith(b'X-FORWARDED-'):
            return None
        value = header.group(2).decode('ascii')
        if name == b'CONTENT-LENGTH' and (not value.isdigit() or length_seen):
            return None        # gunicorn's to refuse
        length_seen = length_seen or name == b'CONTENT-LENGTH'
        if name == b'CONNECTION' and not connection_seen:
            # gunicorn reads the first Connection header only
            connection_seen = True
            close = {'close': True, 'keep-alive': False}.get(value.lower())
        headers.append((name.decode('ascii'), value))
    minor = int(match.group(3))
    return Request(match.group(1).decode('ascii'), match.group(2).decode('ascii'), minor,
                   headers, data[head_end:end], close if close is not None else minor == 0)


def environ(base: dict[str, Any], request: Request, sock: Any, client: Any,
            server: tuple[str, int]) -> dict[str, Any]:
    """The WSGI environ gunicorn would give ``request`` (``base``: its
    per-worker part)."""
    path, _, query = request.target.partition('?')
    env = dict(base)
    env.update({
        'wsgi.input': io.BytesIO(request.body),
        'gunicorn.socket': sock,
        'REQUEST_METHOD': request.method,
        'QUERY_STRING': query,
        'RAW_URI': request.target,
        'SERVER_PROTOCOL': 'HTTP/1.%d' % request.minor,
        'wsgi.url_scheme': 'http',
        'REMOTE_ADDR': client[0],
        'REMOTE_PORT': str(client[1]),
        'SERVER_NAME': server[0],
        'SERVER_PORT': str(server[1]),
        'PATH_INFO': gunicorn_util.unquote_to_wsgi_str(path),
        'SCRIPT_NAME': '',
    })
    repeated: dict[str, list[str]] = {}
    for name, value in request.headers:
        if name == 'CONTENT-TYPE':
            env['CONTENT_TYPE'] = value
            continue
        if name == 'CONTENT-LENGTH':
            env['CONTENT_LENGTH'] = value
            continue
        key = 'HTTP_' + name.replace('-', '_')
        if key in env:
            repeated.setdefault(key, [env[key]]).append(value)
        else:
            env[key] = value
    for key, values in repeated.items():
        env[key] = ','.join(values)
    return env


_date = (0, '')


def _http_date() -> str:
    """The Date header's value, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, email.utils.formatdate(now, usegmt=True))
    return _date[1]


class Response:
    """The application's answer, framed as gunicorn frames it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.status: str | None = None
        self.code: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.length: int | None = None
        self.body: list[bytes] = []

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info:
            exc_info = None      # nothing sent yet: the new status stands
        elif self.status is not None:
            raise AssertionError('Response headers already set!')
        if not isinstance(status, str) or not gunicorn_wsgi.STATUS_RE.fullmatch(status):
            raise ValueError('Invalid status %r' % status)
        self.status = status
        try:
            self.code = int(status.split()[0])
        except ValueError:
            self.code = None
        self.headers = []
        self.length = None
        for name, value in headers:
            if not isinstance(name, str) or not gunicorn_wsgi.TOKEN_RE.fullmatch(name):
                raise http_errors.InvalidResponseHeaderName('%r' % name)
            if not isinstance(value, str) or not gunicorn_wsgi.HEADER_VALUE_RE.fullmatch(value):
                raise http_errors.InvalidResponseHeader('%r' % name)
            value = value.strip(' \t')
            lname = name.lower()
            if lname == 'content-length':
                self.length = int(value)
            elif lname in _HOP_BY_HOP:
                continue
            self.headers.append((name, value))
        return self.write

    def write(self, data: bytes) -> None:
        if not isinstance(data, bytes):
            raise TypeError('%r is not a byte' % data)
        self.body.append(data)

    def encode(self, must_close: bool) -> tuple[bytes, bool]:
        """The answer's bytes, and whether the connection stays open."""
        code = self.code
        omits_body = (self.request.method == 'HEAD' or code in (204, 304)
                      or code is not None and 100 <= code < 200)
        headers = self.headers
        length = self.length
        if omits_body and (code == 204 or code is not None and 100 <= code < 200):
            headers = [(k, v) for k, v in headers if k.lower() != 'content-length']
            length = None
        chunked = length is None and self.request.minor == 1 and not omits_body
        close = (must_close or self.request.close
                 or not (length is not None or chunked or omits_body))
        head = ['HTTP/1.%d %s\r\nServer: %s\r\nDate: %s\r\nConnection: %s\r\n' % (
            self.request.minor, self.status, gunicorn.SERVER, _http_date(),
            'close' if close else 'keep-alive')]
        if chunked:
            head.append('Transfer-Encoding: chunked\r\n')
        head.extend('%s: %s\r\n' % kv for kv in headers)
        head.append('\r\n')
        out = [''.join(head).encode('latin-1')]
        if chunked:
            # a chunk per write, as gunicorn sends them; empty ones end nothing
            out.extend(b'%X\r\n%s\r\n' % (len(b), b) for b in self.body if b)
            out.append(b'0\r\n\r\n')
        elif not omits_body:
            out.append(b''.join(self.body)[:length])   # never more than it said
        return b''.join(out), not close
