"""Integration tests: real processes (servers, agents) on real databases."""
from tests.upstream import _upstream_server  # noqa: F401  (fixtures)
from tests.upstream import upstream_placement  # noqa: F401
from tests.integration.servers import placement_servers  # noqa: F401
