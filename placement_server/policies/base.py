"""The named rules every API rule is built from.

Upstream placement's current defaults: every call needs the admin or the
service role in a project-scoped token, except that a project reader may
read its own project's total usages, and only the service role may
reshape.
"""
from oslo_policy import policy

ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = 'rule:admin_or_project_reader_or_service_api'

SCOPE = ['project']

# Before the scoped defaults (Wallaby), every rule was the admin role. With
# [oslo_policy] enforce_new_defaults = False, oslo.policy ORs that old rule
# with each new one, as upstream's deprecated rules do: an admin may then
# reshape too.
_ADMIN_BEFORE_WALLABY = policy.DeprecatedRule(
    name='rule:admin_api', check_str='role:admin',
    deprecated_reason='Placement API rules have new default roles and scopes.',
    deprecated_since='W')

rules = [
    policy.RuleDefault('admin_api', 'role:admin',
                       description='The admin role, in any project.',
                       scope_types=SCOPE),
    policy.RuleDefault('service_api', 'role:service',
                       description='Other OpenStack services (nova, neutron, '
                                   'the tracker agent) calling placement.',
                       scope_types=SCOPE,
                       deprecated_rule=_ADMIN_BEFORE_WALLABY),
    policy.RuleDefault('admin_or_service_api', 'role:admin or role:service',
                       description='What most placement calls need.',
                       scope_types=SCOPE,
                       deprecated_rule=_ADMIN_BEFORE_WALLABY),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       description='A reader (or member) of the project the '
                                   'request is about.',
                       scope_types=SCOPE,
                       deprecated_rule=_ADMIN_BEFORE_WALLABY),
    policy.RuleDefault('admin_or_project_reader_or_service_api',
                       'role:admin or rule:project_reader_api or role:service',
                       description='Reads a project may make about itself.',
                       scope_types=SCOPE,
                       deprecated_rule=_ADMIN_BEFORE_WALLABY),
]
