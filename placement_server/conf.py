"""The placement server's configuration options (oslo.config)."""
import copy

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_middleware import cors
from oslo_middleware.healthcheck import opts as healthcheck_opts

from placement_server import audit
from placement_server.capacity import options as capacity_options

# oslo.db's options, as upstream placement reads them under
# [placement_database]; connection has no default: a process without a
# database refuses to run (placement_server.db.config). One default differs:
# fewer overflow connections, as each of our workers serves one request at
# a time.
_DATABASE_DEFAULTS = {'max_overflow': 10}


def _database_opts() -> list[cfg.Opt]:
    opts: list[cfg.Opt] = []
    for opt in db_options.database_opts:
        if opt.name in _DATABASE_DEFAULTS:
            opt = copy.deepcopy(opt)
            opt.default = _DATABASE_DEFAULTS[opt.name]
        opts.append(opt)
    return opts


database_opts: list[cfg.Opt] = _database_opts() + [
    cfg.BoolOpt('sync_on_startup', default=False,
                help='Create or upgrade the schema when the service starts.'),
]

api_opts: list[cfg.Opt] = [
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token'),
                        ('noauth2', 'development only: the token is '
                                    '"user[:project]"; "admin" is an admin')],
               help='How requests are authenticated.'),
    cfg.BoolOpt('enable_metrics', default=True,
                help='Count requests and time them by route, method and '
                     'status, for Prometheus to scrape at /metrics on the '
                     'metrics port (never on the API port).'),
    cfg.IntOpt('metrics_port', default=9778, min=0, max=65535,
               help='The port /metrics is served on (no token: Prometheus '
                    'scrapes it), summed over the workers: by placement-server\'s '
                    'master, or under uWSGI by its worker 1; 0: none. Under '
                    'another WSGI server, expose the numbers from '
                    'PROMETHEUS_MULTIPROC_DIR yourself.'),
    cfg.HostAddressOpt('metrics_host',
                       help='The address of the metrics port; unset: the '
                            'address the API listens on (under uWSGI, that of its '
                            'http-socket or http option).'),
]

# Headers a browser client may send and read across origins, once CORS is
# turned on by setting [cors] allowed_origin.
_CORS_HEADERS = ['X-Auth-Token', 'X-Openstack-Request-Id', 'OpenStack-API-Version']
cors.set_defaults(
    allow_headers=_CORS_HEADERS + ['X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                                   'X-User-Id', 'X-Tenant-Id'],
    expose_headers=_CORS_HEADERS + ['Vary', 'Last-Modified', 'Location'],
    allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD'])

# GET /healthcheck checks the database unless [healthcheck] backends says
# otherwise (placement_server.health).
cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS, backends=['database'])

placement_opts: list[cfg.Opt] = [
    cfg.BoolOpt('randomize_allocation_candidates', default=False,
                help='Shuffle allocation candidates before applying limit, '
                     'so that schedulers spread load when limit is small.'),
    cfg.IntOpt('max_allocation_candidates', default=-1,
               help='Upper bound on allocation candidates computed for one '
                    'request, taken in the order '
                    'allocation_candidates_generation_strategy gives; -1 '
                    'means no bound.'),
    cfg.StrOpt('allocation_candidates_generation_strategy', default='breadth-first',
               choices=('depth-first', 'breadth-first'),
               help='The order root providers give allocation candidates in '
                    'when a limit or max_allocation_candidates cuts the '
                    'answer. depth-first: every candidate of the first root '
                    'before the next, so a cut answer may hold few hosts. '
                    'breadth-first: one candidate of each root in turn, so '
                    'a cut answer spreads over every host that fits. With '
                    'one candidate per host the two give the same answer. '
                    'The default differs from upstream placement '
                    '(depth-first), whose answers to a limit spread over '
                    'hosts anyway.'),
    cfg.FloatOpt('allocation_candidates_time_limit', default=5.0, min=0,
                 help='Seconds one GET /allocation_candidates may spend '
                      'building candidates (0: no bound). When they run out '
                      'the answer holds the candidates found by then, valid '
                      'and cut the way max_allocation_candidates cuts, and a '
                      'warning names the query. Keep it well below the WSGI '
                      'worker timeout and the clients\' timeouts.'),
    cfg.StrOpt('incomplete_consumer_project_id',
               default='00000000-0000-0000-0000-000000000000',
               help='Project recorded for consumers whose allocations were '
                    'written before microversion 1.8 without a project.'),
    cfg.StrOpt('incomplete_consumer_user_id',
               default='00000000-0000-0000-0000-000000000000',
               help='User recorded for consumers whose allocations were '
                    'written before microversion 1.8 without a user.'),
    cfg.IntOpt('allocation_conflict_retry_count', default=10, min=1,
               help='How many times an allocation write is replayed when a '
                    'concurrent writer changed one of its providers first. '
                    'Also the bound on all replays of one write request '
                    '(deadlocks and certification failures included) when '
                    'above 10.'),
]


workarounds_opts: list[cfg.Opt] = [
    cfg.BoolOpt('optimize_for_wide_provider_trees', default=False,
                help='Accepted for compatibility with upstream placement '
                     'configuration files; changes nothing. The allocation '
                     'candidates search here drops a partial candidate as '
                     'soon as it over-allocates a provider and a tree that '
                     'cannot fit before any is built, whatever this says.'),
]


# Options deployment tools write (Kolla-Ansible's placement.conf), known
# so that oslo-config-validator finds none unknown.
default_opts: list[cfg.Opt] = [
    cfg.StrOpt('state_path', default='/var/lib/placement',
               help="Top directory of the service's state, as deployment tools "
                    'set it. The server keeps nothing there (its state is the '
                    'database); a relative SQLite path is not resolved against it.'),
]

_NOT_TRACED = (' Accepted as osprofiler names it; this server does not trace '
               'with osprofiler, whatever it says.')
profiler_opts: list[cfg.Opt] = [
    cfg.BoolOpt('enabled', default=False, help='Profile requests.' + _NOT_TRACED),
    cfg.BoolOpt('trace_sqlalchemy', default=False,
                help='Trace database statements.' + _NOT_TRACED),
    cfg.BoolOpt('trace_requests', default=False,
                help='Trace outgoing HTTP requests.' + _NOT_TRACED),
    cfg.StrOpt('hmac_keys', default='SECRET_KEY', secret=True,
               help='Keys of the signed trace headers.' + _NOT_TRACED),
    cfg.StrOpt('connection_string', default='messaging://',
               help='Where traces would be sent.' + _NOT_TRACED),
    cfg.BoolOpt('filter_error_trace', default=False,
                help='Keep only traces with errors.' + _NOT_TRACED),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(default_opts)
    conf.register_opts(profiler_opts, group='profiler')
    conf.register_opts(audit.OPTS, group='audit')
    conf.register_opts(database_opts, group='placement_database')
    conf.register_opts(workarounds_opts, group='workarounds')
    conf.register_opts(api_opts, group='api')
    conf.register_opts(placement_opts, group='placement')
    conf.register_opts(cors.CORS_OPTS, group='cors')
    capacity_options.register_opts(conf)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [('DEFAULT', default_opts),
            ('profiler', profiler_opts),
            ('audit', audit.OPTS),
            ('placement_database', database_opts),
            ('api', api_opts),
            ('placement', placement_opts),
            ('workarounds', workarounds_opts)] + capacity_options.list_opts()
