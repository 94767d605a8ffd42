"""The placement server's configuration options (oslo.config)."""
import os

from oslo_config import cfg
from oslo_middleware import cors


def default_state_dir():
    base = os.environ.get('XDG_STATE_HOME') or os.path.expanduser('~/.local/state')
    return os.path.join(base, 'placement')


def default_connection():
    return 'sqlite:///' + os.path.join(default_state_dir(), 'placement.sqlite')


database_opts = [
    cfg.StrOpt('connection', secret=True,
               sample_default='sqlite:////var/lib/placement/placement.sqlite',
               default=default_connection(),
               help='SQLAlchemy URL of the placement database: sqlite:///PATH '
                    '(the embedded default), postgresql://USER@HOST/DB or '
                    'mysql+pymysql://USER@HOST/DB.'),
    cfg.BoolOpt('sync_on_startup', default=False,
                help='Create or upgrade the schema when the service starts.'),
    # The rest are oslo.db's options of the same names (not for SQLite).
    cfg.IntOpt('max_pool_size', default=5, min=1,
               help='Connections each worker keeps open.'),
    cfg.IntOpt('max_overflow', default=10, min=0,
               help='Connections a worker may open beyond the pool.'),
    cfg.IntOpt('pool_timeout', min=1,
               help='Seconds to wait for a connection from the pool '
                    '(unset: 30).'),
    cfg.IntOpt('connection_recycle_time', default=3600,
               help='Connections older than this many seconds are replaced '
                    'when next taken from the pool.'),
    cfg.StrOpt('mysql_sql_mode', default='TRADITIONAL',
               help='The SQL mode of MySQL/MariaDB sessions; an empty value '
                    'leaves the server\'s.'),
    cfg.IntOpt('mysql_wsrep_sync_wait', min=0, max=15,
               help='Galera only: wsrep_sync_wait of every session. 1 makes '
                    'each read wait until its node has applied every write '
                    'the cluster committed before it, so a client sees its '
                    'own writes through any API host (recommended when API '
                    'hosts use different nodes). Unset: the server\'s.'),
    cfg.StrOpt('connection_parameters', default='',
               help='Extra query parameters for the connection URL, e.g. '
                    '"connect_timeout=5".'),
]

api_opts = [
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token'),
                        ('noauth2', 'development only: the token is '
                                    '"user[:project]"; "admin" is an admin')],
               help='How requests are authenticated.'),
    cfg.BoolOpt('enable_metrics', default=True,
                help='Count requests and time them by route, method and '
                     'status, and serve the numbers to Prometheus at '
                     '/metrics (no token needed: restrict it at the proxy).'),
]

# Headers a browser client may send and read across origins, once CORS is
# turned on by setting [cors] allowed_origin.
_CORS_HEADERS = ['X-Auth-Token', 'X-Openstack-Request-Id', 'OpenStack-API-Version']
cors.set_defaults(
    allow_headers=_CORS_HEADERS + ['X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                                   'X-User-Id', 'X-Tenant-Id'],
    expose_headers=_CORS_HEADERS + ['Vary', 'Last-Modified', 'Location'],
    allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD'])

placement_opts = [
    cfg.BoolOpt('randomize_allocation_candidates', default=False,
                help='Shuffle allocation candidates before applying limit, '
                     'so that schedulers spread load when limit is small.'),
    cfg.IntOpt('max_allocation_candidates', default=-1,
               help='Upper bound on allocation candidates computed for one '
                    'request; -1 means no bound.'),
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
                    'concurrent writer changed one of its providers first.'),
]


def register_opts(conf):
    conf.register_opts(database_opts, group='placement_database')
    conf.register_opts(api_opts, group='api')
    conf.register_opts(placement_opts, group='placement')
    conf.register_opts(cors.CORS_OPTS, group='cors')


def list_opts():
    return [('placement_database', database_opts),
            ('api', api_opts),
            ('placement', placement_opts)]
