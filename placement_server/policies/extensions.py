"""Rules of this server's extensions: routes upstream placement does not
have (placement_server.handlers.explain)."""
from oslo_policy import policy

from placement_server.policies import base

rules = [
    policy.DocumentedRuleDefault(
        name='placement:extensions:candidates:explain', check_str='rule:admin_api',
        description='Explain, root provider by root provider, why an allocation '
                    'candidates query fits or not (an extension of this server, not '
                    "part of upstream placement's API).",
        operations=[{'method': 'GET', 'path': '/extensions/candidates/explain'}],
        scope_types=base.SCOPE),
]
