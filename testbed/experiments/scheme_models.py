"""Load-balancing schemes compared: each against its ECMP baseline over paired trials, ECMP's own
spread from draw to draw, rail-only against rail-optimised, and the schemes by the flow model on a
fabric of the papers' scale. ``load_balancing`` runs on it."""
import statistics

from testbed import routing
from testbed.api import Comm
from testbed.collectives.connections import rank_connections
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import part_of_racks, place
from testbed.errors import TestbedError
from testbed.experiments.trials import compare
from testbed.fidelity import predict
from testbed.routing.hashing import Draw, Placer
from testbed.topology.uplinks import faster_uplinks


def rail_lines(rows):
    """Rail-only's time over the rail-optimised fabric's, per collective, paired by trial, over the
    rows the emulator did not bound (a trial with one left out is named in the line)."""
    mine = [r for r in rows if r["fabric"] == "rails"]
    lines = []
    for collective in dict.fromkeys(r["workload"] for r in mine):
        c = compare([r for r in mine if r["workload"] == collective and usable(r)], ("rail-optimised", "rail-only"),
                    "time_s", f"{collective} time (s)", 3)
        lines.append(f"  {c.line()}")
    return (["rail-only against rail-optimised of the same size (time; paper: all-to-all +8.2% to +11.2%):"]
            + lines) if lines else []


def rail_rows(emu, collectives, variants, size, iters, label, draw):
    """Each collective over every accelerator of one of the rail comparison's fabrics (`label`)."""
    for collective in collectives:
        schedule, hosts = place(variants[collective], emu.topo, collective)
        got = emu.collectives([Comm(schedule, tuple(hosts), 1, f"{collective} {label}")], size, iters=iters,
                              draw=draw, name=f"{label}-{collective}")
        yield dict(got.rows[0], fabric="rails", scheme=label, job="all", streams=1, workload=collective,
                   time_s=got.rows[0]["time_us"] / 1e6)


def gain_lines(compared, rows):
    """The gains over ECMP, saying how many rows the emulator bounded and were left out of them."""
    bound = [r for r in rows if not usable(r)]
    return (["gain over ECMP with one connection per peer (pinned-part: over ECMP on the same part of the racks), "
             "paired by trial, mean [95% interval]" + (f"; {len(bound)} rows the emulator bounded (CPU saturated) "
                                                        "are left out" if bound else "") + ":"]
            + [f"  {s:12s} {c.line()}" for _, _, s, c in compared])


def model_ratio_lines(rows):
    """Measured over the flow model per run: its median and range."""
    ratios = [r["measured_over_model"] for r in rows if r.get("measured_over_model") is not None]
    if not ratios:
        return []
    return [f"measured/model per run: median {statistics.median(ratios):.2f} (range {min(ratios):.2f}-"
            f"{max(ratios):.2f}, {len(ratios)} runs)"]


def baseline(scheme):
    return "ecmp-part" if scheme == "pinned-part" else "ecmp"


def usable(row):
    """A row a comparison counts: not one the verdict found the emulator's (CPU saturated)."""
    return not row.get("emulator_bottleneck")


def comparisons(labels, rows):
    """Each scheme against its ECMP baseline, per fabric and workload, paired by trial, over the
    rows the emulator did not bound (a trial with one left out is named in the comparison's line)."""
    out = []
    for label in labels:
        mine = [r for r in rows if r["fabric"] == label and r["fabric"] != "rails"]
        schemes = list(dict.fromkeys(r["scheme"] for r in mine if r["scheme"] not in ("ecmp", "ecmp-part")))
        for workload in dict.fromkeys(r["workload"] for r in mine):
            key = "iteration_inverse" if workload == "workload" else "busbw_over_link"
            these = [r for r in mine if r["workload"] == workload]
            for scheme in schemes:
                out.append((label, workload, scheme,
                            compare(these, (baseline(scheme), scheme), key,
                                    f"{label} {workload} {key.replace('_', ' ')}", 3, where=usable)))
    return out


