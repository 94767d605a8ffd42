"""ProviderTree and diff: pure, in memory."""
import threading

import pytest

from tracker.providers import diff as diff_mod
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.tree import ProviderTree


def host(vgpus_on_root=True):
    root = Provider('r', 'cn1', inventories={'VCPU': inventory(8)}, traits={'HW_CPU_X86_AVX'})
    numa0 = Provider('n0', 'cn1_numa0', 'r')
    gpu = Provider('g0', 'cn1_gpu0', 'n0')
    return [root, numa0, gpu]


def test_lookup_by_uuid_and_name_and_relations():
    tree = ProviderTree(host())
    assert tree.get('cn1').uuid == 'r'
    assert tree.get('g0').name == 'cn1_gpu0'
    assert [p.uuid for p in tree.children('r')] == ['n0']
    assert [p.uuid for p in tree.roots()] == ['r']
    assert tree.root_of('g0') == 'r'
    assert [p.uuid for p in tree.subtree('n0')] == ['n0', 'g0']
    assert 'cn1_numa0' in tree and 'nope' not in tree
    with pytest.raises(KeyError):
        tree.get('nope')


def test_add_rejects_duplicates_and_orphans():
    tree = ProviderTree(host())
    with pytest.raises(ValueError, match='already'):
        tree.add(Provider('r', 'other'))
    with pytest.raises(ValueError, match='named'):
        tree.add(Provider('x', 'cn1'))
    with pytest.raises(ValueError, match='parent'):
        tree.add(Provider('y', 'y', parent_uuid='missing'))


def test_remove_takes_the_subtree():
    tree = ProviderTree(host())
    assert sorted(tree.remove('n0')) == ['g0', 'n0']
    assert tree.uuids() == {'r'}


def test_handed_out_providers_and_snapshots_are_copies():
    tree = ProviderTree(host())
    got = tree.get('r')
    got.traits.add('CUSTOM_X')
    got.inventories['VCPU']['total'] = 99
    snap = tree.snapshot()
    tree.update('r', generation=5)
    assert tree.get('r').traits == {'HW_CPU_X86_AVX'}
    assert tree.get('r').inventories['VCPU']['total'] == 8
    assert snap.get('r').generation is None
    assert tree.get('r').generation == 5


def test_providers_come_parents_first_whatever_the_insert_order():
    tree = ProviderTree()
    tree.add(Provider('r', 'root'))
    tree.add(Provider('a', 'a', 'r'))
    tree.add(Provider('b', 'b', 'a'))
    tree.update('a', parent_uuid=None)   # a becomes a root of its own
    tree.update('r', parent_uuid='b')    # and r moves under b
    order = [p.uuid for p in tree.providers()]
    assert order == ['a', 'b', 'r']


def test_concurrent_writers_do_not_lose_providers():
    tree = ProviderTree([Provider('r', 'root')])

    def writer(n):
        for i in range(100):
            tree.add(Provider('%d-%d' % (n, i), 'p%d-%d' % (n, i), 'r'))
            tree.update('r', generation=i)
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tree) == 401


def test_diff_of_equal_trees_is_empty():
    known = ProviderTree(host())
    desired = ProviderTree(host())
    known.update('r', generation=7)      # generations are not compared
    assert not diff_mod.diff(desired, known)


def test_diff_creates_parents_first_and_deletes_children_first():
    known = ProviderTree(host())
    desired = ProviderTree(host()[:1] + [Provider('n1', 'cn1_numa1', 'r'),
                                         Provider('g1', 'cn1_gpu1', 'n1')])
    result = diff_mod.diff(desired, known)
    assert [p.uuid for p in result.create] == ['n1', 'g1']
    assert [p.uuid for p in result.delete] == ['g0', 'n0']
    assert result.update == []


def test_diff_says_exactly_what_changed():
    known = host()
    desired = host()
    desired[0].inventories['VCPU'] = inventory(16)
    desired[0].traits.add('CUSTOM_GOLD')
    desired[1].name = 'renamed'
    desired[2].parent_uuid = 'r'
    desired[2].aggregates = {'agg'}
    result = diff_mod.diff(desired, known)
    changes = {c.uuid: c.fields for c in result.update}
    assert changes == {'r': ('inventories', 'traits'), 'n0': ('name',),
                       'g0': ('parent', 'aggregates')}


def test_removed_resource_classes():
    known = Provider('r', 'cn1', inventories={'VCPU': inventory(8), 'VGPU': inventory(4)})
    desired = Provider('r', 'cn1', inventories={'VCPU': inventory(8)})
    change = diff_mod.diff([desired], [known]).update[0]
    assert change.removed_resource_classes() == {'VGPU'}


def test_a_renamed_provider_is_found_by_its_new_name_only():
    tree = ProviderTree(host())
    tree.update('n0', name='cn1_cell0')
    assert tree.get('cn1_cell0').uuid == 'n0'
    assert tree.find('cn1_numa0') is None
    tree.put(Provider('n0', 'cn1_numa0', 'r'))
    assert tree.find('cn1_cell0') is None and tree.get('cn1_numa0').uuid == 'n0'
    tree.remove('n0')
    assert tree.find('cn1_numa0') is None and tree.find('cn1_gpu0') is None
    tree.add(Provider('x', 'cn1_numa0', 'r'))      # the name is free again
