"""Authorization through oslo.policy.

Defaults are in code (placement_server.policies); an operator overrides
any rule in the [oslo_policy] policy_file (policy.yaml next to
placement.conf). As upstream placement does now, scopes and the new
defaults are enforced unless the operator turns them off.

One enforcer per process: ``init(conf)`` binds it to the service's
configuration; without it (in-process tools and tests) the defaults apply.
"""
from collections.abc import Hashable
from collections.abc import Mapping
import sys
import threading
import time

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement_server import errors
from placement_server import policies

# What a rule is checked against: the owner of what is asked for.
Target = Mapping[str, str | None]

_ENFORCER: oslo_policy.Enforcer | None = None


# Our defaults for [oslo_policy], set on the configuration given only:
# oslo.policy's set_defaults changes its option objects, which every
# configuration in the process shares (nova's too, when nova's functional
# tests load this application beside their own services).
# (enforce_scope is set where oslo.policy still has it: 6.0 always
# enforces scopes and dropped the option)
DEFAULTS = {'policy_file': 'policy.yaml', 'enforce_scope': True,
            'enforce_new_defaults': True}


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)
        for opt in opts:
            if opt.name in DEFAULTS:
                conf.set_default(opt.name, DEFAULTS[opt.name], group=group)


def _make_enforcer(conf: cfg.ConfigOpts) -> oslo_policy.Enforcer:
    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def init(conf: cfg.ConfigOpts) -> oslo_policy.Enforcer:
    """Make the process's enforcer read ``conf`` (and its policy file)."""
    global _ENFORCER
    register_opts(conf)
    _ENFORCER = _make_enforcer(conf)
    return _ENFORCER


def _default_enforcer() -> oslo_policy.Enforcer:
    if _ENFORCER is None:
        conf = cfg.ConfigOpts()
        conf([], project='placement', default_config_files=[])
        return init(conf)
    return _ENFORCER


def get_enforcer() -> oslo_policy.Enforcer:
    """The ``oslo.policy.enforcer`` entry point (oslopolicy-policy-generator).

    It passes its own command line; only --config-file / --config-dir
    matter here, to find the operator's placement.conf and policy file.
    """
    args: list[str] = []
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg.split('=', 1)[0] in ('--config-file', '--config-dir'):
            args.extend(argv[i:i + 2] if '=' not in arg else [arg])
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(args, project='placement')
    return _make_enforcer(conf)


# How often the enforcer looks at the policy file for changes. oslo.policy
# does it on every check (a search of the config dirs, a stat per place),
# and inspects each rule's signature as it evaluates it: 0.6 ms of CPU per
# request, a fifth of a cheap write's. A decision depends only on the
# rules, the caller's credentials and the target, so it is kept until the
# next look at the file. (A rule asking a remote server, oslo.policy's
# http: check, is then asked once per caller, target and look.)
RELOAD_EVERY = 1.0


class _Decisions:
    """The enforcer's decisions since it last looked at the policy file."""

    def __init__(self, enforcer: oslo_policy.Enforcer) -> None:
        self.enforcer = enforcer
        self.looked_at: float | None = None
        self.allowed: dict[Hashable, bool] = {}
        self.lock = threading.Lock()

    def get(self, action: str, target: Target,
            context: oslo_context.RequestContext) -> bool:
        now = time.monotonic()
        with self.lock:
            if self.looked_at is None or now - self.looked_at >= RELOAD_EVERY:
                self.enforcer.load_rules()
                self.allowed.clear()
                self.looked_at = now
        key = _key(action, target, context.to_policy_values())
        allowed = self.allowed.get(key) if key is not None else None
        if allowed is None:
            try:
                allowed = self.enforcer.authorize(action, target, context)
            except oslo_policy.InvalidScope:
                allowed = False
            if key is not None:
                self.allowed[key] = allowed
        return allowed


def _key(action: str, target: Target,
         credentials: Mapping[str, object]) -> Hashable | None:
    """A decision's key, or None if a value cannot be part of one. Targets
    and credentials are flat (strings, flags, lists of roles)."""
    try:
        key = (action, _flat(target), _flat(credentials))
        hash(key)
    except TypeError:
        return None
    return key


def _flat(mapping: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                        for k, v in mapping.items()))


_DECISIONS: _Decisions | None = None


def authorize(context: oslo_context.RequestContext, action: str, target: Target) -> None:
    """Raise Forbidden (403) unless the rule for ``action`` passes."""
    global _DECISIONS
    enforcer = _default_enforcer()
    decisions = _DECISIONS
    if decisions is None or decisions.enforcer is not enforcer:
        decisions = _DECISIONS = _Decisions(enforcer)
    allowed = decisions.get(action, target, context)
    if not allowed:
        raise errors.Forbidden(
            'Policy does not allow %s to be performed.' % action)
