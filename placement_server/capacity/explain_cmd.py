"""placement-manage candidates explain '<query>': why no host was found.

    placement-manage candidates explain 'resources=VCPU:6,MEMORY_MB:2048' \\
        [--version 1.39] [--roots] [--json]

The first line says how many root providers fit or, when none does, the
commonest reason (one class short everywhere: the class and the largest
free amount on one provider); then the count per stage; with --roots,
each root's verdict.
"""
import argparse
import json

from oslo_config import cfg

from placement_server import cmd
from placement_server import errors
from placement_server.capacity import explain


def add_to(categories: 'argparse._SubParsersAction[cmd.ArgumentParser]') -> None:
    """The ``candidates`` category of placement-manage."""
    category = categories.add_parser('candidates', help='allocation candidates')
    actions = category.add_subparsers(dest='action', metavar='ACTION', required=True)
    parser = actions.add_parser('explain', help='for a query string as nova sends it, '
                                                'why each root provider fits or not')
    parser.add_argument('query', help="GET /allocation_candidates' query string")
    parser.add_argument('--version', dest='microversion', default='1.39',
                        help='the microversion the query is read at (default 1.39)')
    parser.add_argument('--roots', action='store_true', help="each root's verdict too")
    parser.add_argument('--json', action='store_true', help='print JSON')
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = cmd.open_database(conf, create=False)
    try:
        with db.reader() as conn:
            found = explain.explain(
                conn, args.query.lstrip('?'), args.microversion,
                seconds=conf.placement.allocation_candidates_time_limit or None)
    except errors.PlacementError as e:
        raise cmd.CommandError('candidates explain: %s' % e)
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(found.as_dict(per_root=args.roots), indent=2, sort_keys=True))
        return
    print(found.headline())
    for stage, n in found.counts().items():
        print('  %-16s %d' % (stage, n))
    if args.roots:
        for v in found.verdicts:
            print('%s  %-24s %-16s %s' % (v.root, v.name, v.stage, v.detail))
