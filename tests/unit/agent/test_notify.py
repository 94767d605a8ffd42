"""What the agent tells the cloud, built from the drift a sync repaired."""
import time

import oslo_messaging
from oslo_config import cfg

from tracker import audit, notify
from tracker.drivers.base import HostSnapshot, Instance
from tracker.providers.provider import Provider, inventory

ROOT = '11111111-1111-4111-8111-111111111111'
GPU = '22222222-2222-4222-8222-222222222222'
VM1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
GONE = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'


def before_and_after():
    root = Provider(ROOT, 'compute1', inventories={'VCPU': inventory(16)})
    before = HostSnapshot('compute1', [root], [
        Instance(GONE, 'old', 'p', 'u', {ROOT: {'VCPU': 1}})])
    root2 = root.copy()
    root2.inventories['VCPU'] = inventory(32)
    gpu = Provider(GPU, 'compute1_gpu0', parent_uuid=ROOT,
                   inventories={'VGPU': inventory(4)})
    after = HostSnapshot('compute1', [root2, gpu], [
        Instance(VM1, 'vm1', 'p', 'u', {ROOT: {'VCPU': 2}})])
    return before, after


def test_events_for_each_change():
    before, after = before_and_after()
    drift = audit.compute_drift(
        after, before.providers,
        {i.uuid: i.allocations for i in before.instances})
    events = dict(notify.notifications(drift, after.providers, after.instances))
    assert sorted(events) == ['tracker.allocation.delete',
                              'tracker.allocation.update',
                              'tracker.provider.create',
                              'tracker.provider.update']
    create = events['tracker.provider.create']
    assert create['tracker_object.name'] == 'ProviderPayload'
    assert create['tracker_object.version'] == '1.0'
    assert create['tracker_object.data']['uuid'] == GPU
    assert create['tracker_object.data']['parent_uuid'] == ROOT
    update = events['tracker.provider.update']['tracker_object.data']
    assert update['changes'] == ['inventory_differs']
    assert update['inventories']['VCPU']['total'] == 32
    alloc = events['tracker.allocation.update']['tracker_object.data']
    assert alloc['consumer_uuid'] == VM1
    assert alloc['allocations'] == {ROOT: {'VCPU': 2}}
    gone = events['tracker.allocation.delete']['tracker_object.data']
    assert gone == {'consumer_uuid': GONE}


def test_no_change_no_event():
    _, after = before_and_after()
    drift = audit.compute_drift(
        after, after.providers,
        {i.uuid: i.allocations for i in after.instances})
    assert notify.notifications(drift, after.providers, after.instances) == []


class Collector:
    def __init__(self):
        self.received = []

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.append((publisher_id, event_type, payload))


def test_publisher_on_the_fake_transport():
    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(conf, url='fake:/')
    collector = Collector()
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=notify.TOPIC)], [collector],
        executor='threading')
    listener.start()
    try:
        publisher = notify.Publisher(conf, 'compute1', transport=transport)
        sent = publisher.publish([('tracker.provider.delete',
                                   notify.envelope('ProviderPayload', {'uuid': GPU}))])
        assert sent == 1
        deadline = time.time() + 5
        while not collector.received and time.time() < deadline:
            time.sleep(0.05)
    finally:
        listener.stop()
        listener.wait()
    assert collector.received == [(
        'tracker.compute1', 'tracker.provider.delete',
        notify.envelope('ProviderPayload', {'uuid': GPU}))]
