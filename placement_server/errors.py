"""API errors: every failure a client can cause, with its status and code.

Handlers raise these; the WSGI app renders them as placement's JSON error
document (``{"errors": [{status, title, detail, code, request_id}]}``).
The ``code`` values are part of the wire contract (microversion 1.23+):
clients branch on them, so never rename one.
"""
import contextlib
from typing import Iterator

import webob.exc

UNDEFINED = 'placement.undefined_code'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
INVENTORY_INUSE = 'placement.inventory.inuse'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = 'placement.resource_provider.cannot_delete_parent'
PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_DUPLICATE_KEY = 'placement.query.duplicate_key'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'


class PlacementError(Exception):
    """``message`` is what went wrong; ``detail`` is the error document's
    text. As upstream's (webob's) for the statuses that say so
    (``explained``): the status's generic sentence, a blank line, then
    the message between a space and two, as clients that compare whole
    texts see them; ``lead``, when given, goes first instead."""
    status = 400
    code = UNDEFINED
    explained = False

    def __init__(self, detail: str, code: str | None = None,
                 headers: dict[str, str] | None = None, lead: str | None = None) -> None:
        super().__init__(detail)
        self.message = detail
        self.lead = lead
        if code:
            self.code = code
        self.headers = headers or {}
        # More fields of the error document (a 406 names the versions offered).
        self.extra: dict[str, str] = {}

    @property
    def detail(self) -> str:
        if self.lead is not None:
            return '%s \n\n %s' % (self.lead, self.message)
        if not self.explained:
            return self.message
        explanation = webob.exc.status_map[self.status].explanation
        # (A 404 of no route says the sentence alone.)
        message = '' if self.message == explanation else self.message
        return '%s\n\n %s  ' % (explanation, message)

    @property
    def title(self) -> str:
        title: str = webob.exc.status_map[self.status].title   # webob is untyped
        return title


class BadRequest(PlacementError):
    explained = True
    status = 400


class ResourceClassNotFound(BadRequest):
    """A request names a resource class that does not exist."""


@contextlib.contextmanager
def worded(error_class: type[PlacementError], prefix: str) -> Iterator[None]:
    """Errors of ``error_class`` raised inside read '<prefix><detail>':
    upstream words the same failure after the call it happened in
    ("Unable to allocate inventory for consumer X: No such resource
    class Y."), and clients and operators match on those texts."""
    try:
        yield
    except error_class as e:
        e.message = prefix + e.message
        e.args = (e.message,)
        raise


class Unauthorized(PlacementError):
    status = 401


class Forbidden(PlacementError):
    explained = True
    status = 403


class NotFound(PlacementError):
    explained = True
    status = 404


class MethodNotAllowed(PlacementError):
    status = 405


def method_not_allowed(method: str, allowed: str,
                       message: str = 'The method specified is not allowed for this resource.',
                       ) -> 'MethodNotAllowed':
    """405 naming the refused method, with the Allow header (a method the
    route only has from a later version: no message, as upstream)."""
    return MethodNotAllowed(message,
                            headers={'Allow': allowed},
                            lead='The method %s is not allowed for this resource.' % method)


class NotAcceptable(PlacementError):
    status = 406


class Conflict(PlacementError):
    explained = True
    status = 409


class UnsupportedMediaType(PlacementError):
    status = 415


class ServiceUnavailable(PlacementError):
    status = 503
