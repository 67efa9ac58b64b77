"""Which fault slowed a collective, and where, from what an operator of a training cluster has: each
rank's per-step timestamps in the collective library, the switch ports' queues, and the
controller's port events. It never reads what was injected.

Collectives are periodic and every rank does the same work, so a window after a change is compared
with a window before it (a fault-free trial's, or the job's own first iterations): C4's approach
(arXiv 2406.04594), which found faulty components from the collective library's timings.

- link-down, switch-down: the controller saw a port go down (all of a switch's ports: the switch);
  two downs of one link in the window: it flaps (still link-down, at that link).
- link-slow: a switch port whose queue grew (mean packets after less before at least QUEUE_GROWTH,
  and QUEUE_RATIO times before) and which, while it held a queue, sent less than DRAIN_SLOW of
  the least a port at its link's rate would have (its counters: over each interval between
  samples that begins with a queue, what the port held then, an interval's worth at most: a
  healthy port sends that whatever else arrives, so it reads 1 or more; the design doc says which
  simpler shares misread bursty healthy ports or missed slowed host links). A queue drained at
  the link's rate is congestion (two flows hashed onto one link, a second job's traffic), not a
  fault, and names nothing. A port that held
  a queue less than BUSY_LEAST_S of the window cannot yet be told from congestion by the sampler's
  timing (a dump of every qdisc takes ~9 ms of a 20 ms interval, 160 ms at the 99th percentile; a
  CI run named a healthy port slow on a share over 0.1 s): the window is UNDECIDED, names nothing
  and is not judged on the ranks' timings either (a rank behind a slowed link is late for it), and
  the monitor waits for the next. A slowed link the job crosses holds a queue 0.9-1.0 s of every
  1 s window at 0.8 and 0.5 of its rate (a probe's), so it is named a window later where its fault
  began late in one. (A host's own egress is not an operator's to sample; the switch port facing
  it is, and fills for traffic into a slowed host link.)
- link-slow, a link that loses packets (``loss_finding``): where the job's paths are known, the
  segments the ranks retransmitted (each rank reads its sockets' TCP_INFO, as a host agent does,
  less those its peer reported by D-SACK as already had: a tail-loss probe or a timeout that
  queueing delay, not a loss, set off) that no switch port's FIFO drops on their path explain,
  LOSS_LEAST or more in a window and LOSS_RATIO times the baseline's per window; the link named is
  the one 007 (NSDI 2018) would blame, voting with the paths of the pairs that retransmitted. (A
  lossy link slows the job without a queue: without this, the ranks' timings named the rank behind
  it.) Retransmissions are explained, and so not counted, where their path crosses a link that
  dropped at a FIFO's limit: a switch port's, or a host's own egress (its NIC's drop counter,
  which a host agent reads: a second job on the ranks' hosts overflows it); or a link the
  controller saw go down or come back up in the window or RECOVERY_S before it, or that is still
  down (TCP resending what a cut lost, backed off, for seconds after the cable is back).
- rank-hung, rank-slow (a hung rank is judged before retransmissions: its peers resend to it as
  it stops, and those named a link on its paths): from each rank's own delay in each step, the
  part of the step's time that nothing outside the rank explains: from the later of its previous
  step's end, its sender's handing over the step's message and, where its send waited for a
  clear-to-send, its receiver's being ready, to its step's end; and, for the first step, how much
  later than the first rank it started.
  A rank waiting for data that came late owes nothing; the rank that made it late does. A rank with
  one own delay of HANG_S or more (HANG_RATIO times its own most before: a straggler's long
  stalls do not hide another rank's hang) is hung. A rank held back by
  its CPU (a share too small for it) stalls now and then, for up to a scheduling period: its own
  delays spike. A spike is what an own delay has above SPIKE_TIMES x the window's median own delay
  plus SPIKE_FLOOR_S; a rank whose spikes grew by SPIKE_GROWTH_S or more per step on average,
  RANK_RATIO times as much as any other rank's, is slow; so is one whose own delays grew evenly by
  RANK_FLOOR_S and RANK_SHIFT of its mean before or more per step, RANK_RATIO times as much as any
  other rank's. (An own delay holds the step's transfer, so a few ms is drift.) A rank that stood
  out before (``straggler``: RANK_RATIO times the median rank's mean own delay, as one slow since
  the job began does) is slow only where its own delays grew by STRAGGLER_SHIFT of what they were:
  held to a CPU quota, it stalls a whole quota period once or twice an iteration (55 or 90 ms per
  step on average in a faultbench train split), which named it slow in most windows. A slow rank is
  named only where the job's iterations took JOB_SHIFT longer than before or more: a rank that
  costs the job less is not a fault an operator is paged for (Greyhound alarms only on a shift of
  10% or more; without it, ranks a few ms behind the others on a job running at full speed raised
  most of the false alarms). A rank hung or slow is named only where its longest stall in the
  window did not begin while a link on its paths was down, or RECOVERY_S or less after the link
  went down or came back (``unless_recovering``): TCP's retransmission timer, backed off while the
  link was out, holds the rank's step for up to seconds after the cable is back (measured: hangs of
  1.9-7.9 s raised 1.8-5.1 s after the link came back, 5 of 8 false alarms in a faultbench run;
  after the hang rule learnt it, spikes of 0.1-0.67 s named slow ranks, 5 of 5 in the next). Such
  a window is UNDECIDED: not the rank's fault, and not a healthy window for the baseline.
- none: nothing stands out. With ECN marking (``--ecn``) the ports that marked in the window are
  named as congestion, not a fault: a port that marks holds a queue above K, which its link's rate
  drains (a slowed link is named by the queue rule above first), as a second job's traffic does.
The confidence is how far the finding stands above the next candidate (0 to 1).
"""
import statistics
from dataclasses import dataclass, field

