"""One rule per API action, with the calls it guards.

Handlers ask ``req.context.can(<name>)`` with these names, which are
upstream placement's, so an operator's existing policy file still applies.
"""
from oslo_policy import policy

from placement_server.policies import base

RP = '/resource_providers'
RP_ONE = RP + '/{uuid}'
INVENTORIES = RP_ONE + '/inventories'
RC = '/resource_classes'
TRAITS = '/traits'

# (name, check, description, [(method, path), ...])
_TABLE = [
    ('placement:resource_providers:list', base.ADMIN_OR_SERVICE,
     'List resource providers.', [('GET', RP)]),
    ('placement:resource_providers:create', base.ADMIN_OR_SERVICE,
     'Create a resource provider.', [('POST', RP)]),
    ('placement:resource_providers:show', base.ADMIN_OR_SERVICE,
     'Show a resource provider.', [('GET', RP_ONE)]),
    ('placement:resource_providers:update', base.ADMIN_OR_SERVICE,
     'Update a resource provider.', [('PUT', RP_ONE)]),
    ('placement:resource_providers:delete', base.ADMIN_OR_SERVICE,
     'Delete a resource provider.', [('DELETE', RP_ONE)]),

    ('placement:resource_classes:list', base.ADMIN_OR_SERVICE,
     'List resource classes.', [('GET', RC)]),
    ('placement:resource_classes:create', base.ADMIN_OR_SERVICE,
     'Create a custom resource class.', [('POST', RC)]),
    ('placement:resource_classes:show', base.ADMIN_OR_SERVICE,
     'Show a resource class.', [('GET', RC + '/{name}')]),
    ('placement:resource_classes:update', base.ADMIN_OR_SERVICE,
     'Create or rename a custom resource class.', [('PUT', RC + '/{name}')]),
    ('placement:resource_classes:delete', base.ADMIN_OR_SERVICE,
     'Delete a custom resource class.', [('DELETE', RC + '/{name}')]),

    ('placement:resource_providers:inventories:list', base.ADMIN_OR_SERVICE,
     "List a provider's inventories.", [('GET', INVENTORIES)]),
    ('placement:resource_providers:inventories:create', base.ADMIN_OR_SERVICE,
     'Add one inventory to a provider.', [('POST', INVENTORIES)]),
    ('placement:resource_providers:inventories:show', base.ADMIN_OR_SERVICE,
     "Show one of a provider's inventories.",
     [('GET', INVENTORIES + '/{resource_class}')]),
    ('placement:resource_providers:inventories:update', base.ADMIN_OR_SERVICE,
     "Replace a provider's inventories, or one of them.",
     [('PUT', INVENTORIES), ('PUT', INVENTORIES + '/{resource_class}')]),
    ('placement:resource_providers:inventories:delete', base.ADMIN_OR_SERVICE,
     "Delete a provider's inventories, or one of them.",
     [('DELETE', INVENTORIES), ('DELETE', INVENTORIES + '/{resource_class}')]),

    ('placement:resource_providers:aggregates:list', base.ADMIN_OR_SERVICE,
     "List a provider's aggregates.", [('GET', RP_ONE + '/aggregates')]),
    ('placement:resource_providers:aggregates:update', base.ADMIN_OR_SERVICE,
     "Replace a provider's aggregates.", [('PUT', RP_ONE + '/aggregates')]),

    ('placement:resource_providers:usages', base.ADMIN_OR_SERVICE,
     "Show a provider's usages.", [('GET', RP_ONE + '/usages')]),
    ('placement:usages', base.ADMIN_OR_PROJECT_READER_OR_SERVICE,
     "Show a project's (and user's) total usages.", [('GET', '/usages')]),

    ('placement:traits:list', base.ADMIN_OR_SERVICE,
     'List traits.', [('GET', TRAITS)]),
    ('placement:traits:show', base.ADMIN_OR_SERVICE,
     'Check that a trait exists.', [('GET', TRAITS + '/{name}')]),
    ('placement:traits:update', base.ADMIN_OR_SERVICE,
     'Create a custom trait.', [('PUT', TRAITS + '/{name}')]),
    ('placement:traits:delete', base.ADMIN_OR_SERVICE,
     'Delete a custom trait.', [('DELETE', TRAITS + '/{name}')]),
    ('placement:resource_providers:traits:list', base.ADMIN_OR_SERVICE,
     "List a provider's traits.", [('GET', RP_ONE + '/traits')]),
    ('placement:resource_providers:traits:update', base.ADMIN_OR_SERVICE,
     "Replace a provider's traits.", [('PUT', RP_ONE + '/traits')]),
    ('placement:resource_providers:traits:delete', base.ADMIN_OR_SERVICE,
     "Remove all of a provider's traits.", [('DELETE', RP_ONE + '/traits')]),

    ('placement:allocations:manage', base.ADMIN_OR_SERVICE,
     'Write allocations of several consumers at once.', [('POST', '/allocations')]),
    ('placement:allocations:list', base.ADMIN_OR_SERVICE,
     "Show a consumer's allocations.", [('GET', '/allocations/{consumer_uuid}')]),
    ('placement:allocations:update', base.ADMIN_OR_SERVICE,
     "Replace a consumer's allocations.", [('PUT', '/allocations/{consumer_uuid}')]),
    ('placement:allocations:delete', base.ADMIN_OR_SERVICE,
     "Delete a consumer's allocations.", [('DELETE', '/allocations/{consumer_uuid}')]),
    ('placement:resource_providers:allocations:list', base.ADMIN_OR_SERVICE,
     'List the allocations against a provider.', [('GET', RP_ONE + '/allocations')]),

    ('placement:allocation_candidates:list', base.ADMIN_OR_SERVICE,
     'List allocation candidates.', [('GET', '/allocation_candidates')]),
    ('placement:reshaper:reshape', base.SERVICE,
     'Move inventories and allocations between providers in one step.',
     [('POST', '/reshaper')]),
]

rules = [
    policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPE)
    for name, check, description, operations in _TABLE
]
