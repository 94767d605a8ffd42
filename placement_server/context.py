"""The request context: who is asking, and may they."""
from oslo_context import context

from placement_server import policy


class RequestContext(context.RequestContext):

    def can(self, action: str, target: policy.Target | None = None) -> None:
        """Raise Forbidden unless policy allows ``action`` for this caller."""
        policy.authorize(self, action, target or {
            'project_id': self.project_id, 'user_id': self.user_id})
