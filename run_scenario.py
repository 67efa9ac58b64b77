#!/usr/bin/env python3
"""Run a testbed scenario: run_scenario.py [--list | --cleanup | --calibrate | SCENARIO [options]]."""
import contextlib
import os
import sys
from dataclasses import replace
from pathlib import Path

VENV = Path(__file__).resolve().parent / ".venv"


def through_the_venv():
    """Run as `sudo python3 run_scenario.py ...` with any python3: go on in the project's venv,
    which setup.sh made (Debian's Mininet and the pinned PyPI packages), or say how to make it."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    python = VENV / "bin" / "python"
    if not python.exists():
        sys.exit(print("error: the testbed is not set up on this machine: run 'sudo ./setup.sh' first, once "
                       "(it installs Mininet and Open vSwitch and makes .venv)", file=sys.stderr) or 2)
    os.execv(python, [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


if __name__ == "__main__":
    through_the_venv()

import argparse  # noqa: E402  (after the venv check: these need the venv's packages)

from scenarios import DEFAULT, SCENARIOS  # noqa: E402
from testbed.emulation import capacity, cores, dctcp, ecn, fitting, ovs, preflight, runrecord  # noqa: E402
from testbed.emulation.explore import explore  # noqa: E402
from testbed.emulation.settings import RunSettings  # noqa: E402
from testbed.errors import Interrupted, TestbedError  # noqa: E402
from testbed.experiments import calibrations, pages  # noqa: E402
from testbed.experiments import record as records  # noqa: E402
from testbed.experiments.experiment import Experiment, conduct  # noqa: E402
from testbed.experiments.fingerprint import of_run  # noqa: E402
from testbed.fidelity.calibrate import FIRST, ensure  # noqa: E402
from testbed.fidelity.calibrate import calibrate as measure_capacity  # noqa: E402
from testbed.interrupts import interruptible  # noqa: E402
from testbed.interrupts import name as signal_name  # noqa: E402
from testbed.machines import checks, inventory  # noqa: E402
from testbed.machines.engine import Engine  # noqa: E402
from testbed.report import markdown  # noqa: E402
from testbed.report.folder import RunFolder, check_writable, default_path  # noqa: E402


class Parser(argparse.ArgumentParser):
    """Bad options are one line naming the fix, exit code 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def parser():
    top = Parser(prog="run_scenario.py", description=__doc__.split(":")[0] + f" (default: {DEFAULT}).")
    top.add_argument("--list", action="store_true", help="list the scenarios")
    top.add_argument("--cleanup", action="store_true",
                     help="remove what crashed runs left (only objects this testbed created)")
    top.add_argument("--calibrate", nargs="?", const="all", choices=["all", "default"],
                     help="measure how much load this machine's Open vSwitch forwards faithfully and store it "
                          "for the rate checks and verdicts: all MTUs and CPU placements (a few minutes), or the "
                          "default MTU and placement only (about a minute; setup.sh does this once, and a run "
                          "measures another MTU or placement the first time it needs it)")
    top.add_argument("--keep", metavar="LABEL",
                     help="with --calibrate: also keep the calibration under docs/calibrations/, labelled (a few "
                          "words naming the machine), for the table of machines in docs/fidelity.md")
    top.add_argument("--pages", action="store_true",
                     help="draw every scenario page's measured blocks from the newest kept record of each block's "
                          "command (no root)")
    top.add_argument("--stale", action="store_true",
                     help="list the pages whose run does something else than the code at HEAD would, and the "
                          "command that measures each again (no root)")
    sub = top.add_subparsers(dest="scenario", metavar="SCENARIO")
    for name, module in SCENARIOS.items():
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(p)
        p.add_argument("--results", metavar="DIR", help="folder for this run's files "
                       "(default: a new time-stamped folder under results/)")
        p.add_argument("--record", action="store_true",
                       help="also keep this run's record under docs/records/ (every run writes record.json into its "
                            "folder), for the scenario's page (run_scenario.py --pages)")
        p.set_defaults(cli=False, cpu_placement="auto", slots=1, machines=None, control_class="on", ecn=None, cc=None)
        if not getattr(module, "EMULATES", True):
            continue                        # a model only: the emulation's options mean nothing to it
        p.add_argument("--cli", action="store_true", help="build this scenario's fabric, controller and routes and "
                       "open Mininet's CLI on it instead of measuring; exit removes it")
        p.add_argument("--cpu-placement", choices=cores.MODES, default="auto",
                       help="pinned: ovs-vswitchd on one core, the hosts' receive processing on the others; "
                            "none: as the system places them; auto: whichever this machine's calibration "
                            "measured to carry more (none when uncalibrated) (default %(default)s)")
        p.add_argument("--control-class", choices=("on", "off"), default="on",
                       help="on: every switch port serves the ranks' clear-to-sends and ACKs ahead of data (an "
                            "idealisation: control never waits behind queued frames); off: one FIFO per port "
                            "(docs/design.md, The control class; a link with --delay has one FIFO either way) "
                            "(default %(default)s)")
        p.add_argument("--ecn", type=int, metavar="K",
                       help="every switch port marks ECN's CE on ECN-capable packets while its class's queue holds "
                            "more than K bytes (a virtual queue drained at the link's rate, in the project's tc-eBPF "
                            "program), and the hosts' TCP asks for ECN (default: drop-tail FIFOs only)")
        p.add_argument("--cc", metavar="NAME",
                       help="the TCP congestion control of the ranks' connections between hosts and of the flows: "
                            "one of this kernel's (cubic, bbr, reno here) or dctcp, the project's own BPF DCTCP "
                            "(its connections ask for ECN; pair it with --ecn) (default: the ranks' CUBIC, the "
                            "flows' machine default)")
        p.add_argument("--slots", type=int, default=1,
                       help="split every fabric into this many slots, each forwarded by an ovs-vswitchd of its "
                            "own in a network namespace of its own, the links between them VXLAN tunnels "
                            "(docs/scale.md; default %(default)s)")
        p.add_argument("--machines", metavar="FILE",
                       help="run the fabric's slots across the machines FILE names, on Dask distributed, after "
                            "a preflight of every machine and the underlay between them (docs/machines.md)")
    return top


