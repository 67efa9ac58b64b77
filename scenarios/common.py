"""What every scenario shares: the fabric options, and parsing that refuses bad input in one line.

A scenario module has NAME, HELP, ``add_arguments(parser)``, ``prepare(args)``, which checks every
option and builds the plain-data plan (no root, nothing built, nothing written; the plan's
``fabrics`` lists the topologies it will emulate, and a plan that only models fabrics lists them
as ``modelled`` instead: such a run needs no root, and its module sets ``EMULATES = False`` so that
it is offered none of the emulation's options), and ``run(plan, experiment)``, which builds,
checks, measures and writes (``experiments.Experiment``: ``experiment.emulate`` builds a fabric
with the run's settings, ``experiment.results`` is the run's folder), returning the exit code.
"""
import time
from dataclasses import dataclass, replace

from testbed import api
from testbed.api import (
    BONDS,
    DEFAULT_MTU,
    DEFAULT_QUEUE,
    DEFAULT_RATE,
    EAGER_LIMIT,
    FORMS,
    HPN_UPLINK_CAPACITY,
    RATIOS,
    TestbedError,
    faster_uplinks,
    from_spec,
    plane_forms,
    routing,
)
from testbed.experiments import sweep
from testbed.experiments.trials import MARKED

ROUTINGS = ("ecmp", "pinned", "planned")
MARKED_CONTROLS = ("dctcp", "cubic", "reno")      # congestion controls that act on ECN's marks
MAX_SEED = 2**31 - 1


def add_seed_argument(parser, what="the first trial's draw"):
    parser.add_argument("--seed", type=int, default=None, help=f"{what} (default: a new one, said in the output)")


def seed_of(args):
    """--seed, checked, or a new one drawn from the clock."""
    if args.seed is None:
        return int(time.time() * 1000) % 1_000_000
    if not 0 <= args.seed <= MAX_SEED:
        raise TestbedError(f"--seed must be between 0 and {MAX_SEED} (got {args.seed})")
    return args.seed


def add_fabric_arguments(parser, topology, scaleup=0.0, rate=DEFAULT_RATE):
    """The fabric's options; scaleup: --scaleup's default (None: the scenario offers no scale-up domain)."""
    parser.add_argument("--topology", default=topology, help=f"{FORMS} (default %(default)s)")
    parser.add_argument("--rate", type=float, default=rate, help="link rate, Mbit/s (default %(default)s)")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                        help="egress FIFO limit per link end, packets (default %(default)s)")
    parser.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of every link (default %(default)s)")
    parser.add_argument("--delay", type=float, default=0.0,
                        help="one-way delay added on every link, ms (needs the kernel's netem; default none)")
    if scaleup is not None:
        parser.add_argument("--scaleup", type=float, default=scaleup,
                            help="every server's scale-up domain (NVLink-like: a direct link between each two of its "
                                 "accelerators, no switch) at this many times a NIC's rate; 0: none, a server's "
                                 "accelerators talk over the fabric (default %(default)s)")


def add_plane_arguments(parser, emulated=True):
    """The options of a single- against dual-plane comparison on HPN7 (hpn7_planes, hpn7_rails,
    hpn7_at_scale); an emulated one also takes the load-balancing schemes."""
    if emulated:
        add_scheme_arguments(parser, streams=4, routings=ROUTINGS, uplinks=True)
    parser.add_argument("--uplink-capacity", type=float, default=HPN_UPLINK_CAPACITY,
                        help="a ToR's uplink capacity over its NIC-facing capacity, the same in both forms "
                             "(default %(default)s: HPN 7.0's 60 x 400G up for 128 x 200G down)")
    parser.add_argument("--hash", choices=routing.HASHES, default="same",
                        help="same: one hash function and basis at every switch, as real switches; "
                             "per-switch: a basis of each switch's own (default %(default)s)")
    parser.add_argument("--bond", choices=BONDS, default="round-robin",
                        help="how a bonded NIC spreads its connections over its two ports: round-robin "
                             "(connection i on port i mod 2, as an RDMA NIC places queue pairs) or hash "
                             "(a layer-3+4 hash, as a Linux bond) (default %(default)s)")


