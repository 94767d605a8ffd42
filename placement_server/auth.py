"""Authentication middleware.

``noauth2`` is for development and tests: the token itself says who you
are (``user`` or ``user:project``), and ``admin`` is an admin. It sets the
same headers keystonemiddleware's auth_token would, so everything behind
it is the same under either strategy.
"""
from collections.abc import Iterable
from wsgiref.types import StartResponse
from wsgiref.types import WSGIApplication
from wsgiref.types import WSGIEnvironment

from oslo_config import cfg

from placement_server import errors


def is_public(environ: WSGIEnvironment) -> bool:
    # The version document at / is for anyone: clients read it to learn the
    # microversion range before they have a token.
    return environ.get('PATH_INFO', '') in ('', '/')


class NoAuth2:

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            if is_public(environ):
                return self.app(environ, start_response)
            raise errors.Unauthorized('The request you have made requires '
                                      'authentication.')
        user, _, project = token.partition(':')
        project = project or user
        environ.setdefault('HTTP_X_USER_ID', user)
        if 'HTTP_OPENSTACK_SYSTEM_SCOPE' in environ:
            environ.setdefault('HTTP_X_SYSTEM_SCOPE', environ['HTTP_OPENSTACK_SYSTEM_SCOPE'])
        else:
            environ.setdefault('HTTP_X_PROJECT_ID', project)
        if 'HTTP_X_ROLES' not in environ:
            environ['HTTP_X_ROLES'] = 'admin' if user == 'admin' else ''
        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        return self.app(environ, start_response)


def keystone_conf_missing(conf: cfg.ConfigOpts) -> list[str]:
    """The [keystone_authtoken] options auth_token cannot work without and
    that ``conf`` lacks (registering the group's options as needed)."""
    from keystoneauth1 import loading
    from keystonemiddleware.auth_token import _opts  # its oslo.config.opts entry point

    for group, opts in _opts.list_opts():
        conf.register_opts(opts, group=group)
    loading.register_auth_conf_options(conf, 'keystone_authtoken')
    return [name for name in ('www_authenticate_uri', 'auth_type')
            if not getattr(conf.keystone_authtoken, name, None)]


def keystone(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """keystonemiddleware's auth_token, configured from [keystone_authtoken]."""
    from keystonemiddleware import auth_token

    missing = keystone_conf_missing(conf)
    if missing:
        # Fail when the server loads the app, not with a 500 per request.
        raise RuntimeError('auth strategy keystone needs [keystone_authtoken] %s'
                           % ' and '.join(missing))
    inner: WSGIApplication = auth_token.AuthProtocol(app, {'oslo_config_config': conf})

    def middleware(environ: WSGIEnvironment,
                   start_response: StartResponse) -> Iterable[bytes]:
        if is_public(environ):
            return app(environ, start_response)
        return inner(environ, start_response)
    return middleware


def wrap(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    strategy = conf.api.auth_strategy
    if strategy == 'noauth2':
        return NoAuth2(app)
    return keystone(app, conf)
