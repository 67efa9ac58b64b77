"""HPN 7.0's rails: a same-rail allreduce inside one segment against the same number of ranks
spread over two segments, and Multi-AllReduce, every rail running its own allreduce at once, on
the single-plane and the dual-plane form of one HPN7 fabric under ECMP.

Inside a segment every hop of a rail's allreduce is one ToR: the aggregation tier and its hashing
never see it (HPN puts 96% of jobs in one segment for that). Spread over two segments, every hop
crosses the aggregation tier. Multi-AllReduce is what a training job's rails do at once after a
step (the HPN paper's largest gain for dual plane, up to +158%): R collectives share the
aggregation tier, whose hashing decides how evenly.

Trial t draws fresh 5-tuples (``routing.hashing.Draw`` from seed + t) and runs every case on both
forms with them, the forms in alternating order, each on a freshly built fabric
(``experiments.trials``); the gain of dual plane per case is a paired ratio with its 95% interval
(``report.paired``). The forms are wired like with like (``topology.hpn7.plane_forms``). As in
hpn7_planes, every link is captured while a case runs, and each collective is measured against
the flow model from the paths its connections took (measured/model), and the paths against where
hashing puts them. The default fabric, two servers per segment, is one a 2-core machine carries:
with four, the dual plane's Multi-AllReduce (16 ranks sending at once) saturated the machine in
11 of 12 trials.
"""

from scenarios.common import (
    PlaneTrials,
    add_fabric_arguments,
    add_plane_arguments,
    add_seed_argument,
    at_least,
    fabric,
    plane_options,
    seed_of,
)
from testbed.api import ELEMENT_BYTES, HPN7, Comm, Ring, TestbedError, rail_ring
from testbed.experiments import Comparison, check_sweep, describe_all, figures, flag
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.trials import Form, check_line, model_lines, run_trials

NAME = "hpn7_rails"
HELP = "HPN7: segment-local against cross-segment allreduce, and Multi-AllReduce (every rail at once), both planes"


CASES = ("segment-local", "cross-segment", "multi-allreduce")
FORMS = ("single plane", "dual plane")
LISTEN_PORT = 7000          # emulation_launcher's: one rank per host
CLAIMS = (Claim("dual plane speeds up the cross-segment allreduce by 20% or more", "cross-segment: gain",
                at_least=0.2),
          Claim("dual plane speeds up Multi-AllReduce by 20% or more (HPN: up to +158%)", "multi-allreduce: gain",
                at_least=0.2),
          Claim("a segment-local allreduce never meets the aggregation tier: the planes do not differ",
                "segment-local: gain", at_least=-0.1, at_most=0.1))
SMOKE = ("--trials", "2", "--iters", "2", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/routing/hashing.py", "testbed/runs/together.py", "testbed/fidelity/flowmodel.py",
        "testbed/fidelity/predict.py", "testbed/experiments/trials.py", "testbed/report/paired.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,2,2,2")
    add_plane_arguments(parser)
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations per case (default %(default)s)")
    parser.add_argument("--trials", type=int, default=12,
                        help="paired trials, each on a fresh hash draw (default %(default)s)")
    add_seed_argument(parser, "the first trial's draw")


Plan = PlaneTrials


