"""A WSGI app that answers and does nothing else: the floor of a
benchmark, what the client, the serving process and the machine cost when
the server's own work is nil.

GET / says which versions it "serves" (placeload checks); a write gets its
own body back, but for a claim (/allocations), answered 204 as placement
answers it. Any other GET answers what was recorded for its path and query
string: a request carrying ``X-Floor-Record`` stores its body as that
answer (``record``), so that the floor of a list or a candidates query
sends the very bytes ours sent. Recorded answers are files in the server's
working directory, which every worker shares.
"""
import hashlib
import json
import os

_ROOT = json.dumps({'versions': [{'id': 'v1.0', 'min_version': '1.0',
                                  'max_version': '1.39', 'status': 'CURRENT',
                                  'links': []}]}).encode()
RECORD_HEADER = 'X-Floor-Record'
_ANSWERS = 'floor-answers'
_kept = {}   # a worker's recorded answers, read once


def _file(environ):
    key = '%s?%s' % (environ.get('PATH_INFO', '/'), environ.get('QUERY_STRING', ''))
    return os.path.join(_ANSWERS, hashlib.sha1(key.encode()).hexdigest())


def _recorded(environ):
    path = _file(environ)
    if path not in _kept:
        try:
            with open(path, 'rb') as f:
                _kept[path] = f.read()
        except FileNotFoundError:
            return None
    return _kept[path]


def application(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(length) if length else b''
    path = environ.get('PATH_INFO', '/')
    status, out = '200 OK', body or b'{}'
    if 'HTTP_' + RECORD_HEADER.upper().replace('-', '_') in environ:
        os.makedirs(_ANSWERS, exist_ok=True)
        with open(_file(environ), 'wb') as f:
            f.write(body)
        status, out = '204 No Content', b''
    elif path in ('', '/'):
        out = _ROOT
    elif environ.get('REQUEST_METHOD') == 'GET':
        out = _recorded(environ)
        if out is None:
            status, out = '404 Not Found', b'{"errors": [{"detail": "not recorded"}]}'
    elif path.startswith('/allocations'):
        status, out = '204 No Content', b''
    headers = [('Content-Length', str(len(out)))]
    if out:
        headers.insert(0, ('Content-Type', 'application/json'))
    start_response(status, headers)
    return [out]
