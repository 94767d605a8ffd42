"""tracker-audit: compare this host with placement, once.

Exit 0 in sync (or repaired), 3 drift found, 1 error.
"""
import argparse
import json
import sys

from oslo_config import cfg

from tracker import audit as audit_mod
from tracker.cmd import common

PROG = 'tracker-audit'


def add_audit_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--json', action='store_true',
                        help='print the report as JSON')
    # --fix --dry-run together would silently be a dry run: refused.
    repair = parser.add_mutually_exclusive_group()
    repair.add_argument('--fix', action='store_true',
                        help='repair the drift, then check again')
    repair.add_argument('--dry-run', action='store_true',
                        help='print the writes a repair would make, make none')


def run_audit(conf: cfg.ConfigOpts, args: argparse.Namespace, prog: str = PROG) -> int:
    from tracker.agent import Agent
    agent = Agent(conf)
    try:
        report = agent.audit(fix=args.fix, dry_run=args.dry_run)
    except Exception as exc:
        if args.json:
            print(json.dumps({'error': str(exc)}))
        return common.fail(prog, exc, audit_mod.EXIT_ERROR)
    finally:
        if agent.driver is not None:
            agent.driver.close()
    print(json.dumps(report.as_dict(), indent=2, sort_keys=True)
          if args.json else report.as_text())
    return report.exit_code


def _main(argv: list[str] | None) -> int:
    parser = common.Parser(prog=PROG, description=__doc__.splitlines()[0])
    common.add_config_args(parser)
    add_audit_args(parser)
    args = parser.parse_args(argv)
    conf = common.load_conf(args, PROG)
    return run_audit(conf, args)


def main(argv: list[str] | None = None) -> int:
    return common.run(_main, PROG, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
