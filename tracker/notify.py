"""Versioned notifications of what the agent wrote to placement.

Publisher ``tracker.<host>``, topic ``versioned_notifications`` (the
topic nova's versioned notifications use, so existing consumers see them).
Every payload is an envelope with a name and a version, so consumers can
tell an additive change (1.x) from a breaking one (2.0).
"""
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import logging
from typing import Any

from oslo_config import cfg
import oslo_messaging

from tracker.audit import Drift
from tracker.drivers.base import HostSnapshot
from tracker.placement.consumers import AllocationResult
from tracker.placement.sync import SyncResult
from tracker.providers.provider import Provider

LOG = logging.getLogger(__name__)

TOPIC = 'versioned_notifications'
PAYLOAD_VERSION = '1.0'

# (event type, payload): one notification
Event = tuple[str, dict[str, Any]]


def envelope(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {'tracker_object.name': name,
            'tracker_object.namespace': 'tracker',
            'tracker_object.version': PAYLOAD_VERSION,
            'tracker_object.data': data}


def _provider_data(provider: Provider) -> dict[str, Any]:
    return {'uuid': provider.uuid, 'name': provider.name,
            'parent_uuid': provider.parent_uuid,
            'inventories': provider.inventories,
            'traits': sorted(provider.traits),
            'aggregates': sorted(provider.aggregates)}


def notifications(synced: SyncResult, allocated: AllocationResult,
                  snapshot: HostSnapshot) -> list[Event]:
    """[(event_type, payload)] for what one cycle wrote.

    ``synced`` and ``allocated`` are the report client's results (what it
    created, updated and deleted); ``snapshot`` is the host they were
    written from, which gives each payload its new state.
    """
    by_uuid = {p.uuid: p for p in snapshot.providers}
    by_consumer = {i.uuid: i for i in snapshot.instances}
    events: list[Event] = []
    for uuid in synced.created:
        events.append(('tracker.provider.create', envelope(
            'ProviderPayload', _provider_data(by_uuid[uuid]))))
    for uuid, fields in synced.updated.items():
        data = _provider_data(by_uuid[uuid])
        data['changes'] = sorted(set(fields))
        events.append(('tracker.provider.update', envelope('ProviderPayload', data)))
    for uuid in synced.deleted:
        events.append(('tracker.provider.delete', envelope(
            'ProviderPayload', {'uuid': uuid})))
    for consumer in list(allocated.created) + list(allocated.updated):
        instance = by_consumer[consumer]
        events.append(('tracker.allocation.update', envelope(
            'AllocationPayload', {
                'consumer_uuid': instance.uuid, 'name': instance.name,
                'project_id': instance.project_id, 'user_id': instance.user_id,
                'allocations': instance.allocations})))
    for consumer in allocated.deleted:
        events.append(('tracker.allocation.delete', envelope(
            'AllocationPayload', {'consumer_uuid': consumer})))
    return events


def device_drains(before: Mapping[str, str] | None, now: Mapping[str, str],
                  host: str) -> list[Event]:
    """[(event_type, payload)] for the devices drained (or undrained, or
    drained for another reason) since the last discovery, ``before`` (None:
    none yet, as after a start: what is drained then was told before)."""
    if before is None:
        return []
    events: list[Event] = []
    for address in sorted(set(before) | set(now)):
        if address in now and before.get(address) != now[address]:
            events.append(('tracker.device.drain', envelope('DeviceDrainPayload', {
                'host': host, 'address': address, 'reason': now[address]})))
        elif address not in now:
            events.append(('tracker.device.undrain', envelope('DeviceDrainPayload', {
                'host': host, 'address': address, 'reason': before[address]})))
    return events


def findings(drift: Iterable[Drift],
             reported: Collection[tuple[str, str]] = ()) -> list[Event]:
    """[(event_type, payload)] for the allocation findings beside
    nova-compute not yet in ``reported`` ({(kind, consumer)}): each once,
    when it appears, not at every cycle while it lasts."""
    return [('tracker.allocation.finding', envelope('AllocationFindingPayload', {
                'kind': item.kind, 'consumer_uuid': item.uuid, 'name': item.name,
                'detail': item.detail}))
            for item in drift if (item.kind, item.uuid) not in reported]


class Publisher:
    """Sends notifications; never lets a messaging failure stop a cycle."""

    def __init__(self, conf: cfg.ConfigOpts, host: str,
                 transport: oslo_messaging.Transport | None = None) -> None:
        self.transport = transport or oslo_messaging.get_notification_transport(conf)
        # The operator's [oslo_messaging_notifications] driver wins; without
        # one, notifications go to the message bus.
        # A broker that is down costs a cycle one retry, not a hang.
        driver = (None if conf.oslo_messaging_notifications.driver
                  else 'messagingv2')
        self.notifier = oslo_messaging.Notifier(
            self.transport, publisher_id='tracker.%s' % host, topics=[TOPIC],
            driver=driver, retry=1)

    def publish(self, events: Iterable[Event]) -> int:
        sent = 0
        for event_type, payload in events:
            try:
                self.notifier.info({}, event_type, payload)
                sent += 1
            except Exception as exc:  # the broker is not the agent's job
                LOG.warning('notification %s not sent: %s', event_type, exc)
        return sent

    def close(self) -> None:
        self.transport.cleanup()
