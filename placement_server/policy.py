"""Authorization through oslo.policy.

Defaults are in code (placement_server.policies); an operator overrides
any rule in the [oslo_policy] policy_file (policy.yaml next to
placement.conf). As upstream placement does now, scopes and the new
defaults are enforced unless the operator turns them off.

One enforcer per process: ``init(conf)`` binds it to the service's
configuration; without it (in-process tools and tests) the defaults apply.
"""
import sys

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement_server import errors
from placement_server import policies

_ENFORCER = None


def register_opts(conf):
    policy_opts.set_defaults(conf, policy_file='policy.yaml',
                             enforce_scope=True, enforce_new_defaults=True)


def _make_enforcer(conf):
    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def init(conf):
    """Make the process's enforcer read ``conf`` (and its policy file)."""
    global _ENFORCER
    register_opts(conf)
    _ENFORCER = _make_enforcer(conf)
    return _ENFORCER


def _default_enforcer():
    if _ENFORCER is None:
        conf = cfg.ConfigOpts()
        conf([], project='placement', default_config_files=[])
        init(conf)
    return _ENFORCER


def get_enforcer():
    """The ``oslo.policy.enforcer`` entry point (oslopolicy-policy-generator).

    It passes its own command line; only --config-file / --config-dir
    matter here, to find the operator's placement.conf and policy file.
    """
    args, argv = [], sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg.split('=', 1)[0] in ('--config-file', '--config-dir'):
            args.extend(argv[i:i + 2] if '=' not in arg else [arg])
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args, project='placement')
    return _make_enforcer(conf)


def authorize(context, action, target):
    """Raise Forbidden (403) unless the rule for ``action`` passes."""
    try:
        allowed = _default_enforcer().authorize(action, target, context)
    except oslo_policy.InvalidScope:
        allowed = False
    if not allowed:
        raise errors.Forbidden(
            'Policy does not allow %s to be performed.' % action)
