"""API errors: every failure a client can cause, with its status and code.

Handlers raise these; the WSGI app renders them as placement's JSON error
document (``{"errors": [{status, title, detail, code, request_id}]}``).
The ``code`` values are part of the wire contract (microversion 1.23+):
clients branch on them, so never rename one.
"""
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

    def __init__(self, detail, code=None, headers=None):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.headers = headers or {}

    @property
    def title(self):
        return webob.exc.status_map[self.status].title


class BadRequest(PlacementError):
    status = 400


class Unauthorized(PlacementError):
    status = 401


class Forbidden(PlacementError):
    status = 403


class NotFound(PlacementError):
    status = 404


class MethodNotAllowed(PlacementError):
    status = 405


class NotAcceptable(PlacementError):
    status = 406


class Conflict(PlacementError):
    status = 409


class UnsupportedMediaType(PlacementError):
    status = 415


class ServiceUnavailable(PlacementError):
    status = 503