QUEUE_GROWTH, QUEUE_RATIO = 5.0, 3.0      # packets, times
DRAIN_SLOW, BUSY_LEAST_S = 0.9, 0.5        # of what a port at its rate sends; seconds queued in a window
HANG_S, HANG_RATIO = 1.0, 3.0
RANK_RATIO, RANK_FLOOR_S, RANK_SHIFT = 3.0, 0.002, 0.10
JOB_SHIFT = 0.10          # how much longer the job's iterations must be for a slow rank
SPIKE_TIMES, SPIKE_FLOOR_S, SPIKE_GROWTH_S = 2.0, 0.005, 0.001
STRAGGLER_SHIFT = 1.0     # how much a straggler's own delays must grow, of what they were
LOSS_LEAST, LOSS_RATIO = 3, 3.0           # segments retransmitted in a window; times the baseline's per window
RECOVERY_S = 4.0          # after a port event on a link, its paths' retransmissions are recovery (RTO backoff)
KINDS = ("none", "link-slow", "link-down", "switch-down", "rank-slow", "rank-hung")
UNDECIDED = "undecided"   # not a finding: a queue grew too briefly to tell, or a stall an outage explains


@dataclass(frozen=True)
class Finding:
    kind: str             # one of KINDS
    where: str            # a link (A-B, by labels), a switch label, "rank N", or ""
    confidence: float     # 0 to 1
    evidence: str         # what it rests on, in words
    at: float | None = None   # when the first evidence was seen (monotonic seconds), if known

    def to_dict(self):
        return {"kind": self.kind, "where": self.where, "confidence": round(self.confidence, 3),
                "evidence": self.evidence, "at": self.at}


@dataclass
class Window:
    """What was measured over a span, on the monotonic clock: timing = [per iteration: [per rank:
    {"start", "steps": [[sent, end, from, to, rendezvous]], "retrans": [[peer, segments]]}]]
    (``programs.rank``); queues = {port: [(time,
    packets, bytes, drops, bytes sent)]} (``probes.queues``); events = [(time, switch, port, up)];
    edges: the hosts' own egress FIFOs, sampled as queues are (their drops only are read); earlier:
    port events before the window that bear on it, which the monitor keeps (``recent_events``);
    marks: with ECN marking, {port: [(time, packets marked since the marker was attached)]};
    history: every port event before the window (a stall may have begun long before it)."""
    timing: list
    queues: dict
    events: list
    parts: tuple = ()     # the windows a baseline was merged from (``monitor.merged``), each judged on its own
    edges: dict = field(default_factory=dict)
    earlier: list = field(default_factory=list)
    marks: dict = field(default_factory=dict)
    history: list = field(default_factory=list)     # every port event the monitor saw before the window

    def each(self):
        """The windows this one was merged from, or itself alone."""
        return self.parts or (self,)


