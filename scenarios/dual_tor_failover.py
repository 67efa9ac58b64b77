"""Dual-ToR failover: allreduce iterations back to back on HPN7 while a NIC-ToR link is cut and
restored, then a whole ToR goes down and comes back; the same on the single-ToR baseline.

With dual-ToR a NIC has a port on each of two ToRs: the host's bond stops using the dead port, and
the controller, told by the switch's port-status message, routes every other host's traffic for that
NIC to its other ToR (HPN's /32 withdrawal). In dual plane the lost port's plane reaches the NIC
through the core tier and the other plane. With a single ToR the NIC has no other way: the job
stalls, and resumes if the link comes back before the ranks give up (--stall-limit), or ends with an
error naming the dead link. Output: a time line of iterations with the failure windows, the longest
stall, throughput during and after each failure relative to before, #wrong, and how long the
controller took to react.
"""
import re
from dataclasses import dataclass

from scenarios.common import (
    add_fabric_arguments,
    add_scheme_arguments,
    add_seed_argument,
    at_least,
    fabric,
    seed_of,
    streams_option,
)
from testbed.api import ELEMENT_BYTES, HPN7, Comm, Draw, TestbedError, place
from testbed.experiments import check_sweep, describe, failure_timeline, figures
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.trials import Form, run_once

NAME = "dual_tor_failover"
HELP = "HPN7 allreduce while a NIC-ToR link and then a ToR fail and return: dual-ToR against single-ToR"
ALLREDUCE = "ring_cross_segment"
FAILURES = ("link", "tor", "both")
CLAIMS = (Claim("dual-ToR: a NIC-ToR link cut costs the job little (HPN: 6.25% on 256 GPUs)",
                "dual-ToR link down: during/before", at_least=0.5),
          Claim("dual-ToR: the job never stalls for long", "dual-ToR longest stall (s)", at_most=2.0),
          Claim("single ToR: the job halts while its NIC's only link is down", "single-ToR link down: during/before",
                at_most=0.1))
