"""The report client, under the name the design card gives it.

It lives in ``tracker.placement.client`` beside the modules it uses; this
path stays for whoever imports it from here (nova-style tests, tools).
"""
from tracker.placement.client import ReportClient
from tracker.placement.consumers import AllocationResult
from tracker.placement.errors import ConsumerConflict
from tracker.placement.errors import DuplicateProviderName
from tracker.placement.errors import GenerationConflict
from tracker.placement.errors import InventoryInUse
from tracker.placement.errors import PlacementConfigError
from tracker.placement.errors import PlacementError
from tracker.placement.errors import PlacementTooOld
from tracker.placement.errors import PlacementUnreachable
from tracker.placement.errors import ProviderInUse
from tracker.placement.errors import ReshapeUnsupported
from tracker.placement.errors import UnknownHost
from tracker.placement.options import adapter_from_conf
from tracker.placement.options import list_opts
from tracker.placement.sync import SyncResult

__all__ = [
    'AllocationResult', 'ConsumerConflict', 'DuplicateProviderName',
    'GenerationConflict', 'InventoryInUse', 'PlacementConfigError', 'PlacementError',
    'PlacementTooOld', 'PlacementUnreachable', 'ProviderInUse', 'ReportClient',
    'ReshapeUnsupported', 'SyncResult', 'UnknownHost', 'adapter_from_conf', 'list_opts',
]
