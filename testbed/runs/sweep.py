"""The size sweep: every variant of a collective over a range of message sizes in a running
emulation, one nccl-tests-style row per (variant, size) with its bottleneck verdict, and the
comparison of the variants at the smallest and the largest size."""
from pathlib import Path

from testbed.collectives.connections import rank_connections
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import REFERENCE, hockney, real_size, result_row
from testbed.collectives.placements import place
from testbed.collectives.schedules import BySize, rounds
from testbed.errors import TestbedError
from testbed.fidelity import predict
from testbed.fidelity.verdict import describe_all, judge
from testbed.report import tables


def sizes(min_bytes, max_bytes, factor):
    """Message sizes from min_bytes to max_bytes, times factor each, whole elements."""
    if min_bytes < ELEMENT_BYTES or max_bytes < min_bytes or factor < 2:
        raise TestbedError(f"sizes need {ELEMENT_BYTES} <= --min-bytes <= --max-bytes and --factor >= 2")
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size - size % ELEMENT_BYTES)
        size *= factor
    return out


# Bytes of memory a rank holds per byte of message: its input, the expected sum (built in int64),
# the buffer and the staging areas of its steps.
RANK_MEMORY_PER_BYTE = 6
MAX_ITERATION_S = 600      # the longest one allreduce may take
MAX_SWEEP_S = 24 * 3600


def available_memory():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def check_sweep(size_list, ranks, variants, link_bytes, warmup, iters):
    """Refuse a sweep this machine cannot hold in memory or finish in reasonable time."""
    largest = max(size_list)
    check_memory(largest, ranks, lambda fits: f"use --max-bytes {fits} or less")
    floor = 2 * largest / link_bytes      # busbw cannot exceed the link rate
    if floor > MAX_ITERATION_S:
        raise TestbedError(f"one allreduce of {largest} bytes takes at least {floor:.0f} s at "
                           f"{link_bytes * 8 / 1e6:g} Mbit/s: use --max-bytes {int(MAX_ITERATION_S * link_bytes / 2)} "
                           "or less, or a higher --rate")
    total = variants * sum((warmup + iterations_for(size, iters, link_bytes)) * (2 * size / link_bytes + 0.01)
                           for size in size_list)
    if total > MAX_SWEEP_S:
        raise TestbedError(f"this sweep would take at least {total / 3600:.0f} hours: use fewer --iters, "
                           "a smaller --max-bytes or a higher --rate")


def check_memory(largest, ranks, fix, what="allreduce"):
    """Refuse a collective of `largest` bytes on `ranks` ranks that this machine's free memory cannot
    hold; fix(the largest size that fits) names what to change."""
    memory, have = RANK_MEMORY_PER_BYTE * largest * ranks, available_memory()
    if memory > have / 2:
        fits = int(have / 2 / RANK_MEMORY_PER_BYTE / ranks)
        raise TestbedError(f"a {largest}-byte {what} on {ranks} ranks needs about {memory / 2**30:.1f} GiB of "
                           f"memory, this machine has {have / 2**30:.1f} GiB free: {fix(fits)}")


