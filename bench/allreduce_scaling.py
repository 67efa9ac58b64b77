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

from testbed import routing
from testbed.collectives.coordinator import AllreduceError
from testbed.collectives.sweep import compare_variants, place_variants, run_sweep
from testbed.emulation.network import Emulation
from testbed.fidelity import fabric_check
from testbed.report.folder import RESULTS_ROOT, RunFolder
from testbed.topology import BiGraph

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
                    Emulation(topo, routing.plan(topo), tmp, log=lambda msg: None) as emu:
                fidelity = fabric_check.check(emu, duration=3)
                rows = run_sweep(emu, place_variants(topo, ["ring", "ring_topo", "hd", "hdrm"]), [SMALL, LARGE],
                                 warmup=1, iters=args.iters, progress=lambda line: None)
        except AllreduceError as e:   # keep what the other rank counts measured
            runs.append({"topology": topo.name, "ranks": len(topo.hosts), "error": str(e)})
            print(f"{len(topo.hosts):3d} ranks  failed: {e}", flush=True)
            continue
        cmp = compare_variants(rows)
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
    out = RunFolder(Path(args.out).parent).create()
    print(f"wrote {out.json(Path(args.out).name, {'benchmark': 'allreduce_scaling', 'runs': runs})}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
