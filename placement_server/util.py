"""What every handler needs: the request, JSON in and out, headers.

Handlers are thin and uniform: check what they accept, decode and validate
the body or query against a schema picked by microversion, make one call
into ``db``, and render with ``json_response``.
"""
from collections.abc import Callable
from collections.abc import Mapping
import datetime
import email.utils
import functools
import json
import re
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar
from typing import cast
import uuid as uuidlib

import fastjsonschema
import jsonschema
import orjson
from oslo_config import cfg
import webob

from placement_server import errors
from placement_server import microversion

if TYPE_CHECKING:
    from placement_server import context as context_mod
    from placement_server.db import api as db_api

# A JSON schema, as placement_server.schemas writes them
Schema = dict[str, Any]


class Request(webob.Request):
    """A webob request carrying what the middleware found out."""

    @property
    def version(self) -> microversion.Version:
        version: microversion.Version = self.environ['placement.microversion']
        return version

    @property
    def context(self) -> 'context_mod.RequestContext':
        ctx: context_mod.RequestContext = self.environ['placement.context']
        return ctx

    @property
    def db(self) -> 'db_api.Database':
        database: db_api.Database = self.environ['placement.db']
        return database

    @property
    def conf(self) -> cfg.ConfigOpts:
        conf: cfg.ConfigOpts = self.environ['placement.conf']
        return conf


# A handler: the request and the path's {name} parts, to the response
Handler = TypeVar('Handler', bound=Callable[..., webob.Response])


def since(min_version: str) -> Callable[[Handler], Handler]:
    """The route does not exist (404) below ``min_version``."""
    wanted = microversion.Version.parse(min_version)

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def wrapper(req: Request, **kwargs: str) -> webob.Response:
            if req.version < wanted:
                raise errors.NotFound('The resource could not be found.')
            return handler(req, **kwargs)
        return cast(Handler, wrapper)
    return decorate


def _json_default(value: object) -> str:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError(repr(value))


def _encode(body: object) -> bytes:
    """``body`` as JSON bytes.

    orjson is ~30 times faster than json on big bodies (a 600-provider list:
    15 ms -> 0.5 ms); json serves what orjson refuses (ints past 64 bits).
    """
    try:
        return orjson.dumps(body)
    except TypeError:
        pass
    try:
        # Non-string keys cost orjson twice the time, so only on demand.
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(body, default=_json_default).encode('utf-8')


def last_modified(*stamps: datetime.datetime | None) -> datetime.datetime:
    """The newest of the given timestamps (None ones ignored), or now."""
    known = [s for s in stamps if s is not None]
    if not known:
        return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return max(known)


def modified(row: Mapping[str, Any]) -> datetime.datetime:
    """A row's Last-Modified: its last update, else its creation."""
    stamp: datetime.datetime = row['updated_at'] or row['created_at']
    return stamp


def json_response(req: Request, body: object, status: int = 200,
                  modified: datetime.datetime | None = None,
                  headers: Mapping[str, str] | None = None) -> webob.Response:
    """Render ``body`` as JSON (unless it is JSON bytes already); from 1.15
    with Last-Modified and no-cache.

    ``modified`` is the newest timestamp of what the body shows: pass it
    for representations of stored things (GET, and writes that return the
    written object).
    """
    data = body if isinstance(body, bytes) else _encode(body)
    # The header list as webob writes it for JSON (no charset), given
    # whole: webob's content type and body setters cost a third of GET /'s
    # handler.
    resp = webob.Response(body=data, status=status, headerlist=[
        ('Content-Type', 'application/json'), ('Content-Length', str(len(data)))])
    if modified is not None and req.version >= (1, 15):
        if modified.tzinfo is None:
            modified = modified.replace(tzinfo=datetime.timezone.utc)
        resp.headers['Last-Modified'] = email.utils.format_datetime(modified, usegmt=True)
        resp.headers['Cache-Control'] = 'no-cache'
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def url(req: Request, path: str) -> str:
    """``path`` (an API path) as a link the client can follow: under the
    prefix the API is mounted at (SCRIPT_NAME, e.g. /placement), if any."""
    prefix: str = req.environ.get('SCRIPT_NAME', '')
    return prefix + path


def no_content(status: int = 204) -> webob.Response:
    resp = webob.Response(status=status)
    # A 204 has no body and so no content type.
    resp.content_type = None
    return resp


# Accept headers that take JSON, as clients send them: no parsing needed.
_TAKES_JSON = frozenset(['', 'application/json', '*/*'])


def check_accept(req: Request) -> None:
    """GET handlers speak JSON only (406 otherwise)."""
    if req.environ.get('HTTP_ACCEPT', '') in _TAKES_JSON:
        return
    if req.accept and not req.accept.acceptable_offers(['application/json']):
        raise errors.NotAcceptable('Only application/json is provided')


def _no_constant(name: str) -> Any:
    # NaN and +-Infinity are not JSON, and no placement value may be one
    # (an allocation ratio of NaN would make every capacity unknowable).
    raise ValueError('%s is not a number placement takes' % name)


