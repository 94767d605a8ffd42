"""Capacity as Prometheus series, read from the worker's resource view.

Per provider and class, under openstack-exporter's names and labels, so
its users' dashboards and alerts work unchanged::

    openstack_placement_resource_total{hostname, resourcetype}
    openstack_placement_resource_reserved{hostname, resourcetype}
    openstack_placement_resource_allocation_ratio{hostname, resourcetype}
    openstack_placement_resource_usage{hostname, resourcetype}
    openstack_placement_resource_generation{hostname, resourcetype}
    openstack_placement_resource_provider_allocations{hostname, resourcetype, uuid}
        what consumer ``uuid`` holds, with [capacity] consumer_allocations

(``hostname`` is the provider's name, as the exporter sets it; a nested
provider -- a NUMA cell, a PF -- is its own series as there. Read from
openstack-exporter's exporters/placement.go at a94a54f, 2026-08-06.)
Beyond the exporter:

    openstack_placement_flavor_fits{flavor}                  summed over hosts
    openstack_placement_flavor_host_fits{flavor, hostname}   per root provider
    openstack_placement_resource_free{resourcetype}          free capacity, summed
    openstack_placement_resource_largest_free{resourcetype}  the largest one
                                                             allocation a provider takes

A scrape is text rendered here, not prometheus_client's objects: at 10000
providers those cost a second per scrape. The view is brought up to date
(its usual one statement), then only the trees it says changed are
computed and rendered again (``figures.Trees``).
"""
from collections.abc import Iterable
import logging
import threading

from oslo_config import cfg

from placement_server import view as view_mod
from placement_server.capacity import consumers as consumers_mod
from placement_server.capacity import figures
from placement_server.capacity import flavors as flavors_mod
from placement_server.capacity import inventory
from placement_server.capacity import running as running_mod

LOG = logging.getLogger(__name__)

PREFIX = 'openstack_placement_resource_'
# openstack-exporter's placement metrics, in its order of columns
EXPORTER = ('total', 'reserved', 'allocation_ratio', 'usage')
HELP = {
    'total': 'Total of the inventory (openstack-exporter: resource_total).',
    'reserved': 'Reserved of the inventory.',
    'allocation_ratio': 'Allocation ratio of the inventory (summed series: '
                        'the ratio that makes (total - reserved) * ratio the capacity).',
    'usage': 'Allocated of the inventory.',
}
GENERATION = PREFIX + 'generation'
ALLOCATIONS = PREFIX + 'provider_allocations'
FITS = 'openstack_placement_flavor_fits'
HOST_FITS = 'openstack_placement_flavor_host_fits'
FREE = PREFIX + 'free'
LARGEST = PREFIX + 'largest_free'


def _label(value: str) -> str:
    return value.replace('\\', r'\\').replace('"', r'\"').replace('\n', r'\n')


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 2 ** 53:
        return str(int(value))
    return repr(float(value))


def _header(name: str, text: str) -> str:
    return '# HELP %s %s\n# TYPE %s gauge\n' % (name, text, name)


