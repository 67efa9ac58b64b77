"""Allreduce against rank count: BiGraph(1,8), (2,8), (4,8) = 8, 16, 32 ranks, every variant.

    sudo .venv/bin/python -m bench.allreduce_scaling [--out FILE]

For each rank count: busbw / link rate at the large size and the time at the small size, with each
run's fidelity verdict: the fabric check before the sweep (reachability, TCP flows at the link
rate), and in which rows the emulator was the bottleneck. Writes JSON.
"""
import argparse
import sys
import tempfile
from pathlib import Path

from scenarios import fabric_check
from scenarios.bigraph_allreduce import compare, measure, plan
from testbed.allreduce import AllreduceError
from testbed.emulation import Emulation
from testbed.results import RESULTS_ROOT, write_json
from testbed.routing import deterministic_routes
from testbed.topologies import BiGraph

SMALL, LARGE = 1024, 1 << 20


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS_ROOT / "bench" / "allreduce_scaling.json"))
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args(argv)
    runs = []
    for m in (1, 2, 4):
        topo = BiGraph(m, 8)
        try:
            with tempfile.TemporaryDirectory() as tmp, \
                    Emulation(topo, deterministic_routes(topo), tmp, log=lambda msg: None) as emu:
                fidelity = fabric_check.check(emu, duration=3)
                rows = measure(emu, plan(topo, ["ring", "ring_topo", "hd", "hdrm"]), [SMALL, LARGE],
                               warmup=1, iters=args.iters, progress=lambda line: None)
        except AllreduceError as e:   # keep what the other rank counts measured
            runs.append({"topology": topo.name, "ranks": len(topo.hosts), "error": str(e)})
            print(f"{len(topo.hosts):3d} ranks  failed: {e}", flush=True)
            continue
        cmp = compare(rows)
        cmp["fidelity_pass"] = fabric_check.passed(fidelity)
        runs.append({"topology": topo.name, "ranks": len(topo.hosts), "rows": rows, "summary": cmp,
                     "fidelity": fidelity})
        print(f"{len(topo.hosts):3d} ranks  small {SMALL} B time (ms): "
              + ", ".join(f"{n} {t / 1000:.1f}" for n, t in cmp["small_time_us"].items())
              + f"  | large {LARGE} B busbw/link: "
              + ", ".join(f"{n} {v:.2f}" for n, v in cmp["large_busbw_over_link"].items())
              + f"  | #wrong {cmp['wrong']}, fabric check {'PASS' if cmp['fidelity_pass'] else 'FAIL'}"
              + f", emulator bottleneck in {len(cmp['emulator_bottleneck_rows'])}/8 rows"
              + f" (max ovs-vswitchd {cmp['max_ovs_vswitchd_cores']:.2f} cores)", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    print(f"wrote {write_json(args.out, {'benchmark': 'allreduce_scaling', 'runs': runs})}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
