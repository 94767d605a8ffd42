"""The [capacity] options: the flavors counted, and how many series a scrape gives."""
from oslo_config import cfg

SERIES = ('host', 'aggregate', 'cloud')

capacity_opts = [
    cfg.MultiStrOpt(
        'flavor', default=[],
        help='A flavor whose "how many more fit" the metrics show, as nova '
             'writes its extra specs: "NAME: CLASS=AMOUNT, ..., '
             'trait:TRAIT=required" (one option line per flavor), e.g. '
             '"m1.large: VCPU=4, MEMORY_MB=8192, DISK_GB=80".'),
    cfg.StrOpt(
        'series', default='host', choices=[
            ('host', "one series per provider and class, as openstack-exporter's "
                     'placement metrics (hostname is the provider name), and '
                     'flavor counts per host'),
            ('aggregate', 'the same sums per aggregate (label aggregate, its uuid; '
                          'providers in none without the label)'),
            ('cloud', 'the same sums per class for the whole cloud')],
        help='How finely capacity series are cut: per host, per aggregate, '
             'or per class only. Flavor totals, free capacity and the largest '
             'free allocation per class come in every case.'),
    cfg.IntOpt(
        'max_hosts', default=20000, min=0,
        help='With series = host, a cloud with more providers holding '
             'inventory than this is shown per aggregate instead (a bound '
             'on series for very large clouds); 0: no bound.'),
    cfg.BoolOpt(
        'consumer_allocations', default=False,
        help="With series = host (and within max_hosts), also one series per "
             "provider, consumer and class, as openstack-exporter's "
             'openstack_placement_resource_provider_allocations{hostname, '
             'resourcetype, uuid} (uuid: the consumer). Off by default: the '
             'number of series grows with the number of consumers, and each '
             'scrape renders them all.'),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(capacity_opts, group='capacity')


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [('capacity', capacity_opts)]
