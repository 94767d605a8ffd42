"""Authorization. The seam where oslo.policy enforcement plugs in.

Until policy-in-code lands, every API action needs the admin or the
service role, which is upstream placement's default for all but a few
read-only calls.
"""
from placement_server import errors


def authorize(context, action, target):
    if context.is_admin or {'admin', 'service'} & set(context.roles):
        return
    raise errors.Forbidden(
        'Policy does not allow %s to be performed.' % action)