def own_delays(iteration):
    """{rank: [its own delay in seconds: how late it started, then per step]} for one iteration's
    timing (see the module's docstring)."""
    first = min(t["start"] for t in iteration)
    ready = lambda t, k: t["start"] if k == 0 else t["steps"][k - 1][1]
    out = {}
    for r, t in enumerate(iteration):
        delays = [t["start"] - first]
        for k, (_, end, sender, receiver, rendezvous) in enumerate(t["steps"]):
            gate = ready(t, k)
            if sender is not None and k < len(iteration[sender]["steps"]):
                gate = max(gate, iteration[sender]["steps"][k][0])
            if rendezvous and k < len(iteration[receiver]["steps"]):
                gate = max(gate, ready(iteration[receiver], k))
            delays.append(max(0.0, end - gate))
        out[r] = delays
    return out


def window_delays(timing):
    """{rank: every own delay over the window's iterations}"""
    out = {}
    for iteration in timing:
        for r, delays in own_delays(iteration).items():
            out.setdefault(r, []).extend(delays)
    return out


def _mean_packets(samples):
    return statistics.mean(s[1] for s in samples) if samples else 0.0


def drain_share(samples, rate_bytes):
    """What a port sent while it held a queue, over the least a port at its link's rate would have
    sent then: in each interval between samples that begins with a packet or more queued, what it
    held at the first (an interval's worth at most), which a port at its rate sends whatever else
    arrives. At or above 1 on a healthy port, bar the sampler's timing; a slowed one, holding
    more than its rate drains in an interval, reads about its fraction. None where it held a queue
    less than BUSY_LEAST_S."""
    busy = sent = owed = 0.0
    for a, b in zip(samples, samples[1:]):
        if b[0] > a[0] and a[1] >= 1:
            busy, sent, owed = busy + b[0] - a[0], sent + b[4] - a[4], owed + min(a[2], rate_bytes * (b[0] - a[0]))
    return sent / owed if busy >= BUSY_LEAST_S and owed > 0 else None


def port_finding(topo, before, after):
    """link-down or switch-down from the controller's port events of `after`, or None."""
    downs = [(t, switch, port) for t, switch, port, up in after.events if not up]
    if not downs:
        return None
    links = {}
    for t, switch, port in downs:
        link = topo.link_at(switch, port)
        if link is not None:
            links.setdefault(link, []).append(t)
    by_switch = {}
    for link in links:
        for node in (link.a, link.b):
            if node in topo.switches:
                by_switch.setdefault(node, set()).add(link)
    for switch, gone in by_switch.items():
        if len(gone) == sum(1 for link in topo.links if switch in (link.a, link.b)) and len(gone) > 1:
            return Finding("switch-down", topo.label(switch), 1.0, f"all {len(gone)} ports of {topo.label(switch)} "
                           "went down", min(t for link in gone for t in links[link]))
    link, times = max(links.items(), key=lambda item: len(item[1]))
    flapping = " (down twice or more: flapping)" if len(times) > 1 else ""
    second = sorted((len(t) for t in links.values()), reverse=True)[1:2]
    confidence = 1.0 if not second else 1 - second[0] / (len(times) + 1)
    return Finding("link-down", link_label(topo, link), confidence, f"the controller saw {len(times)} port-down "
                   f"event(s) on it{flapping}", min(times))


def queue_finding(topo, before, after):
    """link-slow at the port whose queue grew most among those that drained below DRAIN_SLOW of
    what their link's rate must (drain_share); else UNDECIDED where a queue grew on a port
    backlogged too briefly to tell; else None."""
    growth, unsure = [], []
    for port, samples in after.queues.items():
        now, then = _mean_packets(samples), _mean_packets(before.queues.get(port, []))
        if now - then >= QUEUE_GROWTH and now >= QUEUE_RATIO * max(then, 0.5):
            node, number = port.rsplit("-eth", 1)
            link = port_link(topo, port)
            share = drain_share(samples, link.bytes_per_s) if link else None
            if share is None:
                unsure.append((now - then, node, number, now, then))
            elif share < DRAIN_SLOW:
                growth.append((now - then, node, number, link, now, then, share, samples))
    if not growth and unsure:
        _, node, number, now, then = max(unsure)
        return Finding(UNDECIDED, f"{topo.label(node)}:{number}", 0.0, f"the queue at {topo.label(node)}:{number} "
                       f"grew from {then:.1f} to {now:.1f} packets, backlogged under {BUSY_LEAST_S:g} s: "
                       "too briefly to tell a slow link from congestion")
    if not growth:
        return None
    growth.sort(key=lambda g: g[0], reverse=True)
    top, node, number, link, now, then, share, samples = growth[0]
    second = growth[1][0] if len(growth) > 1 else 0.0
    first = next((s[0] for s in samples if s[1] >= QUEUE_GROWTH), None)
    return Finding("link-slow", link_label(topo, link), 1 - second / top,
                   f"the queue at {topo.label(node)}:{number} grew from {then:.1f} to {now:.1f} packets, "
                   f"sending {share:.2f} of what its link's rate drains while queued", first)