def main(argv):
    # Progress must reach a pipe (| tee, a test) as it happens, not when the run ends.
    sys.stdout.reconfigure(line_buffering=True)
    if argv and not argv[0].startswith("-") and argv[0] not in SCENARIOS:
        print(f"error: unknown scenario {argv[0]!r}: run_scenario.py --list names them", file=sys.stderr)
        return 2
    if not set(argv) & (set(SCENARIOS) | {"--list", "--cleanup", "--calibrate", "--keep", "--pages", "--stale", "-h",
                                          "--help"}):
        argv = [DEFAULT] + argv   # options alone are the default scenario's
    top = parser()
    args, unknown = top.parse_known_args(argv)
    if unknown:     # refused by the scenario's own parser, so the line names its --help
        subs = next(a for a in top._actions if a.dest == "scenario").choices
        (subs[args.scenario] if args.scenario else top).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.list:
        for name, module in SCENARIOS.items():
            print(f"{name:20s} {module.HELP}{'  (default)' if name == DEFAULT else ''}")
        return 0
    try:
        with interruptible(last=True):
            if args.cleanup:
                preflight.require_root()
                removed, stays, failed = runrecord.cleanup_all()
                print("removed: " + " ".join(removed) if removed else "nothing to clean up")
                for said in stays:
                    print("left: " + said)
                for said in failed:
                    print("could not remove: " + said, file=sys.stderr)
                return 1 if failed else 0
            if args.keep is not None and not args.calibrate:
                raise TestbedError("--keep keeps a calibration: give it with --calibrate")
            if args.calibrate:
                return calibrate(args.calibrate, args.keep)
            if args.pages or args.stale:
                return show_pages(args.stale)
            return run(args, argv)
    except TestbedError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except Interrupted as e:
        print(f"interrupted by {signal_name(e.signum)}; everything this run created was removed", file=sys.stderr)
        return 128 + e.signum


def calibrate(which, label=None):
    preflight.require_root()
    preflight.require_ovs()
    if label is not None and not label.strip():
        raise TestbedError("--keep needs a label naming the machine (e.g. 'a 2-core VM, Debian 12')")
    path, _ = measure_capacity(wanted=FIRST if which == "default" else None)
    print(f"stored in {path}: runs use it from now on")
    if label is not None:
        print(f"kept: {calibrations.keep(label).relative_to(records.ROOT)} (run_scenario.py --pages puts it in "
              "docs/fidelity.md's table)")
    return 0


def show_pages(stale_only):
    """--pages: draw the pages' blocks from their records; --stale: list the blocks not current."""
    if stale_only:
        found = pages.stale(SCENARIOS, parser())
        for page, path, parts, why, older, command in found:
            said = [why or "stale: differs in " + ", ".join(parts)] if parts else []
            said += ["measured with older code: " + ", ".join(older) + " changed since"] if older else []
            print(f"{page}: {path}: {'; '.join(said)}\n  measure again: {command}")
        stale_ones = sum(1 for f in found if f[2])
        print(f"{stale_ones} stale block(s), {len(found) - stale_ones} measured with older code" if found else
              "every page shows a run of what its command does now, measured by the code at HEAD")
        return 0
    for page, notes in pages.refresh(SCENARIOS, parser()).items():
        said = "; ".join("stale: " + ", ".join(parts) if parts else
                         f"measured with older code ({len(older)} files)" if older else "current"
                         for parts, older in notes)
        print(f"{pages.named(page)}: {said or 'no measured block'}")
    return 0


