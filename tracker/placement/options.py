"""The ``[placement]`` group: how the agent finds and authenticates to
placement (keystoneauth's session, auth and adapter options, with nova's
defaults, so the same nova.conf reaches the same endpoint) and the report
client's own options."""
import copy
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'placement'

client_opts = [
    cfg.IntOpt('association_refresh_interval', default=300, min=0,
               help='Seconds between rereads of what placement holds for this '
                    'host (traits, aggregates and sharing providers written by '
                    'others, allocations). 0: only on start and after conflicts.'),
    cfg.IntOpt('generation_conflict_retries', default=3, min=0,
               help='How many times one write is retried after another writer '
                    'changed the provider (409 concurrent_update).'),
]


def _optional(opts: list[cfg.Opt]) -> list[cfg.Opt]:
    # Plugins mark some options required (the password plugin's auth_url);
    # registered as such, every tool reading tracker.conf would fail to load
    # without placement credentials. The plugin checks them itself on load.
    copies = []
    for opt in opts:
        opt = copy.copy(opt)
        opt.required = False
        copies.append(opt)
    return copies


# nova's defaults for its [placement] adapter: the same nova.conf finds
# placement at the same endpoint for both.
NOVA_ADAPTER_DEFAULTS: dict[str, Any] = {'service_type': 'placement',
                         'valid_interfaces': ['internal', 'public']}


def _nova_defaults(opts: list[cfg.Opt]) -> list[cfg.Opt]:
    copies = []
    for opt in opts:
        if opt.dest in NOVA_ADAPTER_DEFAULTS:
            opt = copy.copy(opt)
            opt.default = NOVA_ADAPTER_DEFAULTS[opt.dest]
        copies.append(opt)
    return copies


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """[placement]: keystoneauth session, auth, adapter options and ours."""
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + _optional(ks_loading.get_auth_plugin_conf_options('password'))
            + _nova_defaults(ks_loading.get_adapter_conf_options(include_deprecated=False))
            + client_opts)
    unique: dict[str, cfg.Opt] = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return [(GROUP, list(unique.values()))]


def _auth_from_conf(conf: cfg.ConfigOpts) -> Any:
    group = conf[GROUP]
    if not group.auth_type:
        return None
    loader: Any = ks_loading.get_plugin_loader(group.auth_type)
    conf.register_opts(_optional(ks_loading.get_auth_plugin_conf_options(loader)),
                       group=GROUP)
    return loader.load_from_options(**{o.dest: group[o.dest]
                                        for o in loader.get_options()})


# keystoneauth's admin_token plugin only makes sense against a development
# server (noauth2), which takes the caller's roles from this header. The
# agent is a service: without the role placement's default policy refuses
# its reshapes. Behind keystone the header is never sent (keystonemiddleware
# would drop it anyway).
DEVELOPMENT_ROLES = {'X-Roles': 'admin,service'}


def adapter_from_conf(conf: cfg.ConfigOpts) -> ks_adapter.Adapter:
    """A keystoneauth1 Adapter for placement, from the [placement] group."""
    auth = _auth_from_conf(conf)
    session = ks_loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    headers = DEVELOPMENT_ROLES if conf[GROUP].auth_type == 'admin_token' else None
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth, additional_headers=headers,
        service_type=conf[GROUP].service_type or 'placement')
