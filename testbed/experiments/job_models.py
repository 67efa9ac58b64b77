"""Training jobs by the flow model, and the figures Crux compares them by: a job's communication
alone (every collective on its slowest group), its iteration when its collective overlaps the
others' fully (the model's bound), their connections as the runs open them (rings in NCCL's order),
the host pairs a planner places, a comparison at HPN 7.0's scale over paired hash draws, and from
measured rows the jobs' GPU utilisation, their slowdowns and the fairness of those. ``multi_job``
runs on it."""
import time

from testbed import routing
from testbed.collectives import workload as workloads
from testbed.collectives.connections import rank_connections
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.parallelism import KINDS
from testbed.collectives.placements import nccl_ring, place_jobs
from testbed.collectives.workload import scaled_count
from testbed.experiments.trials import MARKED, compare, model_trials
from testbed.fidelity import predict
from testbed.routing.hashing import Draw, Placer
from testbed.runs.jobs import FAMILIES, Job, bus_bytes, scaleup_seconds
from testbed.topology import HPN7, hpn7

SCALEUP = 9.0               # NVLink's 3,600 Gbit/s over HPN 7.0's 400 Gbit/s NIC (2 x 200G)
BOND = "round-robin"        # a bonded NIC's connections on its ports in turn: the model knows each one's port


def compute_s(job):
    steps, tail = job.phases()
    return sum(step.compute_s for step in steps) + tail


def job_intensity(topo, job, mtu):
    """Crux's GPU intensity: computation per iteration over communication alone, the latter from
    the flow model on deterministic routes (no other job, no collision), for a workload file's job
    as for a synthetic one (``job_comm_s``)."""
    comm = job_comm_s(topo, job, routing.plan(topo), mtu)
    return compute_s(job) / comm if comm else float("inf")


def job_comm_s(topo, job, plan, mtu):
    """A job's communication per iteration alone, by the flow model: each step's collective on
    its slowest group, one step after another (no overlap counted: an upper bound); a group inside
    a server without a scale-up domain at the scale-up rate."""
    total = 0.0
    for step in job.phases()[0]:
        ranks = job.parallelism.size(step.kind)
        count = scaled_count(step.size, job.scale, ranks)
        schedule = FAMILIES[job.family][step.collective]()
        slowest = 0.0
        for group in job.parallelism.groups(step.kind):
            hosts = [job.hosts[r] for r in group]
            if job.family == "ring":
                hosts = nccl_ring(topo, hosts)
            if len({topo.hosts[h].server for h in hosts}) == 1 and not topo.scaleup_domain:
                slowest = max(slowest, scaleup_seconds(step.collective, ranks, step.size, job.scaleup_gbit))
                continue
            conns = rank_connections([schedule], hosts, [job.port or 7000] * ranks, 1)
            flat = [c for peers in conns.values() for cs in peers.values() for c in cs]
            slowest = max(slowest, predict.collective_time(topo, schedule, conns, count,
                                                           model_paths(topo, plan, flat), mtu)[0])
        total += slowest
    return total


def job_connections(topo, job, draw):
    """A synthetic job's connections, as its run opens them: its one data-parallel group's Ring in
    NCCL's order (``placements.nccl_ring``), every rank listening on the job's port."""
    schedule = FAMILIES[job.family]["allreduce"]()
    hosts = nccl_ring(topo, list(job.hosts)) if job.family == "ring" else list(job.hosts)
    return schedule, rank_connections([schedule], hosts, [job.port] * len(hosts), job.streams, draw)


def job_model(topo, job, plan, draw, mtu):
    """[the model's seconds of each collective phase alone] of a synthetic job (None for a file's)."""
    if not job.workload.path.startswith("allreduce:"):
        return [None]
    schedule, conns = job_connections(topo, job, draw or Draw(0, BOND))
    paths = model_paths(topo, plan, [c for peers in conns.values() for cs in peers.values() for c in cs])
    (step,), _ = job.phases()
    size = step.size
    return predict.collective_times(topo, [(schedule, conns, scaled_count(size, job.scale, len(job.hosts)))], paths,
                                    mtu)