def run(args, argv):
    if args.scenario is None:
        raise TestbedError(f"name a scenario (run_scenario.py --list), or give options for {DEFAULT}")
    module = SCENARIOS[args.scenario]
    ms = args.machines and inventory.load(args.machines)
    if ms:
        if not getattr(module, "ACROSS_MACHINES", False):
            able = ", ".join(n for n, m in SCENARIOS.items() if getattr(m, "ACROSS_MACHINES", False))
            raise TestbedError(f"{args.scenario} does not run across machines yet: run it on one machine "
                               f"(--slots), or run {able} with --machines")
        if args.cli:
            raise TestbedError("--cli opens Mininet's CLI on this machine's fabric: drop --machines")
    settings = RunSettings(slots=args.slots, cpu_placement=args.cpu_placement, machines=ms or None,
                           control_class=args.control_class == "on", ecn=args.ecn, congestion_control=args.cc)
    plan = module.prepare(args)             # every option checked; nothing built or written
    fitted = None
    if plan.fabrics and not ms and args.slots == 1 and hasattr(args, "rate") and not fitting.given(argv):
        path = preflight.datapath()
        where = capacity.cpu_placement(path, settings.placement(), plan.mtu)
        fitted = fitting.fitted_rate(plan.fabrics, args.rate, plan.mtu, path, where)
        if fitted is not None:
            print(fitting.note(args.rate, fitted, plan.fabrics, plan.mtu, path, where))
            if getattr(args, "seed", 0) is None:
                args.seed = getattr(plan, "seed", None)       # the same draws at the fitted rate
            args.rate = fitted
            plan = module.prepare(args)
    for topo in plan.fabrics if settings.ecn else ():
        ecn.check(settings.ecn, min(link.queue for link in topo.links), plan.mtu)
    if settings.congestion_control and plan.fabrics:
        dctcp.check(settings.congestion_control)
    fingerprint = of_run(module, args, seed=getattr(plan, "seed", None))
    for topo in plan.fabrics:
        for note in topo.notes:
            print(f"note: {note}")
    if settings.control_class and any(topo.delay for topo in plan.fabrics):
        print("note: links with --delay have one FIFO (netem's): no control class on them, so the ranks' "
              "clear-to-sends and ACKs queue behind data there")
    if args.cli and not plan.fabrics:
        raise TestbedError(f"{args.scenario} only models its fabrics: there is nothing to explore with --cli")
    if plan.fabrics:
        preflight.require_root()
        if not ms and not args.cli:
            measured_once(plan, settings)
    folder = RunFolder(check_writable(args.results or default_path(args.scenario)))
    datapath = None
    for topo in plan.fabrics:
        datapath = preflight.require_machines(topo, plan.mtu, ms) if ms else \
            preflight.require_emulation(topo, plan.mtu, cpu=settings.cpu_placement, slot_count=settings.slots)[0]
    with contextlib.ExitStack() as machines_up:
        if ms:      # the machines' preflight, before anything is built or written
            engine = machines_up.enter_context(Engine(ms))
            checked = {}
            for topo in plan.fabrics:
                print(f"preflight of {len(ms.machines)} machines for {topo.describe()}, MTU {plan.mtu}:")
                checked[topo.name, plan.mtu] = checks.preflight(engine, topo, plan.mtu)
            settings = replace(settings, engine=engine, checked=checked)
        experiment = Experiment(folder, replace(settings, results=folder.path), name=args.scenario)
        return measure(args, argv, module, plan, experiment, datapath, fingerprint, fitted)


def measured_once(plan, settings):
    """What this run's rate check reads, measured now if this machine's calibration lacks it."""
    path = preflight.datapath()
    if path == "user":
        preflight.require_ovs()
        ensure(plan.mtu, capacity.cpu_placement(path, settings.placement(), plan.mtu))


def measure(args, argv, module, plan, experiment, datapath, fingerprint, fitted=None):
    emulation = ("cpu_placement", "slots", "machines", "control_class", "ecn", "cc")
    options = {k: v for k, v in vars(args).items()
               if k not in ("scenario", "list", "cleanup", "calibrate", "keep", "pages", "stale", "results", "cli",
                            "record")
               and (getattr(module, "EMULATES", True) or k not in emulation)}
    if "seed" in options:
        options["seed"] = getattr(plan, "seed", options["seed"])
    status, folder, code = "failed", experiment.results, None
    with markdown.Transcript() as transcript:
        try:
            folder.create()
            code = explore(plan, folder.path, experiment.settings) if args.cli else conduct(module, plan, experiment)
            status = "complete" if code == 0 else f"finished with exit code {code}"
            return code
        except Interrupted as e:
            status = f"interrupted by {signal_name(e.signum)}"
            raise
        except Exception as e:
            status = f"failed: {e}"
            raise
        finally:
            if folder.path.is_dir():
                version = ovs.version() if datapath else None
                run_argv = records.with_options(argv, "--rate", f"{fitted:g}") if fitted is not None else argv
                command = records.rerun(run_argv, getattr(plan, "seed", None))
                report = markdown.write(folder, args.scenario, command, status, plan, options, datapath, version,
                                        transcript.text())
                print(f"report: {report}")
                if not args.cli:
                    record = records.make(args.scenario, argv, plan, fingerprint, experiment, status, code, datapath,
                                          version, fitted)
                    records.save(record, folder)
                    if args.record and status.startswith("interrupted"):
                        print("record not kept under docs/records: the run was interrupted (its folder has it)")
                    elif args.record:
                        print(f"record kept: {records.keep(record).relative_to(records.ROOT)}")
            sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