def resent(window):
    """{(rank, peer): segments the rank retransmitted to the peer over the window's iterations}"""
    out = {}
    for iteration in window.timing:
        for rank, t in enumerate(iteration):
            for peer, segments in t.get("retrans", ()):
                out[rank, peer] = out.get((rank, peer), 0) + segments
    return out


def port_link(topo, port):
    """The link at a switch port named as the queue sampler names it (SWITCH-ethN), or None."""
    node, number = port.rsplit("-eth", 1)
    return topo.link_at(node, int(number))


def dropping_links(topo, window):
    """The links whose switch ports, or hosts' egress, dropped packets at their FIFO's limit over the
    window."""
    out = set()
    for port, samples in [*window.queues.items(), *window.edges.items()]:
        if len(samples) > 1 and samples[-1][3] > samples[0][3]:
            out.add(port_link(topo, port))
    return out - {None}


def disturbed_links(topo, window):
    """The links with a port event in the window or in what the monitor kept of those before it
    (``Window.earlier``)."""
    return {topo.link_at(switch, port) for _, switch, port, _ in [*window.earlier, *window.events]} - {None}


def recent_events(events, start):
    """Of port events seen before `start`, those that bear on a window starting then: the ones
    RECOVERY_S or less before it, and the last of each port whose last is a down (still down)."""
    last = {}
    for event in sorted(events):
        last[event[1:3]] = event
    return sorted({e for e in events if e[0] >= start - RECOVERY_S} | {e for e in last.values() if not e[3]})


def unexplained(topo, window, paths):
    """resent(window) where the data's path crossed no port that dropped at its FIFO's limit and no
    link that went down or came back (``disturbed_links``)."""
    explained = dropping_links(topo, window) | disturbed_links(topo, window)
    return {pair: n for pair, n in resent(window).items() if pair in paths and not paths[pair] & explained}


def loss_finding(topo, before, after, paths):
    """link-slow at a link that loses packets where no queue overflowed: the ranks' retransmissions
    over `paths` ({(rank, peer): links its data crosses}), LOSS_LEAST segments or more and
    LOSS_RATIO times as many as in a window before on average, that no switch port's FIFO drops
    explain (a lossy link's first window, too few to alarm on, may have joined the baseline).
    Which link, as 007 (NSDI 2018) votes with the paths of flows that retransmitted: each link
    scores the retransmissions of the pairs that cross it, times the share of the pairs crossing
    it that retransmitted (a link that pairs cross cleanly is less likely the one). Links the paths
    cannot tell apart (a ring's fabric link is often crossed by one pair only) tie: the first by
    label is named, confidence 0, and the evidence names the others. None where the paths are not
    known."""
    if not paths:
        return None
    now = unexplained(topo, after, paths)
    total = sum(now.values())
    was = statistics.mean([sum(unexplained(topo, w, paths).values()) for w in before.each()] or [0])
    if total < LOSS_LEAST or total < LOSS_RATIO * was:
        return None
    votes, crossing, lossy = {}, {}, {}
    for pair, links in paths.items():
        for link in links:
            crossing[link] = crossing.get(link, 0) + 1
            if now.get(pair):
                votes[link] = votes.get(link, 0) + now[pair]
                lossy[link] = lossy.get(link, 0) + 1
    score = sorted(((votes[link] * lossy[link] / crossing[link], link_label(topo, link), link) for link in votes),
                   key=lambda item: (-item[0], item[1]))
    (top, label, link), second = score[0], score[1][0] if len(score) > 1 else 0.0
    tied = [other for value, other, _ in score[1:] if value == top]
    return Finding("link-slow", label, 1 - second / top,
                   f"{total} segments retransmitted with no FIFO drop on their paths ({was:.1f} per window "
                   f"before); {lossy[link]} of the {crossing[link]} rank pairs crossing {label} retransmitted, "
                   f"{votes[link]} segments" + (f"; the paths cannot tell it from {', '.join(tied)}" if tied else ""))