def place_variants(topo, variants, collective="allreduce", size_list=()):
    """{variant: (schedule, hosts)}, refusing what cannot run (on this fabric, or at one of the
    sizes), before anything is built."""
    placed = {name: place(name, topo, collective) for name in variants}
    for schedule, hosts in placed.values():
        for size in size_list:
            schedule.check_count(len(hosts), size // ELEMENT_BYTES)
    return placed


def iterations_for(size, iters, link_bytes, budget=1.0, cap=200):
    """At least `iters`; small messages get more (up to `cap`, about `budget` s each), since their
    times are a few ms, and a mean of few is unsteady on 2 cores."""
    expected = 2 * size / link_bytes + 0.02
    return max(iters, min(cap, int(budget / expected)))


def modelled(topo, choices, conns, paths, count, mtu, idle_step_us):
    """{choice: (seconds, latency-bound?)} by the model of fidelity.predict with the idle fabric's
    step latency as each step's floor (None each without it): what auto chooses by."""
    return {n: idle_step_us and predict.collective_time(topo, s, conns, count, paths, mtu, idle_step_us / 1e6)
            for n, s in choices.items()}


def run_sweep(emu, placed, size_list, warmup, iters, progress=print, eager_limit=None, on_row=None,
              idle_step_us=None):
    """Rows of nccl-tests-style results, one per (variant, size), each with its verdict (see
    fidelity.verdict.judge: against the model of fidelity.predict, with the routes' paths and the
    idle fabric's latency floor, when idle_step_us is given); on_row(row) is called as each is
    measured."""
    rows, total = [], len(placed) * len(size_list)
    link_bytes = emu.topo.bytes_per_s
    progress(tables.header())
    for name, (schedule, hosts) in placed.items():
        if rows:
            emu.forget_flows()          # each variant starts with the datapath as the first found it
        choices = schedule.choices if isinstance(schedule, BySize) else {name: schedule}
        if len(choices) > 1 and not idle_step_us:
            raise TestbedError("auto chooses by the model of this fabric's step latency: sweep with the model on")
        addresses, launch = emulation_launcher(emu, hosts)
        conns = rank_connections(list(choices.values()), hosts, [port for _, port in addresses], 1)
        paths = predict.route_paths(emu.topo, emu.routing, [c for p in conns.values() for cs in p.values() for c in cs])
        with Coordinator(list(choices.values()), addresses, launch, pacing=link_bytes, eager_limit=eager_limit,
                         label=name) as coordinator:
            for size in size_list:
                count = size // ELEMENT_BYTES
                models = modelled(emu.topo, choices, conns, paths, count, emu.mtu, idle_step_us)
                chose = min(choices, key=lambda n: models[n][0]) if len(choices) > 1 else next(iter(choices))
                timeout = 60 + 40 * size / link_bytes
                drops = emu.switch_drops()
                with emu.cpu_monitor() as cpu:
                    times, wrong = coordinator.run(count, iterations_for(size, iters, link_bytes), warmup,
                                                   timeout=timeout, schedule=list(choices).index(chose))
                drops = emu.switch_drops() - drops
                row = result_row(name, size, times, wrong, len(hosts), emu.topo.rate,
                                 collective=schedule.collective)
                steps = len(rounds(choices[chose], len(hosts), count))
                row.update(ranks=len(hosts), steps=steps, step_us=round(row["time_us"] / steps, 1))
                if isinstance(schedule, BySize):
                    row.update(chose=chose, choice_model_us={n: m and round(m[0] * 1e6, 1) for n, m in models.items()})
                row.update(judge(row, cpu.result(), models[chose] or None, drops))
                rows.append(row)
                if on_row:
                    on_row(row)
                progress(f"{tables.row(row)} [{len(rows)}/{total}]")
    return rows


RATIOS = [("hdrm", "ring"), ("hdrm", "ring_topo"), ("hd", "ring"), ("hdrm", "hd"),
          ("rdrm", "ring"), ("rdrm", "rd"), ("rdrm", "hdrm"), ("auto", "hdrm"), ("rhrm", "ring"), ("rhrm", "rh"),
          ("topo", "pairwise"), ("xor_rm", "xor"), ("tree", "ring")]


WHOLE_VECTOR = {"rd", "rdrm", "auto"}    # variants whose steps move the whole vector (auto's where it chose rd, rdrm)


def compare_variants(rows, idle_exchange_us=None):
    """Winners and ratios at the smallest and the largest size; with idle_exchange_us (the idle
    fabric's exchange of the smallest size, ``Emulated.idle_exchange_us``), each recursive-doubling
    row's per-step time at the smallest size over it."""
    by = {(r["algorithm"], r["size"]): r for r in rows}
    small, large = min(r["size"] for r in rows), max(r["size"] for r in rows)
    names = list(dict.fromkeys(r["algorithm"] for r in rows))
    out = {"smallest_size": small, "largest_size": large,
           "small_winner": min(names, key=lambda n: by[n, small]["time_us"]),
           "large_winner": max(names, key=lambda n: by[n, large]["busbw_MBps"]),
           "small_time_us": {n: by[n, small]["time_us"] for n in names},
           "large_busbw_over_link": {n: by[n, large]["busbw_over_link"] for n in names},
           "wrong": sum(r["wrong"] for r in rows),
           "emulator_bottleneck_rows": [f"{r['algorithm']}@{r['size']}" for r in rows if r["emulator_bottleneck"]],
           "max_ovs_vswitchd_cores": max(r["ovs_vswitchd_cores"] for r in rows),
           "emulator": describe_all(rows, lambda r: f"{r['algorithm']}@{r['size']}"),
           "above_link_rows": [f"{r['algorithm']}@{r['size']}" for r in rows if r.get("above_link")],
           "congestion_rows": [f"{r['algorithm']}@{r['size']} ({r['time_over_model']}x, {r['queue_drops']} drops)"
                               for r in rows if r.get("congestion")],
           "small_step_us": {n: by[n, small].get("step_us") for n in names},
           "saturated_but_near_model": [f"{r['algorithm']}@{r['size']} ({r['time_over_model']}x)" for r in rows
                                        if r.get("cpu_saturated") and not r["emulator_bottleneck"]],
           "time_over_model": {f"{r['algorithm']}@{r['size']}": r["time_over_model"] for r in rows
                               if "time_over_model" in r},
           "hockney": {},
           "auto": {r["size"]: {"chose": r["chose"], "model_us": r["choice_model_us"]} for r in rows if r.get("chose")}}
    for n in names:
        mine = [r for r in rows if r["algorithm"] == n]
        fit = hockney(mine, mine[0].get("ranks", 0), mine[0].get("steps", 0),
                      mine[0].get("collective", "allreduce")) if "ranks" in mine[0] else None
        if fit and fit["alpha_us"] > 0 and fit["beta_ns_per_byte"] > 0:
            fit["reference_size"] = {str(size): round(real_size(size, fit)) for size in (small, large)}
        out["hockney"][n] = fit
    ratios = {}
    for a, b in RATIOS:
        if a in names and b in names:
            ratios[f"{a}/{b} time at {small} B"] = round(by[a, small]["time_us"] / by[b, small]["time_us"], 2)
            ratios[f"{a}/{b} busbw at {large} B"] = round(by[a, large]["busbw_MBps"] / by[b, large]["busbw_MBps"], 2)
    out["ratios"] = ratios
    if idle_exchange_us:
        out["idle_exchange_us"] = idle_exchange_us
        out["small_step_over_idle_exchange"] = {
            n: round(by[n, small]["step_us"] / idle_exchange_us, 2) for n in names
            if n in WHOLE_VECTOR and by[n, small].get("chose", n) in WHOLE_VECTOR and by[n, small].get("step_us")}
    return out


def headline(cmp):
    """The figures a run's record keeps of a comparison: each variant's busbw/link at the largest
    size and time at the smallest, the ratios, #wrong and the rows the verdict flagged."""
    out = {f"{n} busbw/link at {cmp['largest_size']} B": v for n, v in cmp["large_busbw_over_link"].items()}
    out.update({f"{n} time at {cmp['smallest_size']} B (us)": round(t, 1) for n, t in cmp["small_time_us"].items()})
    out.update(cmp["ratios"])
    out.update({f"{n} step over idle exchange at {cmp['smallest_size']} B": v
                for n, v in cmp.get("small_step_over_idle_exchange", {}).items()})
    out.update({"#wrong": cmp["wrong"], "rows flagged BOTTLENECK": len(cmp["emulator_bottleneck_rows"])})
    return out


def summary_lines(cmp):
    """The comparison as lines a person reads."""
    lines = [f"  smallest ({cmp['smallest_size']} B): fastest is {cmp['small_winner']}; times (us) "
             + ", ".join(f"{n} {t:.0f}" for n, t in cmp["small_time_us"].items()),
             f"  largest ({cmp['largest_size']} B): highest busbw is {cmp['large_winner']}; busbw/link "
             + ", ".join(f"{n} {v:.2f}" for n, v in cmp["large_busbw_over_link"].items())]
    lines += [f"  {label}: {value}" for label, value in cmp["ratios"].items()]
    lines.append(f"  per-step time at {cmp['smallest_size']} B (us): "
                 + ", ".join(f"{n} {t:.0f}" for n, t in cmp["small_step_us"].items() if t is not None))
    if cmp.get("small_step_over_idle_exchange"):
        lines.append(f"  per-step time at {cmp['smallest_size']} B over the idle fabric's exchange of "
                     f"{cmp['smallest_size']} B each way ({cmp['idle_exchange_us']:.0f} us, the farthest hosts): "
                     + ", ".join(f"{n} {v:.2f}" for n, v in cmp["small_step_over_idle_exchange"].items()))
    ref = REFERENCE
    for name, fit in cmp["hockney"].items():
        if fit and "reference_size" in fit:
            sizes = ", ".join(f"{int(k)} B here is like {human(v)}" for k, v in fit["reference_size"].items())
            lines.append(f"  {name}: alpha {fit['alpha_us']:.0f} us per step, beta {fit['beta_ns_per_byte']:.0f} ns/B "
                         f"({fit['fitted_mbit']:g} Mbit/s); on {ref['link_gbit']:g} Gbit/s links at "
                         f"{ref['step_us']:g} us per step {sizes}")
    if cmp.get("auto"):
        lines.append("  auto chose by the model (the idle fabric's step latency and the link rate, per choice in "
                     "ms): " + "; ".join(f"{size} B {c['chose']} ("
                                         + ", ".join(f"{n} {us / 1e3:.2f}" for n, us in c["model_us"].items()) + ")"
                                         for size, c in cmp["auto"].items()))
    lines += [f"  #wrong over every iteration: {cmp['wrong']}", f"  {cmp['emulator']}"]
    if cmp.get("congestion_rows"):
        lines.append("  slower than a lossless fabric, with packets dropped at the switch queues and the CPU not "
                     "saturated (TCP recovering from loss: the fabric's congestion, measured): "
                     + ", ".join(cmp["congestion_rows"]))
    if cmp.get("saturated_but_near_model"):
        lines.append("  ran on a saturated CPU, but within the model's slack (1.5x the idle fabric's step latency, "
                     "or 0.9 of the link rate with its sharing; so measured, not made by contention): "
                     + ", ".join(cmp["saturated_but_near_model"]))
    return lines


def human(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.0f} {unit}"
    return f"{size:.0f} B"
