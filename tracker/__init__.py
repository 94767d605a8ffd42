"""The compute-node resource tracker agent."""
from oslo_service import backend as _backend

# The agent runs on plain threads: oslo.service's threading backend
# (cotyledon), not its default eventlet one, which needs monkey patching.
# A hook, not init_backend(): whoever first asks (oslo.messaging imports
# oslo.service) gets it, and a process that chose already keeps its choice.
_backend.register_backend_default_hook(lambda: _backend.BackendType.THREADING)