class Exporter:
    """The capacity series of one database, as exposition text."""

    def __init__(self, db: object, flavors: list[flavors_mod.Flavor], series: str = 'host',
                 max_hosts: int = 0, consumer_allocations: bool = False) -> None:
        self.db = db
        self.flavors = flavors
        self.series = series
        self.max_hosts = max_hosts
        self.consumer_allocations = consumer_allocations
        self.trees = figures.Trees(flavors)
        self._warned = False
        self._last: tuple[object, bytes] | None = None
        self._running = running_mod.Running(len(EXPORTER) + len(flavors))

    def text(self) -> bytes:
        with self.db.reader() as conn:   # type: ignore[attr-defined]
            view = view_mod.of(conn)
            with view.lock:
                view.refresh(conn)
                raw = inventory.current(view, conn)
                trees = self.trees.current(view, raw)
                held = (consumers_mod.current(view, conn).of
                        if self.consumer_allocations and self.series == 'host' else None)
                # Unchanged since the last scrape: the same text.
                key = (view.version, id(view.class_ids), id(view.trait_ids))
                if self._last is None or self._last[0] != key:
                    self._last = (key, self.render(view, trees, held))
                return self._last[1]

    def render(self, view: view_mod.ResourceView, trees: dict[int, figures.TreeFigures],
               held: consumers_mod.Held | None = None) -> bytes:
        series = self.series
        if series == 'host' and self.max_hosts and len(view.classes_of) > self.max_hosts:
            if not self._warned:
                LOG.warning('capacity: %d providers hold inventory, more than '
                            '[capacity] max_hosts (%d): series per aggregate',
                            len(view.classes_of), self.max_hosts)
                self._warned = True
            series = 'aggregate'
        running = self._running
        running.update(trees, (lambda tree: self._tree_text(view, tree))
                       if series == 'host' else None)
        out: list[bytes] = []
        if series == 'host':
            for i, name in enumerate(EXPORTER):
                out += [_header(PREFIX + name, HELP[name]).encode(), running.column(i)]
            out.append(self._generations(view))
            if held is not None:
                out.append(self._allocations(view, held))
        else:
            out += (line.encode() for line in self._summed(
                view, [trees[root] for root in sorted(trees)], series == 'aggregate'))
        if self.flavors:
            out.append(_header(FITS, 'How many more instances of the flavor fit, summed '
                                     'over hosts.').encode())
            out += (('%s{flavor="%s"} %d\n' % (FITS, _label(f.name), n)).encode()
                    for f, n in zip(self.flavors, running.fits))
            if series == 'host':
                out.append(_header(HOST_FITS, 'How many more instances of the flavor fit on '
                                              'the host (a root provider and its tree).'
                                   ).encode())
                out += (running.column(len(EXPORTER) + i) for i in range(len(self.flavors)))
        out += (line.encode() for line in self._free(view, running))
        return b''.join(out)

    @staticmethod
    def _generations(view: view_mod.ResourceView) -> bytes:
        # The exporter repeats the provider's generation for each class of
        # its inventory (a provider without inventory has none).
        details, names = view.details, view.class_names
        out = [_header(GENERATION, "The provider's generation, per class of its inventory "
                                   '(openstack-exporter: resource_generation).')]
        for rp, row in sorted(view.rows.items()):
            host = _label(details[rp][0])
            out += ('%s{hostname="%s",resourcetype="%s"} %d\n' % (
                GENERATION, host, _label(names.get(rc, str(rc))), row.generation)
                for rc in sorted(view.classes_of.get(rp, ())))
        return ''.join(out).encode()

    @staticmethod
    def _allocations(view: view_mod.ResourceView, held: consumers_mod.Held) -> bytes:
        details, names = view.details, view.class_names
        out = [_header(ALLOCATIONS, 'What the consumer (uuid) holds of the class on the '
                                    'provider (openstack-exporter: '
                                    'resource_provider_allocations).')]
        for rp in sorted(held):
            if rp not in details:   # made after the view's refresh: the next scrape
                continue
            host = _label(details[rp][0])
            out += ('%s{hostname="%s",resourcetype="%s",uuid="%s"} %d\n' % (
                ALLOCATIONS, host, _label(names.get(rc, str(rc))), _label(consumer), used)
                for consumer, rc, used in sorted(held[rp]))
        return ''.join(out).encode()

    def _tree_text(self, view: view_mod.ResourceView, tree: figures.TreeFigures
                   ) -> list[bytes]:
        details, class_names = view.details, view.class_names
        lines: list[list[str]] = [[] for _ in EXPORTER]
        for rp, rc, total, reserved, ratio, used in tree.lines:
            labels = '{hostname="%s",resourcetype="%s"} ' % (
                _label(details[rp][0]), _label(class_names.get(rc, str(rc))))
            for i, value in enumerate((total, reserved, ratio, used)):
                lines[i].append('%s%s%s%s\n' % (PREFIX, EXPORTER[i], labels, _number(value)))
        host = _label(details[tree.root][0])
        fits = ['%s{flavor="%s",hostname="%s"} %d\n' % (HOST_FITS, _label(f.name), host, n)
                for f, n in zip(self.flavors, tree.fits)]
        return [''.join(each).encode() for each in lines] + [line.encode() for line in fits]

    @staticmethod
    def _summed(view: view_mod.ResourceView, trees: list[figures.TreeFigures],
                by_aggregate: bool) -> Iterable[str]:
        # {(aggregate uuid, class): [total, reserved, capacity, used]}
        sums: dict[tuple[str, int], list[float]] = {}
        uuids = {agg: uuid for uuid, agg in view.aggregate_ids.items()}
        for tree in trees:
            for rp, rc, total, reserved, ratio, used in tree.lines:
                groups = [''] if not by_aggregate else (
                    [uuids.get(a, '') for a in view.aggregates.get(rp, ())] or [''])
                for group in groups:
                    entry = sums.setdefault((group, rc), [0, 0, 0.0, 0])
                    entry[0] += total
                    entry[1] += reserved
                    entry[2] += (total - reserved) * ratio
                    entry[3] += used
        names = view.class_names
        for i, name in enumerate(EXPORTER):
            yield _header(PREFIX + name, HELP[name])
            for (group, rc), summed in sorted(sums.items()):
                labels = 'aggregate="%s",' % group if group else ''
                if i == 2:
                    unreserved = summed[0] - summed[1]
                    value = summed[2] / unreserved if unreserved > 0 else 1.0
                else:
                    value = (summed[0], summed[1], 0, summed[3])[i]
                yield '%s%s{%sresourcetype="%s"} %s\n' % (
                    PREFIX, name, labels, _label(names.get(rc, str(rc))), _number(value))

    @staticmethod
    def _free(view: view_mod.ResourceView, running: running_mod.Running) -> Iterable[str]:
        names = view.class_names
        largest = running.largest()
        for name, values, text in (
                (FREE, running.free, 'Free capacity of the class, summed over providers.'),
                (LARGEST, largest, 'The largest amount of the class one allocation '
                                   'can still take from a single provider.')):
            yield _header(name, text)
            for rc in sorted(largest, key=lambda rc: names.get(rc, '')):
                yield '%s{resourcetype="%s"} %d\n' % (name, _label(names.get(rc, str(rc))),
                                                     values[rc])


