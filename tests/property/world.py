"""Provider trees written straight into the tables, and kept in memory.

Allocation candidate tests need trees with inventories, usage, traits and
aggregates; writing the rows directly keeps those tests independent of the
other endpoints, and the in-memory copy is what the brute-force reference
(tests/property/reference.py) reads.
"""
import contextlib
import dataclasses
import uuid as uuidlib

import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import changes
from placement_server.db import resource_classes
from placement_server.db import tables


@dataclasses.dataclass
class Inventory:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = None
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self):
        return int((self.total - self.reserved) * self.allocation_ratio)


@dataclasses.dataclass
class Provider:
    id: int
    uuid: str
    name: str
    parent: 'Provider' = None
    root: 'Provider' = None
    inventories: dict = dataclasses.field(default_factory=dict)   # class -> Inventory
    used: dict = dataclasses.field(default_factory=dict)          # class -> amount
    traits: set = dataclasses.field(default_factory=set)
    aggregates: set = dataclasses.field(default_factory=set)


class World:

    def __init__(self, db):
        self.db = db
        self.providers = {}     # uuid -> Provider
        self._batch = None

    @contextlib.contextmanager
    def batch(self):
        """Write everything done inside the block in one transaction."""
        with self.db.writer() as conn:
            self._batch = conn
            try:
                yield self
            finally:
                self._batch = None
            # rows written behind the API's back: the workers' views reload
            changes.invalidate_all(conn)

    @contextlib.contextmanager
    def _writer(self):
        if self._batch is not None:
            yield self._batch
        else:
            with self.db.writer() as conn:
                yield conn
                changes.invalidate_all(conn)

    def ensure_traits(self, *names):
        with self._writer() as conn:
            for name in names:
                self._id_of(conn, 'traits', 'name', name)

    def _id_of(self, conn, table, column, value, **extra):
        tbl = tables.metadata.tables[table]
        found = conn.execute(sa.select(tbl.c.id).where(tbl.c[column] == value)).scalar()
        if found is None and table == 'resource_classes':
            # custom ids are the API's to give (from 10000, as upstream's)
            resource_classes.create(conn, value)
            found = conn.execute(sa.select(tbl.c.id).where(tbl.c[column] == value)).scalar()
        elif found is None:
            found = conn.execute(tbl.insert().values(
                {column: value, 'created_at': api.utcnow(), **extra})).inserted_primary_key[0]
        return found

    def provider(self, name, parent=None, uuid=None):
        uuid = uuid or str(uuidlib.uuid4())
        rp = tables.resource_providers
        with self._writer() as conn:
            new_id = conn.execute(rp.insert().values(
                uuid=uuid, name=name, generation=0, created_at=api.utcnow(),
                parent_provider_id=parent.id if parent else None)).inserted_primary_key[0]
            root = parent.root if parent else None
            conn.execute(rp.update().where(rp.c.id == new_id).values(
                root_provider_id=root.id if root else new_id))
        prov = Provider(new_id, uuid, name, parent)
        prov.root = root or prov
        self.providers[uuid] = prov
        return prov

    def inventory(self, prov, rc, total, **kw):
        inv = Inventory(total, **kw)
        if inv.max_unit is None:
            inv.max_unit = total
        with self._writer() as conn:
            rc_id = self._id_of(conn, 'resource_classes', 'name', rc)
            conn.execute(tables.inventories.insert().values(
                resource_provider_id=prov.id, resource_class_id=rc_id,
                created_at=api.utcnow(), **dataclasses.asdict(inv)))
        prov.inventories[rc] = inv
        return inv

    def traits(self, prov, *names):
        with self._writer() as conn:
            for name in names:
                trait_id = self._id_of(conn, 'traits', 'name', name)
                conn.execute(tables.resource_provider_traits.insert().values(
                    resource_provider_id=prov.id, trait_id=trait_id, created_at=api.utcnow()))
        prov.traits |= set(names)

    def aggregate(self, prov, *agg_uuids):
        with self._writer() as conn:
            for agg in agg_uuids:
                agg_id = self._id_of(conn, 'placement_aggregates', 'uuid', agg)
                conn.execute(tables.resource_provider_aggregates.insert().values(
                    resource_provider_id=prov.id, aggregate_id=agg_id,
                    created_at=api.utcnow()))
        prov.aggregates |= set(agg_uuids)

    def allocate(self, prov, rc, used, consumer=None):
        with self._writer() as conn:
            rc_id = self._id_of(conn, 'resource_classes', 'name', rc)
            conn.execute(tables.allocations.insert().values(
                resource_provider_id=prov.id, resource_class_id=rc_id, used=used,
                consumer_id=consumer or str(uuidlib.uuid4()), created_at=api.utcnow()))
        prov.used[rc] = prov.used.get(rc, 0) + used