def cases(topo):
    """{case: [host list per collective]}: rail 0 inside segment 0, the same count of rail-0 ranks
    over two segments, and every rail over two segments at once."""
    half = range(topo.servers // 2)
    return {"segment-local": [rail_ring(topo, 0, (0,), range(topo.servers))],
            "cross-segment": [rail_ring(topo, 0, (0, 1), half)],
            "multi-allreduce": [rail_ring(topo, r, (0, 1), range(topo.servers)) for r in range(topo.rails)]}


def prepare(args):
    base = fabric(args)
    if not isinstance(base, HPN7) or base.segments < 2 or base.servers < 2 or base.servers % 2 or base.tors != 2:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 fabric of 2 or more segments and an even number (2 or "
                           f"more) of servers per segment (got {base.name}): use e.g. --topology hpn7:2,4,2,2")
    forms, streams = plane_options(args, base)
    largest = max(len(hosts) for group in cases(forms[0]).values() for hosts in group)
    at_least(args.bytes, ELEMENT_BYTES * largest, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    iters = at_least(args.iters, 1, "--iters")
    trials = at_least(args.trials, 2, "--trials", " (an interval needs two)")
    check_sweep([args.bytes], len(base.hosts), 6 * trials, base.bytes_per_s, 1, iters)
    seed = seed_of(args)
    return Plan(forms, args.mtu, args.hash, args.bond, args.bytes, iters, streams, trials, seed,
                routing=args.routing)


def measure(plan):
    """Every case on one form in one trial, on the trial's draw: one row per collective, each with
    what the capture saw while its case ran and measured over the flow model."""
    def one(emu, form, draw, trial, folder):
        for case, groups in cases(form.topo).items():
            comms = [Comm(Ring(), tuple(hosts), plan.streams, f"{case} {k}") for k, hosts in enumerate(groups)]
            got = emu.collectives(comms, plan.size, iters=plan.iters, draw=draw, name=case)
            for k, row in enumerate(got.rows):
                yield dict(row, algorithm="ring", planes=form.topo.planes, case=case, collective=k)
    return one


def line(row):
    model = f"{row['measured_over_model']:.2f}" if row.get("measured_over_model") is not None else "-"
    return (f"  trial {row['trial']} {FORMS[row['planes'] - 1]:12s} {row['case']:16s} #{row['collective']}  "
            f"{row['ranks']:2d} ranks  time {row['time_us'] / 1e3:8.1f} ms  busbw/NIC {row['busbw_over_nic']:.2f}  "
            f"measured/model {model}  paths as hashed {row.get('as_placed')}/{row['connections']}  "
            f"#wrong {row['wrong']}  {flag(row)}")


def case_busbw(rows, trial, planes, case):
    """A case's busbw/NIC in one trial on one form: the mean over its collectives."""
    values = [r["busbw_over_nic"] for r in rows if (r["trial"], r["planes"], r["case"]) == (trial, planes, case)]
    return sum(values) / len(values) if values else None


def comparisons(rows):
    trials = sorted({r["trial"] for r in rows})
    out = {case: Comparison(f"{case} busbw/NIC", FORMS, [(case_busbw(rows, t, 1, case), case_busbw(rows, t, 2, case))
                                                          for t in trials], 3) for case in CASES}
    for planes, form in ((1, FORMS[0]), (2, FORMS[1])):
        out[f"cross/local {planes}"] = Comparison(
            f"{form}: cross-segment against segment-local busbw", ("segment-local", "cross-segment"),
            [(case_busbw(rows, t, planes, "segment-local"), case_busbw(rows, t, planes, "cross-segment"))
             for t in trials], 3)
    return out


def heading(plan):
    topo = plan.forms[0]
    return (f"# {NAME}: ring allreduce of {plan.size} B, {plan.streams} connections per peer, "
            f"{'ECMP' if plan.routing == 'ecmp' else plan.routing + ' routing,'} hash {plan.hash}, "
            f"bond {plan.bond}, links {topo.rate:g} Mbit/s, ToR uplinks {topo.uplink_capacity:.4g} of NIC-facing "
            f"capacity, {plan.iters} iterations per case; {plan.trials} paired trials from seed {plan.seed}")


def run(plan, experiment):
    topo = plan.forms[0]
    experiment.header(heading(plan))
    experiment.about.update(hash=plan.hash, bond=plan.bond, seed=plan.seed, size=plan.size)
    forms = [Form(label, form, plan.routing, plan.hash) for label, form in zip(FORMS, plan.forms)]
    rows, checks = run_trials(experiment, forms, trials=plan.trials, seed=plan.seed, bond=plan.bond,
                              measure=measure(plan), mtu=plan.mtu,
                              on_row=lambda row: experiment.row(row, line(row), csv="hpn7_rails.csv"))
    compared = comparisons(rows)
    experiment.about["summary"] = {key: c.to_dict() for key, c in compared.items()}
    experiment.about["emulator"] = describe_all(rows, lambda r: f"trial {r['trial']} planes={r['planes']} {r['case']}")
    for key, c in compared.items():
        experiment.headline.update(c.headline(key))
    experiment.say("\nsummary (paired over trials; mean [95% interval]):",
                   *[f"  {c.line()}" for c in compared.values()],
                   "measured against the flow model (max-min fair rates over the captured paths):",
                   *model_lines(rows, FORMS, name=lambda r: r["case"]),
                   f"  #wrong over every iteration: {experiment.wrong}", f"  {experiment.about['emulator']}",
                   f"  {check_line({f'planes={f.topo.planes}': checks[f.label] for f in forms})}")
    experiment.figure("busbw_by_case.png", figures.busbw_by_case, rows, fabric=topo.name)