def extract_json(req: Request, schema: Schema) -> Any:
    """The request body decoded and validated against ``schema``."""
    if req.content_type != 'application/json':
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % (req.content_type or None))
    try:
        data = json.loads(req.body, parse_constant=_no_constant)
        holds_nul = _holds_nul(data)
    except RecursionError:   # a body nested thousands of levels deep
        raise errors.BadRequest('Malformed JSON: nested too deeply')
    except ValueError as e:
        raise errors.BadRequest('Malformed JSON: %s' % e)
    if holds_nul:
        # PostgreSQL refuses NUL in strings; no placement value holds one.
        raise errors.BadRequest('Malformed JSON: NUL characters and lone surrogates '
                                'are not allowed.')
    validate(data, schema)
    return data


_VALIDATORS: dict[tuple[int, bool], tuple[Schema, Any, Callable[[Any], Any]]] = {}


def _check(data: Any, schema: Schema, query: bool = False) -> Any:
    """The best-matching schema error for ``data``, or None.

    jsonschema judges and words every error, as upstream's does. Most
    bodies are valid, and for those fastjsonschema's check, compiled from
    the same schema, says so about ten times faster (a claim's body:
    jsonschema's walk cost more than its SQL); a body it refuses goes to
    jsonschema, whose verdict stands. Both are built once per schema
    object (``jsonschema.validate`` also re-checks the schema itself on
    every call, ~4 ms). ``query``: a query string's formats (``QUERY_FORMATS``).
    """
    cached = _VALIDATORS.get((id(schema), query))
    if cached is None or cached[0] is not schema:
        validator = jsonschema.validators.validator_for(schema)(
            schema, format_checker=QUERY_FORMAT_CHECKER if query else FORMAT_CHECKER)
        # use_default=False: it must not fill in the schema's defaults.
        fast = fastjsonschema.compile(schema, formats=_QUERY_FORMATS if query else _FORMATS,
                                      use_default=False)
        cached = _VALIDATORS[(id(schema), query)] = (schema, validator, fast)
    try:
        cached[2](data)
        return None
    except fastjsonschema.JsonSchemaValueException:
        return jsonschema.exceptions.best_match(cached[1].iter_errors(data))


_SURROGATE = re.compile('[\ud800-\udfff]')


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        # Also a lone UTF-16 surrogate ("\ud800" in the JSON text): no
        # database can store it (UnicodeEncodeError, a 500 before).
        return '\x00' in value or _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def _describe(error: Any) -> str:
    """A schema error as upstream words it: the validator's whole text
    (message, "Failed validating ... in schema[...]", the instance) on one
    line. Clients and upstream's tests match on its parts."""
    return str(error).replace('\n', ' ').rstrip()


def validate(data: Any, schema: Schema, what: str = 'JSON') -> None:
    error = _check(data, schema)
    if error is not None:
        raise errors.BadRequest('%s does not validate: %s' % (what, _describe(error)))


def query_params(req: Request, schema: Schema) -> dict[str, str]:
    """The query string as a dict (one value a key), validated by ``schema``.

    Repeatable keys (member_of, required, ...) are read with
    ``req.GET.getall`` by the handler; this checks the key set and values.
    """
    try:
        params = {k: req.GET.getall(k)[-1] for k in req.GET}
    except UnicodeDecodeError:
        raise errors.BadRequest('Invalid query string parameters: not UTF-8')
    error = _check(params, schema, query=True)
    if error is not None:
        raise errors.BadRequest('Invalid query string parameters: %s' % _describe(error))
    return params


# Formats as upstream judges them. In bodies its own check: any uuid
# uuid.UUID reads (any case, dashes or not, braces, "urn:uuid:").
FORMAT_CHECKER = jsonschema.FormatChecker()


def _uuid_format(value: object) -> bool:
    return not isinstance(value, str) or is_uuid(value)


FORMAT_CHECKER.checks('uuid')(_uuid_format)

# In query strings jsonschema's own checker: a uuid with its four dashes
# (``?uuid=`` and ``?in_tree=`` of provider lists refuse one without).
QUERY_FORMAT_CHECKER = jsonschema.FormatChecker()


def _dashed_uuid_format(value: object) -> bool:
    conforms: bool = QUERY_FORMAT_CHECKER.conforms(value, 'uuid')
    return conforms


# The formats placement's schemas use, for fastjsonschema (strings only).
_FORMATS = {'uuid': _uuid_format}
_QUERY_FORMATS = {'uuid': _dashed_uuid_format}


def is_uuid(value: str) -> bool:
    """Whether a uuid is well formed, as upstream judges path, body and
    most query uuids (oslo's ``is_uuid_like``: any spelling uuid.UUID reads).
    Upstream then compares the string as given with what it stored, so
    callers keep it as given (``normalize_uuid`` only where upstream does)."""
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


def normalize_uuid(value: str) -> str:
    """The canonical dashed lowercase form: what upstream stores for a new
    provider's uuid and a consumer's uuid in PUT /allocations/{uuid}."""
    return str(uuidlib.UUID(value))