SMOKE = ("--fail", "link", "--at", "4", "--down-for", "4", "--run-for", "12", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/emulation/events.py", "testbed/emulation/faults.py", "testbed/runs/together.py",
        "testbed/collectives/metrics.py", "testbed/experiments/trials.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,2,2,2,2,2,1")
    parser.add_argument("--fail", choices=FAILURES, default="both",
                        help="cut a NIC-ToR link, take a ToR down, or the one then the other (default %(default)s)")
    parser.add_argument("--at", type=float, default=8.0, help="seconds into the run of the first failure "
                        "(default %(default)s)")
    parser.add_argument("--down-for", type=float, default=6.0, help="seconds each failure lasts (default %(default)s)")
    parser.add_argument("--gap", type=float, default=16.0,
                        help="seconds from the link failure to the ToR failure (default %(default)s)")
    parser.add_argument("--flap", type=float, default=0.0,
                        help="while failed, bring it up and down again every this many seconds (0: stay down)")
    parser.add_argument("--run-for", type=float, default=40.0, help="seconds of iterations (default %(default)s)")
    parser.add_argument("--stall-limit", type=float, default=15.0,
                        help="seconds a rank waits for data before the job gives up (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 << 10, help="allreduce message size (default %(default)s)")
    add_scheme_arguments(parser, streams=2)
    add_seed_argument(parser, "the connections' source ports (a hash draw: which ToR and uplink each takes)")


@dataclass
class Plan:
    forms: list            # [dual-ToR fabric, its single-ToR baseline]
    mtu: int
    windows: dict          # {"link down": (from, to), "ToR down": (from, to)}, seconds into the run
    flap: float
    run_for: float
    stall_limit: float
    size: int
    streams: int
    seed: int = 0

    @property
    def fabrics(self):
        return self.forms


def prepare(args):
    topo = fabric(args)
    if not isinstance(topo, HPN7) or topo.tors != 2 or topo.segments < 2:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 fabric of 2 or more segments (got {topo.name}): "
                           "use e.g. --topology hpn7:2,2,2,2,2,2,1")
    baseline = HPN7(topo.segments, topo.servers, topo.rails, topo.aggs, planes=1, tors=1,
                    uplink_ratio=topo.uplink_ratio, rate=topo.rate, queue=topo.queue, delay=topo.delay,
                    scaleup_domain=topo.scaleup_domain)
    at_least(args.at, 1, "--at", " s")
    at_least(args.down_for, 0.5, "--down-for", " s")
    at_least(args.stall_limit, 2, "--stall-limit", " s")
    if not 0 <= args.flap < args.down_for:
        raise TestbedError(f"--flap must be 0 (stay down) or less than --down-for (got {args.flap})")
    windows = {}
    if args.fail in ("link", "both"):
        windows["link down"] = (args.at, args.at + args.down_for)
    if args.fail in ("tor", "both"):
        start = args.at + (args.gap if args.fail == "both" else 0)
        if args.fail == "both" and args.gap <= args.down_for:
            raise TestbedError(f"--gap ({args.gap} s) must be longer than --down-for ({args.down_for} s)")
        windows["ToR down"] = (start, start + args.down_for)
    last = max(b for _, b in windows.values())
    if args.run_for < last + 2:
        raise TestbedError(f"--run-for must outlast the failures by 2 s or more: use --run-for {last + 5:g}")
    ranks = len(place(ALLREDUCE, topo)[1])
    at_least(args.bytes, ELEMENT_BYTES * ranks, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    check_sweep([args.bytes], ranks, 2, topo.bytes_per_s, 0, 1)
    return Plan([topo, baseline], args.mtu, windows, args.flap, args.run_for, args.stall_limit, args.bytes,
                streams_option(args), seed_of(args))


def victims(topo, hosts):
    """The NIC-ToR link of rank 0's NIC, port 0, and that port's ToR."""
    nic = topo.hosts[hosts[0]].ports[0]
    tor, port = topo.attachment(nic)
    return topo.link_at(tor, port), tor


def reactions(log_path, done):
    """Seconds from each event to the controller's having sent the new rules: the port status's
    arrival (the first of the event's switch ports the controller logged) plus its planning time;
    None where it logged no reaction within 2 s."""
    seen = [(name, int(port), state == "up", float(t) + float(ms) / 1000) for name, port, state, t, ms in
            re.findall(r"port (\S+):(\d+) (down|up) at (\d+\.\d+):.* in (\d+\.\d+) ms", log_path.read_text())]
    out = []
    for event in done:
        times = [t for name, port, up, t in seen if (name, port) in set(event.ports) and up == event.up
                 and event.wall - 0.05 <= t <= event.wall + 2]
        out.append(round(min(times) - event.wall, 4) if times else None)
    return out


def measure(plan, experiment, summaries):
    """One fabric's run (a form of the engine's one pass): the fabric check, then iterations under
    the failure timeline; the rows are the time line, and the run's summary goes into
    summaries[fabric name] (the run's JSON's 'forms')."""
    def one(emu, form, folder):
        topo = form.topo
        experiment.say(f"\n## {topo.describe()}", section="checks")
        schedule, hosts = place(ALLREDUCE, topo)
        link, tor = victims(topo, hosts)
        check = experiment.check(emu.check(), form.label)
        events = []
        if "link down" in plan.windows:
            a, b = plan.windows["link down"]
            events += emu.link_failure(link, a, b - a, plan.flap)
        if "ToR down" in plan.windows:
            a, b = plan.windows["ToR down"]
            events += emu.switch_failure(tor, a, b - a, plan.flap)
        ran = emu.collective_for(Comm(schedule, tuple(hosts), plan.streams, ALLREDUCE), plan.size, plan.run_for,
                                 events=events, stall_limit=plan.stall_limit, draw=Draw(plan.seed))
        react = reactions(folder / "controller.log", ran["done"])
        rows, summaries[topo.name] = outcome(ran, plan, topo, len(hosts), check, react)
        print("\n".join(report(summaries[topo.name], plan.windows)))
        return [dict(row, fabric=topo.name) for row in rows]
    return one


def outcome(ran, plan, topo, ranks, check, react):
    """(the time line's rows, the run's summary) of one fabric's run."""
    rows, summary = failure_timeline(ran["iterations"], plan.windows, ran["start"], ran["end"], plan.size, ranks,
                                     topo.rate)
    if ran["error"]:
        down = [event.what for event in ran["done"] if not event.up]
        summary["stopped"] = f"{ran['error']} (while {down[-1][:-5] if down else 'nothing'} was down)"
    summary.update(ran["cpu"], fabric=topo.name, fabric_check_pass=check.passed,
                   controller_reaction_s=react, events=[[round(e.monotonic - ran["start"], 3), e.what]
                                                        for e in ran["done"]],
                   event_error=ran["event_error"])
    return rows, summary


def report(summary, windows):
    lines = [f"  {summary['fabric']}: {summary['iterations']} iterations, longest stall "
             f"{summary['longest_stall_s']} s, #wrong {summary['wrong']}"]
    for name in windows:
        cell = summary.get(name, {})
        lines.append(f"    {name:9s} throughput during {fraction(cell.get('during_over_before'))} of before, "
                     f"after {fraction(cell.get('after_over_before'))}")
    if summary.get("stopped"):
        lines.append(f"    the job stopped: {summary['stopped']}")
    seen = [1000 * r for r in summary["controller_reaction_s"] if r is not None]
    if seen:
        missed = sum(1 for r in summary["controller_reaction_s"] if r is None)
        lines.append(f"    the controller had sent its new rules {min(seen):.1f}-{max(seen):.1f} ms after each event"
                     + (f"; it logged no reaction to {missed} events" if missed else ""))
    lines.append(f"    {describe(summary)}")
    return lines


def fraction(value):
    return "-" if value is None else f"{value:.2f}"


def run(plan, experiment):
    experiment.header(f"# {NAME}: {ALLREDUCE} allreduce of {plan.size} B, {plan.streams} connections per peer, back to "
                      f"back for {plan.run_for:g} s; failures: "
                      + ", ".join(f"{n} {a:g}-{b:g} s" for n, (a, b) in plan.windows.items())
                      + (f", flapping every {plan.flap:g} s" if plan.flap else "")
                      + f"; source ports from seed {plan.seed}")
    summaries = {}
    experiment.about.update(windows=plan.windows, flap=plan.flap, stall_limit=plan.stall_limit, size=plan.size,
                            forms=summaries)
    forms = [Form(label, topo, "ecmp") for label, topo in zip(("dual-ToR", "single-ToR"), plan.forms)]
    rows, _ = run_once(experiment, forms, measure=measure(plan, experiment, summaries), mtu=plan.mtu, check=False,
                       on_row=lambda row: experiment.row(row, csv="iterations.csv"))
    timelines = {topo.name: [r for r in rows if r["fabric"] == topo.name] for topo in plan.forms}
    experiment.say("\nsummary (dual-ToR, then the single-ToR baseline):")
    for form, summary in zip(forms, summaries.values()):
        experiment.say(*report(summary, plan.windows))
        experiment.headline[f"{form.label} longest stall (s)"] = summary["longest_stall_s"]
        for name in plan.windows:
            experiment.headline[f"{form.label} {name}: during/before"] = summary.get(name, {}).get("during_over_before")
    experiment.figure("timeline.png", figures.failure_timeline, timelines, plan.windows,
                      fabric=" and ".join(f.name for f in plan.forms))
    dual = summaries.get(plan.forms[0].name, {})
    if dual.get("stopped"):
        experiment.failed = f"the dual-ToR job stopped: {dual['stopped']}"