def longest_stalls(timing):
    """{rank: (its longest own delay in the window's iterations, when that delay began)}"""
    out = {}
    for iteration in timing:
        for r, delays in own_delays(iteration).items():
            ends = [iteration[r]["start"]] + [step[1] for step in iteration[r]["steps"]]
            for delay, end in zip(delays, ends):
                if r not in out or delay > out[r][0]:
                    out[r] = (delay, end - delay)
    return out


def outage_on_paths(topo, window, paths, rank, began):
    """A link on `rank`'s paths (its data to or from any peer) that was down when its stall began
    at `began`, or went down or came back RECOVERY_S or less before then or since; None where there
    is none or the job's paths are unknown."""
    if not paths:
        return None
    crossed = set().union(*(links for pair, links in paths.items() if rank in pair))
    last = {}
    for t, switch, port, up in sorted([*window.history, *window.events]):
        link = topo.link_at(switch, port)
        if link not in crossed:
            continue
        if t >= began - RECOVERY_S:
            return link
        last[link] = up
    return next((link for link, up in last.items() if not up), None)


def hang_finding(before, after):
    """rank-hung from the ranks' own delays, or None."""
    now, was = window_delays(after.timing), window_delays(before.timing)
    if len(now) < 2:
        return None
    worst = {r: max(now[r]) for r in now}
    hung = max(worst, key=worst.get)
    before_worst = max(was.get(hung, ()), default=0.0)
    second = sorted(worst.values())[-2]
    if worst[hung] >= HANG_S and worst[hung] >= HANG_RATIO * before_worst:
        return Finding("rank-hung", f"rank {hung}", 1 - second / worst[hung],
                       f"rank {hung} held the others up {worst[hung]:.2f} s in one step (before, it at most "
                       f"{before_worst:.3f} s)")
    return None


def unless_recovering(finding, topo, after, paths):
    """A rank's `finding` (rank-hung or rank-slow), or UNDECIDED where that rank's longest stall in
    `after` began while a link on its paths was out or just back (``outage_on_paths``)."""
    if finding is None:
        return None
    rank = int(finding.where.split()[-1])
    out = outage_on_paths(topo, after, paths, rank, longest_stalls(after.timing)[rank][1])
    if out is None:
        return finding
    return Finding(UNDECIDED, "", 0.0, f"{finding.evidence}; its longest stall began while {link_label(topo, out)} "
                   "on its paths was out or just back: TCP's retransmission timer, not the rank")


def rank_finding(before, after):
    """rank-hung or rank-slow from the ranks' own delays, or None."""
    return hang_finding(before, after) or slow_finding(before, after)


def slow_finding(before, after):
    """rank-slow from the ranks' own delays, or None."""
    now, was = window_delays(after.timing), window_delays(before.timing)
    if len(now) < 2 or not slower_job(before.timing, after.timing):
        return None
    ranks = sorted(now)
    worst = {r: max(now[r]) for r in ranks}
    spikes_now, spikes_was = spikes(now), spikes(was)
    grew = {r: spikes_now[r] - spikes_was.get(r, 0.0) for r in ranks}
    mean = {r: statistics.mean(now[r]) for r in ranks}
    then = {r: statistics.mean(was[r]) if was.get(r) else 0.0 for r in ranks}
    known = straggler(then)
    slow, others = standout(grew)
    least = STRAGGLER_SHIFT * spikes_was.get(slow, 0.0) if slow == known else 0.0
    if grew[slow] >= max(SPIKE_GROWTH_S, least) and grew[slow] >= RANK_RATIO * others:
        return Finding("rank-slow", f"rank {slow}", 1 - others / grew[slow],
                       f"rank {slow} stalled the others {spikes_now[slow] * 1e3:.1f} ms per step on average in "
                       f"spikes up to {worst[slow] * 1e3:.0f} ms ({grew[slow] * 1e3:.1f} ms more than before; "
                       f"any other rank {others * 1e3:.1f} ms more at most)")
    grew = {r: mean[r] - then[r] for r in ranks}
    slow, others = standout(grew)
    shift = STRAGGLER_SHIFT if slow == known else RANK_SHIFT
    if grew[slow] >= max(RANK_FLOOR_S, shift * then[slow]) and grew[slow] >= RANK_RATIO * others:
        return Finding("rank-slow", f"rank {slow}", 1 - others / grew[slow],
                       f"rank {slow} held the others up {mean[slow] * 1e3:.1f} ms per step on average, "
                       f"{grew[slow] * 1e3:.1f} ms more than before "
                       f"(any other rank {others * 1e3:.1f} ms more at most)")
    return None


