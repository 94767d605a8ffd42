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
    status = 400
    code = UNDEFINED

    def __init__(self, detail: str, code: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.headers = headers or {}

    @property
    def title(self) -> str:
        return webob.exc.status_map[self.status].title


class BadRequest(PlacementError):
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
        e.detail = prefix + e.detail
        e.args = (e.detail,)
        raise


class Unauthorized(PlacementError):
    status = 401


class Forbidden(PlacementError):
    status = 403


class NotFound(PlacementError):
    status = 404


class MethodNotAllowed(PlacementError):
    status = 405


def method_not_allowed(method: str, allowed: str) -> 'MethodNotAllowed':
    """405 naming the refused method, with the Allow header."""
    return MethodNotAllowed('The method %s is not allowed for this resource.' % method,
                            headers={'Allow': allowed})


class NotAcceptable(PlacementError):
    status = 406


class Conflict(PlacementError):
    status = 409


class UnsupportedMediaType(PlacementError):
    status = 415


class ServiceUnavailable(PlacementError):
    status = 503
