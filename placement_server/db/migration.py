"""Schema migrations (alembic) and the standard resource classes and traits.

``sync`` is what ``placement-manage db sync`` and ``placement-server
--sync-db`` run: upgrade to the newest schema, then make sure every
standard resource class and trait the installed os-resource-classes and
os-traits know is in the database. Running it again changes nothing.
"""
import os
from typing import Any

from alembic import command
from alembic import config as alembic_config
from alembic import script as alembic_script
import os_resource_classes
import os_traits
from oslo_config import cfg
import sqlalchemy as sa

from placement_server import retry
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import resource_classes
from placement_server.db import tables
from placement_server.db import takeover

_HERE = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection: sa.Connection | None = None) -> alembic_config.Config:
    cfg = alembic_config.Config(os.path.join(_HERE, 'alembic.ini'))
    cfg.set_main_option('script_location', _HERE)
    cfg.attributes['connection'] = connection
    return cfg


def head() -> str | None:
    return _scripts().get_current_head()


def _scripts() -> alembic_script.ScriptDirectory:
    return alembic_script.ScriptDirectory.from_config(_config())


def revisions() -> set[str]:
    """Every revision of ours this code knows."""
    return {script.revision for script in _scripts().walk_revisions()}


def found(db: api.Database) -> takeover.Schema:
    """The schema revisions the database holds: upstream's and ours."""
    with db.engine.connect() as conn:
        return takeover.found(conn)


def current(db: api.Database) -> str | None:
    """Our schema revision in the database (None: none of ours yet)."""
    return found(db).ours


def is_current(db: api.Database) -> bool:
    schema = found(db)
    return schema.ours == head() and schema.upstream in (None, takeover.UPSTREAM_HEAD)


def check(db: api.Database) -> None:
    """UnknownRevision when the database holds a revision this code does not know."""
    takeover.check(found(db), revisions())


def stamp(db: api.Database, revision: str) -> None:
    """Record ``revision`` (ours, 'head', or upstream's) without migrating."""
    with db.engine.begin() as conn:
        if revision in takeover.UPSTREAM_REVISIONS:
            takeover.stamp_upstream(conn, revision)
        elif revision == 'head' or revision in revisions():
            command.stamp(_config(conn), revision)
        else:
            raise takeover.UnknownRevision('unknown schema revision %s: neither ours nor '
                                           "upstream placement's" % revision)


@retry.replaying()
def _seed(db: api.Database) -> None:
    now = api.utcnow()
    with db.writer() as conn:
        have = set(conn.scalars(sa.select(tables.resource_classes.c.name)))
        classes = [n for n in os_resource_classes.STANDARDS if n not in have]
        resource_classes.insert_standard(conn, classes, now)
        have = set(conn.scalars(sa.select(tables.traits.c.name)))
        traits = [{'name': n, 'created_at': now} for n in os_traits.get_traits() if n not in have]
        if traits:
            conn.execute(tables.traits.insert(), traits)
            changes.note_names(conn)


def sync(db: api.Database, conf: Any = None) -> None:
    """Take over an upstream database if it is one, create or upgrade our
    schema (upstream's head recorded beside it in its own table), then
    seed the standard names. UnknownRevision, changing
    nothing, when the database holds a revision this code does not know."""
    conf = conf or _defaults()
    with db.engine.begin() as conn:
        schema = takeover.found(conn)
        takeover.check(schema, revisions())
        takeover.adopt(conn, conf, lambda revision: command.stamp(_config(conn), revision))
        command.upgrade(_config(conn), 'head')
        if not schema.upstream:
            # Our schema holds upstream's head (the way back, docs/install.md).
            takeover.stamp_upstream(conn, takeover.UPSTREAM_HEAD)
    _seed(db)


def _defaults() -> cfg.ConfigOpts:
    from placement_server import conf as conf_mod
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    return conf
