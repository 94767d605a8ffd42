"""A placement under test for the report client, whoever serves it.

``Placement`` hands out keystoneauth1 Adapters onto one placement (ours in
process through PlacementDirect, or upstream as a real process) and counts,
below the report client, every request its clients send: the proof that a
steady host costs no HTTP is read from the wire, not from the client's own
counters.
"""
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from tracker.report_client import ReportClient

ADMIN = 'admin'


def http_adapter(url, token=ADMIN):
    """An Adapter onto placement at ``url`` with a noauth2 token.

    Upstream's default policy lets only the ``service`` role reshape: the
    tracker's placement credentials carry it, and so do the tests'.
    """
    session = ks_session.Session(auth=token_endpoint.Token(url, token))
    return ks_adapter.Adapter(session, service_type='placement', raise_exc=False,
                              additional_headers={'X-Roles': 'admin,service'})


class Placement:

    def __init__(self, make_adapter, name):
        self.make_adapter = make_adapter
        self.name = name
        self.sent = []            # (method, path) of every counted request

    def adapter(self, counted=True):
        adapter = self.make_adapter()
        if counted:
            adapter.session.session.hooks['response'].append(self._record)
        return adapter

    def _record(self, response, *args, **kwargs):
        url = urllib.parse.urlparse(response.request.url)
        self.sent.append((response.request.method, url.path))
        return response

    def client(self, **kwargs):
        return ReportClient(adapter=self.adapter(), **kwargs)

    def other_writer(self):
        """A plain adapter for the 'someone else' of the tests (not counted)."""
        return self.adapter(counted=False)

    def count(self):
        """A marker; ``since(marker)`` lists what was sent after it."""
        return len(self.sent)

    def since(self, marker):
        return self.sent[marker:]