# The process's exporter: a server process serves one database.
_INSTALLED: list[Exporter] = []
_LOCK = threading.Lock()


def install(conf: cfg.ConfigOpts, db: object) -> Exporter:
    """Export ``db``'s capacity wherever this process renders its scrape
    (``text()``, which the scrape appends to prometheus_client's series,
    wherever and on whichever port it is served). A flavor option that
    says no flavor is refused here, when the application is built."""
    exporter = Exporter(db, flavors_mod.parse_all(list(conf.capacity.flavor)),
                        conf.capacity.series, conf.capacity.max_hosts,
                        conf.capacity.consumer_allocations)
    with _LOCK:
        _INSTALLED[:] = [exporter]
    return exporter


def forget_after_fork() -> None:
    """In a child forked from a process that installed an exporter: drop
    it without closing its database connections, which the parent still
    uses (a closed PostgreSQL connection is closed for both)."""
    with _LOCK:
        for exporter in _INSTALLED:
            exporter.db.dispose(close=False)   # type: ignore[attr-defined]
        _INSTALLED.clear()


def text() -> bytes:
    """The capacity series as exposition text (b'' when none is installed)."""
    with _LOCK:
        exporter = _INSTALLED[0] if _INSTALLED else None
    return b'' if exporter is None else exporter.text()