def straggler(then):
    """The rank whose mean own delay before ({rank: seconds}) was the most, and RANK_RATIO times the
    median rank's (a rank slow since the job began, as one with more work than the others is), or
    None."""
    if len(then) < 2:
        return None
    top = max(then, key=then.get)
    return top if then[top] >= max(RANK_FLOOR_S, RANK_RATIO * statistics.median(then.values())) else None


def iteration_seconds(iteration):
    """An iteration's length: from its first rank's start to its last rank's last step's end."""
    return max(t["steps"][-1][1] if t["steps"] else t["start"] for t in iteration) - min(t["start"] for t in iteration)


def slower_job(before, after):
    """Whether the iterations of `after` took JOB_SHIFT longer on average than those of `before`
    (timings; True where either has none to compare)."""
    if not before or not after:
        return True
    then = statistics.mean(iteration_seconds(it) for it in before)
    return statistics.mean(iteration_seconds(it) for it in after) >= (1 + JOB_SHIFT) * then


def spikes(delays):
    """{rank: its own delays' excess over SPIKE_TIMES x the window's median own delay plus
    SPIKE_FLOOR_S, per step}"""
    every = [d for ds in delays.values() for d in ds]
    if not every:
        return {}
    limit = SPIKE_TIMES * statistics.median(every) + SPIKE_FLOOR_S
    return {r: sum(max(0.0, d - limit) for d in ds) / len(ds) for r, ds in delays.items() if ds}


def standout(values):
    """(the rank of the largest value, the largest of the others' or 0)"""
    top = max(values, key=values.get)
    return top, max([values[r] for r in values if r != top] + [0.0])


def link_label(topo, link):
    name = lambda node: topo.switches[node].label if node in topo.switches else node
    return f"{name(link.a)}-{name(link.b)}"


def marking(topo, window):
    """{switch port label: packets it marked in the window}, the ports that marked any: congestion
    signalled (a queue above K), which is not a fault."""
    out = {}
    for port, samples in window.marks.items():
        if len(samples) > 1 and samples[-1][1] > samples[0][1]:
            node, number = port.rsplit("-eth", 1)
            out[f"{topo.label(node)}:{number}"] = samples[-1][1] - samples[0][1]
    return out


def diagnose(topo, before, after, paths=None):
    """The fault that `after` shows against `before` (Windows), in the order an operator trusts the
    evidence: port events, queues, a hung rank, retransmissions (where the job's `paths` are known:
    see ``loss_finding``), then the ranks' own timings; Finding('none') when nothing stands out,
    Finding(UNDECIDED) when a queue grew too briefly to judge (no finding yet: the next window tells)
    or a rank's stall began while a link on its paths was out (``hang_finding``). A hung rank is
    named even where a queue grew too briefly to judge: the job's backlog drains as the rank comes
    back, and the windows it stalled held no traffic to compare the queue with."""
    queued = port_finding(topo, before, after) or queue_finding(topo, before, after)
    if queued is not None and queued.kind != UNDECIDED:
        return queued
    hung = unless_recovering(hang_finding(before, after), topo, after, paths)
    if hung is not None or queued is not None:
        return hung or queued
    for rule in (lambda: loss_finding(topo, before, after, paths),
                 lambda: unless_recovering(slow_finding(before, after), topo, after, paths)):
        finding = rule()
        if finding is not None:
            return finding
    marked = marking(topo, after)
    said = "; ".join(f"{port} marked {n}" for port, n in sorted(marked.items(), key=lambda m: -m[1])[:3])
    return Finding("none", "", 1.0, "nothing stands out against the window before" +
                   (f"; congestion, not a fault: ECN marks ({said})" if marked else ""))
