"""The same request sent to our server (in process) and to upstream
placement (a real process over HTTP), for the tests that compare them.

Both senders answer (status, headers, JSON body or None). A body given as
a str goes on the wire as is (for malformed JSON); a version of None sends
no OpenStack-API-Version header.
"""
import json
import urllib.parse

import requests


def ours(api, method, path, version, body=None, headers=None):
    if isinstance(body, str):
        resp = api.request(method, path, version=version, raw=body, headers=headers)
    else:
        resp = api.request(method, path, body, version=version, headers=headers)
    return resp.status_int, resp.headers, (resp.json if resp.body else None)


def upstream(base, method, path, version, body=None, headers=None, session=requests):
    sent = dict(headers or {}, **{'X-Auth-Token': 'admin'})
    if version:
        sent['OpenStack-API-Version'] = 'placement %s' % version
    data = None
    if body is not None:
        sent['Content-Type'] = 'application/json'
        data = body if isinstance(body, str) else json.dumps(body)
    resp = session.request(method, base + path, headers=sent, data=data, timeout=30)
    return resp.status_code, resp.headers, (resp.json() if resp.content else None)


def specific_code(body):
    """The error's code, or None for the default one: un-coded errors
    differ in wording only, so only specific codes are compared."""
    code = body['errors'][0].get('code')
    if code and not code.startswith('placement.undefined_code'):
        return code
    return None


def caching_headers(headers):
    """The headers clients rely on: Location's path, and whether
    Last-Modified and Cache-Control are there."""
    location = headers.get('Location')
    return (urllib.parse.urlparse(location).path if location else None,
            'Last-Modified' in headers, headers.get('Cache-Control'))


def agree(api, base, script):
    """Each (method, path, version, body) sent to both servers (the
    reshaper as a service); after checking upstream answered the same,
    ours's answers as (status, body), error request ids removed."""
    answers = []
    for method, path, version, body in script:
        headers = {'X-Roles': 'admin,service'} if path == '/reshaper' else None
        status, _, got = ours(api, method, path, version, body, headers)
        want_status, _, want = upstream(base, method, path, version, body, headers)
        for doc in (got, want):
            for error in (doc or {}).get('errors', ()):
                error.pop('request_id')
        assert (status, got) == (want_status, want), (method, path, version, body)
        answers.append((status, got))
    return answers
