"""How much one ovs-vswitchd forwards faithfully: offered vs achieved TCP load at MTU 1500 and 9000.

    sudo .venv/bin/python -m bench.forwarding_capacity [--out FILE] [--duration S] [--patterns P,..] [--rates R,..]
        [--cpu-placement auto|pinned|none]

Three patterns: 16 flows through one switch (LeafSpine with one leaf), BiGraph(2, 8)'s 16
contention-free flows over 2-3 switches, and BiGraph(4, 16)'s 64 (EFLOPS' own scale). Writes
JSON: one row per (pattern, MTU, per-flow rate). ``run_scenario.py --calibrate`` climbs the second
pattern's load to find this machine's faithful limit.
"""
import argparse
import sys
import time
from pathlib import Path

from testbed.emulation.cores import MODES
from testbed.fidelity import calibrate
from testbed.fidelity.verdict import describe
from testbed.report.folder import RESULTS_ROOT, RunFolder
from testbed.topology import BiGraph, LeafSpine

PATTERNS = {    # name: (fabric at a rate, rates per flow, MTUs)
    "one_switch_16_flows": (lambda rate: LeafSpine(1, 1, 16, rate=rate), [25, 50, 100], (1500, 9000)),
    "bigraph_2_8_16_flows": (lambda rate: BiGraph(2, 8, rate=rate), [5, 10, 20, 40], (1500, 9000)),
    "bigraph_4_16_64_flows": (lambda rate: BiGraph(4, 16, rate=rate), [2, 3, 4, 5], (9000,)),
}


def measure(pattern, mtu, rate, duration, cpu):
    make, _, _ = PATTERNS[pattern]
    row = calibrate.measure(make(rate), mtu, cpu, duration)
    return {"pattern": pattern, **row}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS_ROOT / "bench" / "forwarding_capacity.json"))
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated, from " + ", ".join(PATTERNS))
    parser.add_argument("--rates", help="per-flow rates in Mbit/s, comma-separated (default: each pattern's own)")
    parser.add_argument("--cpu-placement", choices=MODES, default="auto")
    args = parser.parse_args(argv)
    rows = []
    for pattern in args.patterns.split(","):
        _, rates, mtus = PATTERNS[pattern]
        rates = [int(r) for r in args.rates.split(",")] if args.rates else rates
        for mtu in mtus:
            for rate in rates:
                t = time.monotonic()
                row = measure(pattern, mtu, rate, args.duration, args.cpu_placement)
                rows.append(row)
                print(f"{pattern:22s} MTU {mtu:5d} {row['flows']} x {rate:3d} Mbit/s: achieved "
                      f"{row['achieved_over_offered']:.2f} of offered {row['offered_mbit']} Mbit/s; "
                      f"{describe(row)} [{time.monotonic() - t:.0f} s]", flush=True)
    out = RunFolder(Path(args.out).parent).create()
    print(f"wrote {out.json(Path(args.out).name, {'benchmark': 'forwarding_capacity', 'rows': rows})}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
