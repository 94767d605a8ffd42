"""Online data migrations: rows older placement releases left incomplete.

``placement-manage db online_data_migrations`` runs them (deployment tools
call it after every ``db sync``), and ``db sync`` itself before taking
over an upstream database whose later revisions refuse such rows. Each
is idempotent and returns how many rows it completed.
"""
import datetime
from typing import Any

import sqlalchemy as sa

from placement_server.db import api


def root_provider_ids(conn: sa.Connection, conf: Any) -> int:
    """Providers without a root provider id: a provider without a parent is
    its own root, a child has its parent's root."""
    done = conn.execute(sa.text(
        'UPDATE resource_providers SET root_provider_id = id '
        'WHERE root_provider_id IS NULL AND parent_provider_id IS NULL')).rowcount
    done = int(done)
    while True:   # one level of the tree at a time
        parents = conn.execute(sa.text(
            'SELECT c.id, p.root_provider_id FROM resource_providers c '
            'JOIN resource_providers p ON p.id = c.parent_provider_id '
            'WHERE c.root_provider_id IS NULL AND p.root_provider_id IS NOT NULL')).all()
        if not parents:
            return done
        conn.execute(sa.text('UPDATE resource_providers SET root_provider_id = :root '
                             'WHERE id = :id'),
                     [{'id': child, 'root': root} for child, root in parents])
        done += len(parents)


def _external_id(conn: sa.Connection, table: str, external_id: str,
                 now: datetime.datetime) -> int:
    select = sa.text('SELECT id FROM %s WHERE external_id = :e' % table)
    row = conn.execute(select, {'e': external_id}).first()
    if row is None:
        conn.execute(sa.text('INSERT INTO %s (external_id, created_at) VALUES (:e, :now)'
                             % table), {'e': external_id, 'now': now})
        row = conn.execute(select, {'e': external_id}).first()
    assert row is not None
    return int(row[0])


def incomplete_consumers(conn: sa.Connection, conf: Any) -> int:
    """Allocations whose consumer has no row (written before consumers were
    recorded): their consumer, in the configured incomplete project and user."""
    missing = conn.execute(sa.text(
        'SELECT DISTINCT a.consumer_id FROM allocations a '
        'LEFT JOIN consumers c ON c.uuid = a.consumer_id WHERE c.id IS NULL')).scalars().all()
    if not missing:
        return 0
    now = api.utcnow()
    project = _external_id(conn, 'projects', conf.placement.incomplete_consumer_project_id, now)
    user = _external_id(conn, 'users', conf.placement.incomplete_consumer_user_id, now)
    conn.execute(sa.text('INSERT INTO consumers (uuid, project_id, user_id, generation, '
                         'created_at) VALUES (:uuid, :project, :user, 0, :now)'),
                 [{'uuid': uuid, 'project': project, 'user': user, 'now': now}
                  for uuid in missing])
    return len(missing)


MIGRATIONS = (root_provider_ids, incomplete_consumers)


def run_all(conn: sa.Connection, conf: Any) -> dict[str, int]:
    """{migration's name: rows completed}."""
    return {migration.__name__: migration(conn, conf) for migration in MIGRATIONS}
