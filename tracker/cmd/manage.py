"""tracker-manage: operator actions on the trackers and their aggregates.

  aggregates sync [--file F]          mirror an aggregates file into placement
  aggregates add-host AGG HOST        AGG: a uuid, or a name from the file
  aggregates remove-host AGG HOST
  refresh --host H                    ask H's agent for a cycle now (RPC cast)
  audit --host H [--json]             ask H's agent for its drift (RPC call)
  device clean ADDRESS [--host H]     lower a cleaned one-time-use device's
                                      reserved inventory (standalone agent)
  device drain ADDRESS --reason TEXT  take a device out of scheduling, on
  device undrain ADDRESS              this host, from the agent's next cycle
"""
import argparse
import json
import sys
from typing import TYPE_CHECKING

from oslo_config import cfg

from tracker import aggregates as aggregates_mod
from tracker.cmd import common

if TYPE_CHECKING:     # imported when a command needs it
    from tracker.placement.client import ReportClient

PROG = 'tracker-manage'


def _parser() -> argparse.ArgumentParser:
    parser = common.Parser(prog=PROG, description='Operator actions on the '
                           'trackers and their aggregates.')
    common.add_config_args(parser)
    sub = parser.add_subparsers(dest='command', required=True,
                                parser_class=common.Parser)

    aggs = sub.add_parser('aggregates', help='host aggregates in placement')
    common.add_config_args(aggs)
    agg_sub = aggs.add_subparsers(dest='action', required=True,
                                  parser_class=common.Parser)
    sync = agg_sub.add_parser('sync', help='mirror an aggregates file')
    common.add_config_args(sync)
    sync.add_argument('--file', help='aggregates YAML (default: [tracker] '
                      'aggregates_file)')
    for action in ('add-host', 'remove-host'):
        one = agg_sub.add_parser(action, help='%s by host name' % action)
        common.add_config_args(one)
        one.add_argument('aggregate', help='aggregate uuid, or name in --file')
        one.add_argument('host', help='host (compute node provider) name')
        one.add_argument('--file', help='aggregates YAML to resolve names')

    refresh = sub.add_parser('refresh', help="run a host's cycle now")
    common.add_config_args(refresh)
    refresh.add_argument('--host', required=True)

    audit = sub.add_parser('audit', help="a host's drift, from its agent")
    common.add_config_args(audit)
    audit.add_argument('--host', required=True)
    audit.add_argument('--json', action='store_true')
    audit.add_argument('--timeout', type=int, default=60,
                       help='seconds to wait for the agent')
    device = sub.add_parser('device', help="one device's provider")
    common.add_config_args(device)
    device_sub = device.add_subparsers(dest='action', required=True,
                                       parser_class=common.Parser)
    clean = device_sub.add_parser(
        'clean', help='a one-time-use device was cleaned: offer it again')
    common.add_config_args(clean)
    clean.add_argument('address', help='PCI address, e.g. 0000:81:00.0')
    clean.add_argument('--host', help='the agent\'s [DEFAULT] host (default: '
                       'this configuration\'s)')
    drain = device_sub.add_parser(
        'drain', help='no new allocation on a device (from the next cycle)')
    undrain = device_sub.add_parser('undrain', help='offer a drained device again')
    for one in (drain, undrain):
        common.add_config_args(one)
        one.add_argument('address', help='PCI address, e.g. 0000:81:00.0')
    drain.add_argument('--reason', required=True,
                       help='why (shown by the audit and the metrics)')
    return parser


def _aggregates_file(conf: cfg.ConfigOpts, args: argparse.Namespace,
                     required: bool) -> list[aggregates_mod.Aggregate]:
    path: str | None = args.file or conf.tracker.aggregates_file
    if not path:
        if required:
            raise aggregates_mod.AggregateFileError(
                'no aggregates file: give --file or set [tracker] aggregates_file')
        return []
    return aggregates_mod.load(path)


def _report_client(conf: cfg.ConfigOpts) -> 'ReportClient':
    from tracker.placement.client import ReportClient
    return ReportClient(conf=conf)


