"""Scale on paper: the slots, cores, machines and underlay a 1,024-endpoint and a paper-sized fabric
need, from this machine's calibration (testbed.fidelity.scale). No root, no emulation, a minute.

    .venv/bin/python -m bench.scale_on_paper [--out FILE] [--rates 2,5,10] [--machine-cores 64]
        [--capacity MBIT]

--capacity: the faithful offered Mbit/s of one ovs-vswitchd at MTU 9000 (default: this machine's
calibration, the better placement). Writes JSON and prints one row per fabric and rate, with the
highest rate the most slots of each fabric carry.
"""
import argparse
import json
import sys
from pathlib import Path

from testbed.emulation import capacity
from testbed.fidelity import scale
from testbed.report.folder import RESULTS_ROOT
from testbed.topology import HPN7, BiGraph

# BiGraph at 1,024 endpoints and at its largest with 64-port switches (2,048); HPN 7.0's segment
# (1,024 accelerators) and pod (15 segments: 15,360).
FABRICS = {
    "bigraph:16,64": lambda rate: BiGraph(16, 64, rate=rate),
    "bigraph:32,64": lambda rate: BiGraph(32, 64, rate=rate),
    "hpn7:1,128,8,60": lambda rate: HPN7(1, 128, 8, 60, rate=rate),
    "hpn7:15,128,8,60": lambda rate: HPN7(15, 128, 8, 60, rate=rate),
}


def calibrated_capacity():
    found, why = capacity.load()
    if not found:
        raise SystemExit(f"no calibration ({why}): run 'sudo .venv/bin/python run_scenario.py --calibrate' "
                         "or give --capacity")
    best = max(found.faithful_mbit(9000, p) or 0 for p in ("none", "pinned"))
    if not best:
        raise SystemExit("the calibration found nothing faithful at MTU 9000: give --capacity")
    return best, f"calibrated {found.date}"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS_ROOT / "bench" / "scale_on_paper.json"))
    parser.add_argument("--rates", default="2,5,10", help="link rates in Mbit/s, comma-separated")
    parser.add_argument("--machine-cores", type=int, default=64)
    parser.add_argument("--capacity", type=float, help="faithful offered Mbit/s of one slot (default: calibrated)")
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in args.rates.split(",")]
    except ValueError:
        parser.error(f"--rates takes numbers, comma-separated (got {args.rates!r})")
    if not rates or min(rates) <= 0 or args.machine_cores < 2 or (args.capacity is not None and args.capacity <= 0):
        parser.error("--rates must be positive, --machine-cores at least 2, --capacity positive")
    capacity, source = (args.capacity, "given") if args.capacity else calibrated_capacity()
    passes = scale.calibration_passes()
    slot = capacity * passes
    print(f"one slot forwards {capacity:g} Mbit/s offered x {passes:.2f} switch passes = {slot:g} pass-Mbit/s "
          f"({source}); hosts {scale.ENDPOINTS_PER_CORE} endpoints per core; machines of {args.machine_cores} cores")
    print(f"{'fabric':18s} {'endpoints':>9s} {'rate':>6s} {'passes':>6s} {'slots':>9s} {'cores':>6s} "
          f"{'machines':>8s} {'cut links':>9s} {'underlay/machine':>16s}  highest rate")
    rows = []
    for spec, make in FABRICS.items():
        highest = scale.highest_rate(make(1), slot)
        for rate in rates:
            p = scale.plan(make(rate), slot, args.machine_cores)
            rows.append({"spec": spec, **p.to_dict(), "highest_rate_mbit": highest})
            slots = f"{p.slots}/{p.max_slots}" + ("" if p.fits else "!")
            print(f"{spec:18s} {p.endpoints:9d} {rate:6g} {p.passes:6d} {slots:>9s} {p.cores:6d} {p.machines:8d} "
                  f"{p.cut_links:9d} {p.underlay_mbit / 1000:13.1f} Gb  {highest:.2f} Mbit/s")
    print("slots a/b: a needed of the b the fabric splits into; '!': more than b needed, so not faithful "
          "at that rate")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"capacity_mbit": capacity, "source": source, "calibration_passes": passes,
                               "machine_cores": args.machine_cores, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