def model_paths(topo, plan, connections):
    """Each connection's links: hashed as Open vSwitch hashes them (ecmp), or the routes (deterministic
    or planned)."""
    if plan.mode == "ecmp":
        placer = Placer(topo, plan, BOND)
        return {c: placer.path(c) for c in connections}
    return predict.route_paths(topo, plan, connections)


def together_model(topo, jobs, plan, draws, mtu, high=()):
    """Each synthetic job's iteration when its collective overlaps the others' fully (the model's
    bound), or None when a job is a file's."""
    if any(not job.workload.path.startswith("allreduce:") for job in jobs):
        return [None] * len(jobs)
    collectives, paths, first = [], {}, set()
    for k, (job, draw) in enumerate(zip(jobs, draws)):
        schedule, conns = job_connections(topo, job, draw)
        size = job.phases()[0][0].size
        collectives.append((schedule, conns, scaled_count(size, job.scale, len(job.hosts))))
        mine = [c for peers in conns.values() for cs in peers.values() for c in cs]
        paths.update(model_paths(topo, plan, mine))
        if k in high:
            first.update(mine)
    comm = predict.collective_times(topo, collectives, paths, mtu, high=first)
    return [compute_s(job) + t for job, t in zip(jobs, comm)]


# the flow model's comparison at HPN 7.0's scale: two segments of 64 servers (jobs spread over both
# cross the aggregation tier; inside one segment rail-aligned rings would never meet it), and
# (ranks, gradient bytes, compute s) per job at 400 Gbit/s, a mix of sizes and GPU intensities
SCALE_FABRIC = (2, 64, 8, 60)
SCALE_GBIT = 400
SCALE_JOBS = ((256, 8 << 30, 0.8), (256, 8 << 30, 0.2), (128, 4 << 30, 0.4), (128, 4 << 30, 0.1))


def scale_model(seed, draws, mtu):
    """Each scheme on two HPN 7.0 segments by the flow model, over `draws` hash draws (the engine's
    paired draws): per draw each job's iteration alone (ECMP) and together under ECMP, strict
    priority for the job of the highest GPU intensity, and paths placed in Crux's order. Returns
    (rows, jobs, order)."""
    topo = HPN7(*SCALE_FABRIC, uplink_ratio=hpn7.uplink_ratio(hpn7.HPN_UPLINK_CAPACITY, SCALE_FABRIC[1],
                                                                SCALE_FABRIC[3]), rate=SCALE_GBIT * 1000,
                scaleup_domain=SCALEUP)
    hosts = place_jobs(topo, [n for n, _, _ in SCALE_JOBS], "spread", seed)
    jobs = []
    for k, ((n, size, compute), mine) in enumerate(zip(SCALE_JOBS, hosts)):
        w = workloads.data_parallel(n, size, compute)
        name = f"job{k} allreduce:{n}:{size}:{compute * 1e3:g}"
        jobs.append(Job(name, w, w.groups(), tuple(mine), port=7000 + 256 * k))
    # intensity: computation over the Ring's time at the NICs' rate (both ports of a bonded NIC)
    ideal = [2 * (len(j.hosts) - 1) / len(j.hosts) * size / (topo.bytes_per_s * 2) for j, (_, size, _) in
             zip(jobs, SCALE_JOBS)]
    order = sorted(range(len(jobs)), key=lambda k: -compute_s(jobs[k]) / ideal[k])
    ecmp = routing.plan(topo, "ecmp")
    routes, split = routing.place_flows(topo, [pair for k in order for pair in job_pairs(topo, jobs[k])], split=True)
    placed = routing.RoutingPlan("planned", {}, routes, "same", port_routes=split)

    def evaluate(form, d):
        drawn = [Draw(seed * 7919 + d * 64 + k, BOND) for k in range(len(jobs))]
        if form == "alone":
            times = [together_model(topo, [job], ecmp, [draw], mtu)[0] for job, draw in zip(jobs, drawn)]
        else:
            times = together_model(topo, jobs, placed if form == "paths" else ecmp, drawn, mtu,
                                   high={order[0]} if form == "priority" else ())
        return [{"run": "alone" if form == "alone" else "together", "job_index": k, "iteration_s": t}
                for k, t in enumerate(times)]

    return model_trials(("alone", "ecmp", "priority", "paths"), draws, evaluate), jobs, order