def add_scheme_arguments(parser, *, streams=None, routings=None, uplinks=False):
    """The load-balancing schemes (load_balancing's, docs/scenarios/load_balancing.md) as options
    of a scenario whose fabric ECMP routes: connections per peer (default `streams`), how the
    switches choose paths (from `routings`), fewer faster uplinks."""
    if streams is not None:
        parser.add_argument("--streams", type=int, default=streams,
                            help="TCP connections per peer, 1 to 16: more spread a peer's traffic over more paths "
                                 "(Meta's queue pairs per peer) (default %(default)s)")
    if routings:
        parser.add_argument("--routing", choices=routings, default="ecmp",
                            help="ecmp: each switch hashes a connection's 5-tuple over its next hops; pinned: "
                                 "one next hop per destination, chosen by the destination; planned: the "
                                 "controller learns the long flows from its rules' counters and places them on "
                                 "paths apart (Alibaba's C4P) (default %(default)s)")
    if uplinks:
        parser.add_argument("--uplink-ratio", type=int, default=1, choices=RATIOS,
                            help="a leaf's (ToR's) uplinks at this many times their rate, this many times fewer: "
                                 "the same uplink capacity over fewer links (ByteDance's MegaScale) "
                                 "(default %(default)s)")


def plane_options(args, base):
    """(the [single plane, dual plane] forms of the HPN7 base, with --uplink-capacity and
    --uplink-ratio; connections per peer), checked."""
    return [with_uplinks(form, args) for form in plane_forms(base, args.uplink_capacity)], streams_option(args)


def streams_option(args):
    if not 1 <= args.streams <= 16:
        raise TestbedError(f"--streams must be between 1 and 16 (got {args.streams})")
    return args.streams


def with_uplinks(topo, args):
    """The fabric with --uplink-ratio's fewer, faster uplinks (itself at 1), checked."""
    return faster_uplinks(topo, args.uplink_ratio)


@dataclass
class SweepPlan:
    """The plan of nccl-tests' size sweeps on one fabric (bigraph_allreduce, collectives)."""
    topo: object
    mtu: int
    placed: dict          # {variant: (schedule, hosts)}, or {collective: that}
    sizes: list
    warmup: int
    iters: int
    eager_limit: int

    @property
    def fabrics(self):
        return [self.topo]


@dataclass
class PlaneTrials:
    """The plan of a single- against dual-plane comparison over paired trials (hpn7_planes, hpn7_rails)."""
    forms: list          # [single plane, dual plane]
    mtu: int
    hash: str
    bond: str
    size: int
    iters: int
    streams: int
    trials: int
    seed: int
    routing: str = "ecmp"

    @property
    def fabrics(self):
        return self.forms


def add_sweep_arguments(parser):
    """The options of an nccl-tests-style size sweep (bigraph_allreduce, collectives)."""
    parser.add_argument("--min-bytes", type=int, default=1024, help="smallest message (default %(default)s)")
    parser.add_argument("--max-bytes", type=int, default=1 << 20, help="largest message (default %(default)s)")
    parser.add_argument("--factor", type=int, default=4, help="size multiplier per step (default %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed iterations per size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=10,
                        help="timed iterations per size, at least (small sizes get more; default %(default)s)")
    parser.add_argument("--eager-limit", type=int, default=EAGER_LIMIT,
                        help="larger messages wait for the receiver's clear-to-send; a huge value sends "
                             "every message at once (default %(default)s)")


def sweep_options(args):
    """(sizes, warmup, iters, eager limit) of the sweep options, checked."""
    return (sweep.sizes(args.min_bytes, args.max_bytes, args.factor), at_least(args.warmup, 0, "--warmup"),
            at_least(args.iters, 1, "--iters"), at_least(args.eager_limit, 0, "--eager-limit", " bytes"))


