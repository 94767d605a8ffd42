"""A WSGI app that answers placeload's calls 200 and does nothing else:
bench/creation.py's floor, what the client, gunicorn and the machine cost
when the server's own work is nil. GET / says which versions it "serves"
(placeload checks); a write gets its own body back."""
import json

_ROOT = json.dumps({'versions': [{'id': 'v1.0', 'min_version': '1.0',
                                  'max_version': '1.39', 'status': 'CURRENT',
                                  'links': []}]}).encode()


def application(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(length) if length else b''
    out = _ROOT if environ.get('PATH_INFO', '/') in ('', '/') else body or b'{}'
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(out)))])
    return [out]