def scale_lines(seed, draws, mtu):
    started = time.monotonic()
    rows, jobs, order = scale_model(seed, draws, mtu)
    lines = [f"flow model on two HPN 7.0 segments ({SCALE_FABRIC[1]} servers x {SCALE_FABRIC[2]} rails each, "
             f"{SCALE_FABRIC[3]} aggregation switches per plane, {SCALE_GBIT} Gbit/s, a scale-up domain at "
             f"{SCALEUP:g}x, rings in NCCL's order), jobs "
             + ", ".join(j.name.split(" ", 1)[1] for j in jobs) + f" spread; {draws} draws in "
             f"{time.monotonic() - started:.0f} s:"]
    for k in range(len(jobs)):
        alone = [r for r in rows if r["job_index"] == k and r["run"] == "alone"]
        ecmp = [r for r in rows if r["job_index"] == k and r["form"] == "ecmp"]
        c = compare(alone + ecmp, ("alone", "ecmp"), "iteration_s", f"job{k} iteration, alone against together", 3)
        lines.append(f"  {c.line()}")
    for scheme in ("priority", "paths"):
        pairs = [{"trial": t, "form": f, "utilisation": utilisation(rows, jobs, f, t)}
                 for t in range(draws) for f in ("ecmp", scheme)]
        c = compare(pairs, ("ecmp", scheme), "utilisation", f"GPU utilisation together, {scheme} against ecmp", 3)
        lines.append(f"  {c.line()}")
    lines.append(f"  (priority and the first choice of paths: job{order[0]}; model only: no queues, no TCP)")
    return lines


def job_pairs(topo, job):
    """The host pairs a job's groups exchange data between over the fabric (a Ring's neighbours
    in NCCL's order; pairs on one server's scale-up domain left out)."""
    out = []
    for kind in ("TP", "DP", "EP", "DP_EP", "PP"):
        if job.parallelism.size(kind) > 1:
            for ranks in job.parallelism.groups(kind):
                hosts = nccl_ring(topo, [job.hosts[r] for r in ranks])
                out += [(a, b) for a, b in zip(hosts, hosts[1:] + hosts[:1]) if not topo.same_server(a, b)]
    return out


def utilisation(rows, jobs, form, trial):
    """Crux's GPU utilisation of the jobs together: computation over iteration, weighted by GPUs."""
    mine = {r["job_index"]: r for r in rows if r["form"] == form and r["trial"] == trial and r["run"] == "together"}
    if len(mine) < len(jobs):
        return None
    return sum(len(j.hosts) * compute_s(j) / mine[k]["iteration_s"] for k, j in enumerate(jobs)) / \
        sum(len(j.hosts) for j in jobs)


def alone_form(scheme):
    """The form whose runs alone a scheme's slowdowns are taken against: ECMP, under marking where
    the scheme is (``trials.with_marking``'s twin)."""
    return "ecmp" + MARKED if scheme.endswith(MARKED) else "ecmp"


def slowdowns(rows, jobs, form, trial):
    """Each job's iteration together under `form` over alone (ECMP, with marking where the form
    has it) in one trial, or None."""
    base = alone_form(form)
    alone = {r["job_index"]: r["iteration_s"] for r in rows if r["trial"] == trial and r["run"] == "alone"
             and r.get("form", base) == base}
    together = {r["job_index"]: r["iteration_s"] for r in rows
                if r["trial"] == trial and r["form"] == form and r["run"] == "together"}
    if len(alone) < len(jobs) or len(together) < len(jobs):
        return None
    return [together[k] / alone[k] for k in range(len(jobs))]


