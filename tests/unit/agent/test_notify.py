"""What the agent tells the cloud, built from what a cycle wrote."""
import time

from oslo_config import cfg
import oslo_messaging

from tracker import notify
from tracker.drivers.base import HostSnapshot
from tracker.drivers.base import Instance
from tracker.placement.client import AllocationResult
from tracker.placement.sync import SyncResult
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

ROOT = '11111111-1111-4111-8111-111111111111'
GPU = '22222222-2222-4222-8222-222222222222'
VM1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
GONE = 'dddddddd-dddd-4ddd-8ddd-dddddddddddd'
VF = '33333333-3333-4333-8333-333333333333'


def host():
    root = Provider(ROOT, 'compute1', inventories={'VCPU': inventory(32)})
    gpu = Provider(GPU, 'compute1_gpu0', parent_uuid=ROOT,
                   inventories={'VGPU': inventory(4)})
    return HostSnapshot('compute1', [root, gpu], [
        Instance(VM1, 'vm1', 'p', 'u', {ROOT: {'VCPU': 2}})])


def test_events_for_what_was_written():
    synced = SyncResult(created=[GPU], updated={ROOT: ['inventories']},
                        deleted=[VF])
    allocated = AllocationResult(created=[VM1], deleted=[GONE])
    events = notify.notifications(synced, allocated, host())
    assert [e[0] for e in events] == ['tracker.provider.create',
                                      'tracker.provider.update',
                                      'tracker.provider.delete',
                                      'tracker.allocation.update',
                                      'tracker.allocation.delete']
    create, update, delete, alloc, gone = [e[1] for e in events]
    assert create['tracker_object.name'] == 'ProviderPayload'
    assert create['tracker_object.version'] == '1.0'
    assert create['tracker_object.data']['uuid'] == GPU
    assert create['tracker_object.data']['parent_uuid'] == ROOT
    assert update['tracker_object.data']['changes'] == ['inventories']
    assert update['tracker_object.data']['inventories']['VCPU']['total'] == 32
    assert delete['tracker_object.data'] == {'uuid': VF}
    assert alloc['tracker_object.name'] == 'AllocationPayload'
    assert alloc['tracker_object.data']['consumer_uuid'] == VM1
    assert alloc['tracker_object.data']['allocations'] == {ROOT: {'VCPU': 2}}
    assert gone['tracker_object.data'] == {'consumer_uuid': GONE}


def test_nothing_written_nothing_sent():
    assert notify.notifications(SyncResult(), AllocationResult(), host()) == []


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


def test_device_drains_told_once_each_way():
    gpu, nic = '0000:81:00.0', '0000:3b:00.0'
    assert notify.device_drains(None, {gpu: 'ECC'}, 'compute1') == []   # at a start
    assert notify.device_drains({gpu: 'ECC'}, {gpu: 'ECC'}, 'compute1') == []
    events = notify.device_drains({gpu: 'ECC'}, {nic: 'AER fatal errors (0 -> 1)'},
                                  'compute1')
    assert [(e, p['tracker_object.name'], p['tracker_object.data']) for e, p in events] == [
        ('tracker.device.drain', 'DeviceDrainPayload', {
            'host': 'compute1', 'address': nic, 'reason': 'AER fatal errors (0 -> 1)'}),
        ('tracker.device.undrain', 'DeviceDrainPayload', {
            'host': 'compute1', 'address': gpu, 'reason': 'ECC'})]
