"""tracker-agent: report this host to placement, every interval.

``--once`` runs one cycle, prints the provider tree it reported with its
usage, and exits 0 when it synced (1 otherwise). ``audit`` is
tracker-audit.
"""
import argparse
import sys
from typing import TYPE_CHECKING

from tracker.cmd import audit as audit_cmd
from tracker.cmd import common

if TYPE_CHECKING:     # imported when a command needs it
    from tracker.agent import Agent

PROG = 'tracker-agent'


def _parser() -> argparse.ArgumentParser:
    parser = common.Parser(prog=PROG, description=__doc__.splitlines()[0])
    common.add_config_args(parser)
    parser.add_argument('--once', action='store_true',
                        help='run one cycle, print the tree, exit')
    sub = parser.add_subparsers(dest='command', parser_class=common.Parser)
    audit = sub.add_parser('audit', help='compare the host with placement')
    common.add_config_args(audit)
    audit_cmd.add_audit_args(audit)
    return parser


def run_once(agent: 'Agent') -> int:
    from tracker import audit as audit_mod
    from tracker import usage
    result = agent.run_cycle()
    if not result.ok:
        return common.fail(PROG, result.summary())
    print(result.summary())
    # beside nova-compute, the tree is nova's
    snapshot = agent.last_snapshot
    assert snapshot is not None and agent.client is not None   # the cycle synced
    root = agent.compute_node or snapshot.root.uuid
    providers, allocations = audit_mod.placement_view(agent.client, root)
    print(usage.format_tree(providers, allocations))
    return 0


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    daemon = args.command is None and not args.once
    conf = common.load_conf(args, PROG, daemon=daemon)
    if args.command == 'audit':
        return audit_cmd.run_audit(conf, args, PROG)
    from tracker import agent as agent_mod
    agent = agent_mod.Agent(conf)
    if args.once:
        try:
            return run_once(agent)
        finally:
            if agent.driver is not None:
                agent.driver.close()
    return agent_mod.run(conf, agent)


def main(argv: list[str] | None = None) -> int:
    return common.run(_main, PROG, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