def fabric(args, spec=None, option="--topology"):
    """The topology the fabric options describe (spec, given as `option`, overrides --topology),
    checked; a spec that names no fabric is refused naming the option."""
    spec = spec or args.topology
    try:
        from_spec(str(spec))            # the spec alone: the rate and queue are checked by their options' names
    except TestbedError as e:
        raise TestbedError(str(e) if str(e).startswith(option) else f"{option} {spec}: {e}") from None
    return api.fabric(spec, rate=args.rate, queue=args.queue, delay=getattr(args, "delay", 0.0), mtu=args.mtu,
                      scaleup=getattr(args, "scaleup", None))


def names(text, option, allowed):
    """A comma-separated list of known names, at least one."""
    found = [n.strip() for n in text.split(",") if n.strip()]
    if not found:
        raise TestbedError(f"{option} is empty: give one or more of {', '.join(allowed)}")
    unknown = [n for n in found if n not in allowed]
    if unknown:
        raise TestbedError(f"{option}: unknown {', '.join(unknown)}: use one or more of {', '.join(allowed)}")
    return found


def counts(text, option):
    """A comma-separated list of positive whole numbers, at least one."""
    try:
        found = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        raise TestbedError(f"{option} should be whole numbers separated by commas (got {text!r})") from None
    if not found or min(found) < 1:
        raise TestbedError(f"{option} needs one or more positive whole numbers (got {text!r})")
    return found


def positive(args, *options):
    """Each of the options (their dests) checked positive, whether or not this run uses it."""
    for option in options:
        value = getattr(args, option)
        if not value > 0:
            raise TestbedError(f"--{option.replace('_', '-')} must be positive (got {value:g})")


def at_least(value, minimum, option, unit=""):
    if value < minimum:
        raise TestbedError(f"{option} must be at least {minimum}{unit} (got {value})")
    return value


def add_ecn_comparison_arguments(parser):
    """--compare-ecn K and --compare-cc: every form measured also with ECN marking, paired."""
    parser.add_argument("--compare-ecn", type=int, metavar="K", default=None,
                        help="also run every form with every switch port marking ECN-capable packets above K bytes "
                             "and the ranks on --compare-cc, paired trial by trial (default: drop-tail only)")
    parser.add_argument("--compare-cc", metavar="NAME", default=None,
                        help="the ranks' congestion control under --compare-ecn: cubic, reno or dctcp (default dctcp)")


def marking_of(args, topos):
    """(K, congestion control) of --compare-ecn, checked against every fabric, or None."""
    if args.compare_ecn is None:
        if args.compare_cc is not None:
            raise TestbedError("--compare-cc is the ranks' congestion control under --compare-ecn: "
                               "give --compare-ecn K")
        return None
    if getattr(args, "ecn", None) or getattr(args, "cc", None):
        raise TestbedError("--compare-ecn runs every form with and without marking: drop --ecn and --cc")
    if getattr(args, "machines", None):
        raise TestbedError("--compare-ecn sets the hosts' TCP on one machine's fabric: run it without --machines")
    for topo in topos:
        api.check_ecn(args.compare_ecn, topo.queue, args.mtu, "--compare-ecn")
    cc = args.compare_cc or "dctcp"
    if cc not in MARKED_CONTROLS:
        raise TestbedError(f"--compare-cc {cc}: use one of {', '.join(MARKED_CONTROLS)} (BBR does not act on marks)")
    api.check_congestion_control(cc, "--compare-cc")
    return args.compare_ecn, cc


def with_marking(forms, marking):
    """Each form, followed by its twin under marking ('LABEL+ecn': ECN at K, the ranks on its
    congestion control) where marking is given."""
    if marking is None:
        return list(forms)
    k, cc = marking
    return [f for form in forms for f in (form, replace(form, label=form.label + MARKED, ecn=k,
                                                         congestion_control=cc))]
