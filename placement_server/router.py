"""URL routing: a path template and a handler per method.

Routes are declared in ``ROUTES`` (placement_server.handlers) as
``(template, {METHOD: handler})`` where a template segment ``{name}``
matches one path segment and is passed to the handler as a keyword.
An unknown path (or one with a trailing slash) is a 404, a known path
with another method (HEAD included) a 405 that
lists the allowed ones.
"""
from collections.abc import Iterable
from collections.abc import Mapping
import re
from typing import Generic
from typing import TypeVar

from placement_server import errors

# What a route maps a method to: the API's handlers, or (for the metrics'
# route names) the template itself.
H = TypeVar('H')


class Router(Generic[H]):

    def __init__(self, routes: Iterable[tuple[str, Mapping[str, H]]]) -> None:
        self._routes: list[tuple[re.Pattern[str], Mapping[str, H]]] = []
        for template, methods in routes:
            pattern = re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', template.rstrip('/') or '/')
            self._routes.append((re.compile('^%s$' % pattern), methods))

    def match(self, method: str, path: str) -> tuple[H, dict[str, str]]:
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