def spread_lines(labels, rows):
    """ECMP's own draw-to-draw spread, per fabric and workload: pairing cancels what both forms of a
    trial share, not the hash luck only ECMP has."""
    lines = []
    for label in labels:
        for workload in dict.fromkeys(r["workload"] for r in rows if r["fabric"] == label):
            key = "iteration_inverse" if workload == "workload" else "busbw_over_link"
            values = sorted(r[key] for r in rows if (r["fabric"], r["workload"], r["scheme"]) ==
                            (label, workload, "ecmp") and r.get(key) is not None)
            if len(values) > 1:
                mean = statistics.mean(values)
                lines.append(f"  {label} {workload}: ECMP's {key.replace('_', ' ')} {mean:.3f} over {len(values)} "
                             f"draws, range {values[0]:.3f}-{values[-1]:.3f} (coefficient of variation "
                             f"{statistics.stdev(values) / mean:.0%})")
    return (["ECMP's own spread from draw to draw (the luck a gain over ECMP carries):"] + lines) if lines else []


# At the papers' scale the steps are timed by rounds (every rank waits for the slowest at each
# step): as the ranks run them, 16 connections per peer take 28 s a draw to time on 128 hosts. By
# rounds ECMP with one connection per peer reads up to 1.29x slower (one draw), so a gain of more
# connections is overstated by up to that much; the emulated rows are timed as the ranks run.
SCALE_TIMING = "rounds"


def model_busbw(topo, routes, schedule, hosts, streams, count, seed, mtu):
    """The flow model's HD allreduce busbw over the link for one draw of 5-tuples."""
    placer = Placer(topo, routes, "hash")
    conns = rank_connections(schedule, list(hosts), [7000] * len(hosts), streams, Draw(seed))
    flat = [c for peers in conns.values() for cs in peers.values() for c in cs]
    seconds = predict.collective_times(topo, [(schedule, conns, count)], {c: placer.path(c) for c in flat}, mtu,
                                       timing=SCALE_TIMING)[0]
    return 2 * (len(hosts) - 1) / len(hosts) * count * ELEMENT_BYTES / seconds / topo.bytes_per_s


def scale_model_lines(topo, schemes, streams, size, draws, seed, mtu, papers):
    """The schemes the model can run without the emulation, on `topo` (a fabric of the papers'
    scale): HD allreduce busbw over the link, each scheme against ECMP over the same draws; then
    what the papers report (`papers`: {scheme: their figure})."""
    schedule, hosts = place("hd", topo)
    part = part_of_racks(topo, 0.5)
    count = size // ELEMENT_BYTES
    lines = [f"flow model on {topo.describe()} (HD allreduce, {draws} draws, steps timed by {SCALE_TIMING}; "
             "busbw over the link, mean [95% interval]):"]
    ecmp = routing.plan(topo, "ecmp")
    forms = [("ecmp", topo, ecmp, hosts, 1)] + ([(f"streams-{n}", topo, ecmp, hosts, n) for n in streams if n > 1]
                                                 if "streams" in schemes else [])
    if "uplinks" in schemes:
        try:
            fast = faster_uplinks(topo, 2, "uplinks-2x")
            forms.append(("uplinks-2x", fast, routing.plan(fast, "ecmp"), hosts, 1))
        except TestbedError:
            pass
    if "pinned" in schemes:
        forms += [("ecmp-part", topo, ecmp, part, 1), ("pinned-part", topo, routing.plan(topo, "pinned"), part, 1)]
    rows = [{"trial": d, "form": label,
             "busbw": model_busbw(fabric, routes, schedule, job, streams, count, seed + 1000 + d, mtu)}
            for label, fabric, routes, job, streams in forms for d in range(draws)]
    for label, *_ in forms:
        if label not in ("ecmp", "ecmp-part"):
            c = compare(rows, (baseline(label), label), "busbw", f"model {label}", 3)
            lines.append(f"  {c.line()}")
    lines += [f"  paper, {k}: {v}" for k, v in papers.items() if k in schemes]
    return lines