def jain(values):
    """Jain's fairness index of values: 1 when all are equal, 1/n when one has everything."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def fairness(rows, jobs, form, trial):
    """(Jain's index of the jobs' speeds together over alone, the worst job's slowdown) in one trial."""
    slow = slowdowns(rows, jobs, form, trial)
    return (None, None) if slow is None else (jain([1 / s for s in slow]), max(slow))


def cassini_offsets(topo, jobs, mtu):
    """CASSINI's start offsets, static: each job's, the communication time alone (flow model) of
    the jobs before it, so that their communication phases take turns."""
    comm = [job_comm_s(topo, job, routing.plan(topo), mtu) for job in jobs]
    return [round(sum(comm[:k]), 3) for k in range(len(jobs))]


def comparisons(rows, jobs, schemes, trials):
    """Each job's slowdown under each scheme, and each scheme against ECMP: utilisation (Crux's
    figure), the fairness of the jobs' slowdowns and the worst job's slowdown. A scheme under ECN
    marking ('+ecn') takes its slowdowns against the job alone under marking."""
    out = []
    for k, job in enumerate(jobs):
        for scheme in schemes:
            base = alone_form(scheme)
            alone = [dict(r, form="alone") for r in rows if r["job_index"] == k and r["run"] == "alone"
                     and r["form"] == base]
            together = [r for r in rows if r["job_index"] == k and r["run"] == "together" and r["form"] == scheme]
            out.append(compare(alone + together, ("alone", scheme), "iteration_s",
                               f"{job.name} iteration, alone against together ({scheme})", 3))
    for scheme in schemes[1:]:
        pairs = [{"trial": t, "form": f, "utilisation": utilisation(rows, jobs, f, t),
                  "fairness": fairness(rows, jobs, f, t)[0], "worst": fairness(rows, jobs, f, t)[1]}
                 for t in range(trials) for f in ("ecmp", scheme)]
        out.append(compare(pairs, ("ecmp", scheme), "utilisation", f"GPU utilisation together, {scheme} against ecmp",
                           3))
        out.append(compare(pairs, ("ecmp", scheme), "fairness",
                           f"fairness of the slowdowns (Jain), {scheme} against ecmp", 3, by="difference"))
        out.append(compare(pairs, ("ecmp", scheme), "worst", f"worst job's slowdown, {scheme} against ecmp", 3))
    # under marking, the switch ports' marks in the runs together: all of them (the same on every
    # job's row), then those on each job's packets
    marked = [r for r in rows if r["run"] == "together" and "marked" in r]
    for scheme in [s for s in schemes if s.endswith(MARKED) and s != alone_form(s)]:
        out.append(compare([r for r in marked if r["job_index"] == 0], (alone_form(scheme), scheme), "marked",
                           f"ECN marks together, {scheme} against {alone_form(scheme)}", 0))
        for k, job in enumerate(jobs):
            mine = [r for r in marked if r["job_index"] == k and "sent_marked" in r]
            if mine:
                out.append(compare(mine, (alone_form(scheme), scheme), "sent_marked",
                                   f"{job.name}'s ECN marks together, {scheme} against {alone_form(scheme)}", 0))
    return out


def shared_lines(seen, topo, jobs):
    """The links the jobs shared in trial 0's run together under each scheme, busiest first, out of
    every switch-to-switch link of the fabric (each direction one)."""
    every = sum(1 for link in topo.fabric_links() for _ in link.ends())
    lines = []
    for scheme, rows in seen.get(0, {}).items():
        links = {}
        for k, row in enumerate(rows):
            for link, size in row.get("link_bytes", {}).items():
                links.setdefault(link, {})[k] = size
        shared = sorted(((link, by) for link, by in links.items() if len(by) > 1),
                        key=lambda item: -sum(item[1].values()))
        said = "; ".join(f"{link} " + "/".join(f"{by.get(k, 0) / 1e6:.1f}" for k in range(len(jobs)))
                         for link, by in shared[:4])
        lines.append(f"  {scheme}: {len(shared)} of the fabric's {every} switch-to-switch links carried two jobs or "
                     f"more, {len(links)} carried any" + (f" (MB per job, busiest: {said})" if shared else ""))
    return lines


# --- a replay's report ----------------------------------------------------------------------
def all_ranks_bytes(job):
    """What one iteration of the same collectives put on the fabric when every one spanned all of
    the job's ranks (the replay before groups)."""
    n = len(job.hosts)
    return round(sum(bus_bytes(c, n, scaled_count(size, job.scale, n) * ELEMENT_BYTES)
                     for c, size in ((s.collective, s.size) for s in job.phases()[0])))


def group_lines(row):
    """Per group kind: the communication the iteration waited for (a weight gradient's collective
    overlaps the backward pass, as in SimAI, and counts only where the next forward waits for it),
    its share of the iteration, and bytes on the fabric and inside servers; the pipeline's bubble."""
    lines = []
    for kind in KINDS:
        if f"{kind}_s" in row:
            lines.append(f"  {'':22s} {kind:5s} {row[f'{kind}_s'] * 1e3:9.1f} ms exposed "
                         f"({row[f'{kind}_share']:.0%} of the iteration)  fabric "
                         f"{row[f'{kind}_fabric_bytes'] / 1e6:9.2f} MB  inside servers "
                         f"{row[f'{kind}_scaleup_bytes'] / 1e6:9.2f} MB")
    if row.get("split_note"):
        lines.append(f"  {'':22s} note: {row['split_note']}")
    if row.get("bubble_s"):
        share = row["bubble_s"] / row["iteration_s"]
        lines.append(f"  {'':22s} pipeline bubble {row['bubble_s'] * 1e3:.1f} ms ({share:.0%} of the iteration; "
                     "SimAI's: the stage's time, its embedding layer left out, x (pp - 1) / (ga x vpp); the "
                     "pipeline's sends, one per micro-batch each way, overlap it and wait only at its end)")
    fabric = sum(row.get(f"{kind}_fabric_bytes", 0) for kind in KINDS)
    every = row["all_ranks_fabric_bytes"]
    lines.append(f"  {'':22s} on the fabric per iteration {fabric / 1e6:.2f} MB: {fabric / max(every, 1):.2f} of the "
                 f"{every / 1e6:.2f} MB the same collectives over all the ranks would put there")
    return lines


BYTES_DOMINATE = 64 << 10     # a collective this large or larger is mostly bytes on the wire here, not steps


def scale_note(jobs, scale, workload_gbit):
    """A replay's scale said first: at the default --workload-gbit every collective shrinks to a few
    hundred bytes, and a kind's time is then the emulator's per-step latency, not its bytes."""
    largest = max((scaled_count(size, job.scale, job.parallelism.size(kind)) * ELEMENT_BYTES, size)
                  for job in jobs for kind, size in ((s.kind, s.size) for s in job.phases()[0]))
    scaled, written = largest
    if scaled >= BYTES_DOMINATE:
        return [f"# the largest collective replayed is {scaled} B ({written} B as written): bytes dominate its time"]
    needed = scale * workload_gbit * written / BYTES_DOMINATE
    return [f"# NOTE: at this scale the largest collective replayed is {scaled} B ({written} B as written x "
            f"{scale:.3g}): every kind's time is mostly the emulator's per-step latency, not its bytes; "
            f"--workload-gbit {needed:.3g} or less makes it {BYTES_DOMINATE >> 10} KiB (iterations then last longer)"]


def replay_header(name, workload, jobs, scale, compute_s, iters, batch, base):
    """The header of a workload's replay over systems and rank counts: what it replays, at what
    scale, and each job's parallelism."""
    return [f"# {name}: workload {workload.path} ({workload.parallelism}, {len(workload.layers)} layers, collectives "
            f"{', '.join(workload.collectives())}), sizes x {scale:.3g} (--rate over --workload-gbit), "
            f"{compute_s * 1e3:.1f} ms of computation per iteration, {iters} iterations per point, "
            f"{batch} samples per rank; N0 = {base}",
            *[f"#   {label}: {job.parallelism.describe()}, {job.family} family" for label, job in jobs]]
