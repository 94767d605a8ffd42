"""URL routing: a path template and a handler per method.

Routes are declared in ``ROUTES`` (placement_server.handlers) as
``(template, {METHOD: handler})`` where a template segment ``{name}``
matches one path segment and is passed to the handler as a keyword.
An unknown path (or one with a trailing slash) is a 404, a known path
with another method (HEAD included) a 405 that
lists the allowed ones.
"""
import re

from placement_server import errors


class Router:

    def __init__(self, routes):
        self._routes = []
        for template, methods in routes:
            pattern = re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', template.rstrip('/') or '/')
            self._routes.append((re.compile('^%s$' % pattern), methods))

    def match(self, method, path):
        """Return (handler, kwargs) or raise NotFound/MethodNotAllowed."""
        # As upstream: the path must match exactly (a trailing slash is a
        # 404) and HEAD is not GET (a 405 listing the methods).
        for regex, methods in self._routes:
            m = regex.match(path)
            if m is None:
                continue
            handler = methods.get(method)
            if not handler:
                allowed = ', '.join(sorted(methods))
                raise errors.method_not_allowed(method, allowed)
            return handler, m.groupdict()
        raise errors.NotFound('The resource could not be found.')
