"""Where an alltoall's time goes on BiGraph(2,8): each variant's steps as measured (when the last rank
ended each step) beside the flow model's rounds (``fidelity.predict``: the steps played as the
ranks meet, each at its fluid completion over the deterministic routes), the CPU while it ran, and
the Ring allgather of the same size as the reference that reaches the link rate.

    sudo .venv/bin/python -m bench.alltoall_steps [--out FILE] [--bytes N] [--eager-limit N]
        [--variants pairwise,topo,xor,xor_rm,allgather:ring]

Writes JSON: per variant the three iterations' times, the measured step durations, the model's
rounds and their flows, and the CPU verdict.
"""
import argparse
import json
import sys
from pathlib import Path

import testbed
from testbed.collectives.connections import rank_connections, step_transfers
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import COLLECTIVES, ELEMENT_BYTES
from testbed.collectives.placements import place
from testbed.emulation.cpu import CpuMonitor
from testbed.fidelity import predict
from testbed.report.folder import RESULTS_ROOT


def measure(emu, collective, variant, size, eager_limit):
    schedule, hosts = place(variant, emu.topo, collective)
    count, topo = size // ELEMENT_BYTES, emu.topo
    conns = rank_connections(schedule, hosts, [7000] * len(hosts), 1)
    paths = predict.route_paths(topo, emu.routing, [c for p in conns.values() for cs in p.values() for c in cs])
    capacity = predict.link_rates(topo)
    model = [(steps, len(moved), predict._step_time(moved, paths, capacity, emu.mtu))
             for steps, moved in step_transfers(schedule, conns, count)]
    with Coordinator(schedule, *emulation_launcher(emu.emulation, hosts), pacing=topo.bytes_per_s,
                     eager_limit=eager_limit, label=variant) as ranks:
        ranks.iterate(count, 0, 120)
        with CpuMonitor() as cpu:
            runs = [ranks.iterate(count, i + 1, 120) for i in range(3)]
    ends = runs[-1]["step_ends"]
    model_s = sum(n * t for n, _, t in model)
    factor = COLLECTIVES[collective].busbw_factor(len(hosts))
    busbw = lambda seconds: size / seconds * factor * 8 / (topo.rate * 1e6)
    return {"collective": collective, "variant": variant, "times": [round(r["time"], 4) for r in runs],
            "busbw_over_link": round(busbw(sum(r["time"] for r in runs) / 3), 3),
            "model_s": round(model_s, 4), "model_busbw_over_link": round(busbw(model_s), 3),
            "steps": [round(b - a, 4) for a, b in zip([0.0] + ends, ends)],
            "model_rounds": [{"repeat": n, "flows": flows, "seconds": round(t, 4)} for n, flows, t in model],
            **cpu.result()}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS_ROOT / "bench" / "alltoall_steps.json"))
    parser.add_argument("--bytes", type=int, default=1 << 20)
    parser.add_argument("--eager-limit", type=int, default=None)
    parser.add_argument("--variants", default="pairwise,topo,xor,xor_rm,allgather:ring")
    args = parser.parse_args(argv)
    rows = []
    with testbed.emulate(testbed.fabric("bigraph:2,8")) as emu:
        for name in args.variants.split(","):
            collective, _, variant = name.rpartition(":")
            row = measure(emu, collective or "alltoall", variant, args.bytes, args.eager_limit)
            rows.append(row)
            print(f"{name:16s} busbw/link {row['busbw_over_link']:.2f} (model {row['model_busbw_over_link']:.2f}), "
                  f"{len(row['steps'])} steps of the ranks, {sum(r['repeat'] for r in row['model_rounds'])} rounds "
                  f"in the model; machine {row['machine_busy']:.0%} busy", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bytes": args.bytes, "eager_limit": args.eager_limit, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
