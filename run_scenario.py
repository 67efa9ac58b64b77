#!/usr/bin/env python3
"""Run a testbed scenario: run_scenario.py [--list | --cleanup | SCENARIO [options]]."""
import argparse
import sys

from scenarios import DEFAULT, SCENARIOS
from testbed import preflight, runstate
from testbed.errors import TestbedError
from testbed.results import run_folder


def parser():
    top = argparse.ArgumentParser(description=__doc__.split(":")[0] + f" (default: {DEFAULT}).")
    top.add_argument("--list", action="store_true", help="list the scenarios")
    top.add_argument("--cleanup", action="store_true",
                     help="remove what crashed runs left (only objects this testbed created)")
    sub = top.add_subparsers(dest="scenario", metavar="SCENARIO")
    for name, module in SCENARIOS.items():
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(p)
        p.add_argument("--results", metavar="DIR", help="folder for this run's files "
                       "(default: a new time-stamped folder under results/)")
    return top


def main(argv):
    if not set(argv) & (set(SCENARIOS) | {"--list", "--cleanup", "-h", "--help"}):
        argv = [DEFAULT] + argv   # options alone are the default scenario's
    args = parser().parse_args(argv)
    if args.list:
        for name, module in SCENARIOS.items():
            print(f"{name:20s} {module.HELP}{'  (default)' if name == DEFAULT else ''}")
        return 0
    try:
        if args.cleanup:
            preflight.require_root()
            removed = runstate.cleanup_all()
            print("removed: " + " ".join(removed) if removed else "nothing to clean up")
            return 0
        module = SCENARIOS[args.scenario]
        return module.run(args, run_folder(args.scenario, args.results))
    except TestbedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; everything this run created was removed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