def aggregates(conf: cfg.ConfigOpts, args: argparse.Namespace) -> int:
    if args.action == 'sync':
        described = _aggregates_file(conf, args, required=True)
        report = aggregates_mod.sync(_report_client(conf), described)
        print(report.as_text())
        return report.exit_code
    from tracker.placement import errors
    described = _aggregates_file(conf, args, required=False)
    uuid = aggregates_mod.find(described, args.aggregate)
    client = _report_client(conf)
    try:
        outcome = client.aggregate_membership(uuid, args.host,
                                              args.action == 'add-host')
    except errors.PlacementError as exc:
        return common.fail(PROG, '%s %s %s failed: %s' % (
            args.action, args.aggregate, args.host, exc))
    print({'added': 'added %s to %s', 'removed': 'removed %s from %s',
           'unchanged': '%s already as asked in %s'}[outcome]
          % (args.host, args.aggregate))
    return 0


def refresh(conf: cfg.ConfigOpts, args: argparse.Namespace) -> int:
    from tracker import rpc
    client = rpc.Client(conf, args.host)
    try:
        client.refresh()
    finally:
        client.close()
    print('refresh requested from %s' % args.host)
    return 0


def audit(conf: cfg.ConfigOpts, args: argparse.Namespace) -> int:
    from tracker import audit as audit_mod
    from tracker import kept as kept_mod
    from tracker import rpc
    client = rpc.Client(conf, args.host, timeout=args.timeout)
    try:
        report = client.audit()
    except Exception as exc:
        return common.fail(PROG, 'no answer from the agent of %s: %s'
                           % (args.host, type(exc).__name__ if not str(exc) else exc))
    finally:
        client.close()
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(audit_mod.AuditReport(
            report['host'], [audit_mod.Drift(**d) for d in report['drift']],
            [audit_mod.Drift(**d) for d in report['foreign']],
            drained=report.get('drained', {}),
            kept=[kept_mod.KeptDevice(**k) for k in report.get('kept', [])]).as_text())
    return audit_mod.EXIT_IN_SYNC if report['in_sync'] else audit_mod.EXIT_DRIFT


def device(conf: cfg.ConfigOpts, args: argparse.Namespace) -> int:
    from tracker.drivers import layout
    from tracker.drivers import pci_spec
    from tracker.placement import devices
    from tracker.placement import errors
    address = pci_spec.canonical_address(args.address)
    if address is None:
        return common.fail(PROG, 'not a PCI address: %r' % args.address)
    if args.action in ('drain', 'undrain'):
        return _drain(conf, args, address)
    host = args.host or conf.host
    name = '%s_%s' % (host, address.upper())
    client = _report_client(conf)
    try:
        lowered = devices.clean(client.http, layout.device_uuid(host, address), name)
    except errors.PlacementError as exc:
        return common.fail(PROG, 'device clean %s failed: %s' % (address, exc))
    print('%s: reserved lowered for %s' % (name, ', '.join(lowered)) if lowered
          else '%s: not reserved, nothing to clean' % name)
    return 0


def _drain(conf: cfg.ConfigOpts, args: argparse.Namespace, address: str) -> int:
    """The agent of this host reads the drains from its state path."""
    from tracker.drivers import drains
    from tracker.drivers.errors import DiscoveryError
    state_path: str | None = conf.tracker.state_path
    if not state_path:
        return common.fail(PROG, 'no [tracker] state_path: the agent keeps no '
                           'drained devices')
    try:
        drained = drains.load(state_path, conf.host)
        if args.action == 'drain':
            reason = ' '.join(args.reason.split())
            if not reason:
                return common.fail(PROG, 'give a --reason')
            drained[address] = reason
        elif drained.pop(address, None) is None:
            print('%s was not drained' % address)
            return 0
        drains.save(state_path, conf.host, drained)
    except (DiscoveryError, OSError) as exc:
        return common.fail(PROG, 'device %s %s failed: %s'
                           % (args.action, address, exc))
    print('%s %s on %s from its next cycle' % (
        address, 'drained' if args.action == 'drain' else 'undrained', conf.host))
    return 0


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    conf = common.load_conf(args, PROG)
    return {'aggregates': aggregates, 'refresh': refresh,
            'audit': audit, 'device': device}[args.command](conf, args)


def main(argv: list[str] | None = None) -> int:
    return common.run(_main, PROG, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
