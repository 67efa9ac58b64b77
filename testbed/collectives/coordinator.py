"""Run real socket allreduce: one rank process per rank (``testbed.programs.rank``), driven over its
stdin/stdout.

A launcher starts a rank's process where it belongs: on loopback (no root, for fast tests) or
inside its emulated host. The coordinator is a barrier: every rank finishes iteration i before any
starts i+1. An iteration's time runs from the first rank's start to the last rank's end, on the
machine-wide monotonic clock that every namespace shares.
"""
import json
import queue
import time

from testbed.collectives.placements import rank_ips
from testbed.emulation.processes import LOOPBACK, ProgramError, expect_all, free_port, start_local, stop_all

SOCKBUF = 1 << 20        # each rank socket's send and receive buffer (SO_SNDBUF, SO_RCVBUF)


class AllreduceError(ProgramError):
    pass


def loopback_launcher(ranks):
    """(addresses, launch) for ranks on 127.0.0.1, each on a free port."""
    addresses = [(LOOPBACK, free_port()) for _ in range(ranks)]

    def launch(rank, config, inbox):
        return start_local(f"rank {rank}", "rank", config, inbox=inbox)
    return addresses, launch


def emulation_launcher(emu, hosts, port=7000):
    """(addresses, launch) for rank r inside host hosts[r], on its first NIC port; ranks that share
    a host (a server's accelerators behind one NIC) listen on ports port, port + 1, ... Where the
    fabric has a scale-up domain, a rank reaches the ranks on another accelerator of its server
    at their scale-up addresses (``near``): that traffic never meets the fabric."""
    topo = emu.topo
    addresses, taken = [], {}
    for host, ip in zip(hosts, rank_ips(topo, hosts)):
        taken[host] = taken.get(host, -1) + 1
        addresses.append((ip, port + taken[host]))

    def near(rank):
        return {str(peer): [topo.scaleup_ip(hosts[peer]), addresses[peer][1]] for peer in range(len(hosts))
                if topo.same_server(hosts[rank], hosts[peer])}

    def launch(rank, config, inbox):
        mine = near(rank)
        config = json.dumps(dict(json.loads(config), control_dscp=emu.control_dscp, near=mine,
                                 congestion_control=emu.kernel_congestion_control(emu.congestion_control),
                                 near_self=topo.scaleup_ip(hosts[rank]) if mine else None))
        return emu.program(hosts[rank], "rank", config, name=f"rank {rank} ({hosts[rank]})", inbox=inbox)
    return addresses, launch


class Coordinator:
    """with Coordinator(algorithm, addresses, launch) as c: c.run(count, iterations)"""

    def __init__(self, algorithm, addresses, launch, timeout=20.0, sockbuf=SOCKBUF, streams=1, pacing=None,
                 eager_limit=None, label=None, source_ports=None, dscp=None, stopped_ok=False):
        """algorithm: a schedule (``schedules.ALGORITHMS``) or its name, or a list of schedules that
        the same ranks run in turn on the same connections (``iterate``'s `schedule` picks one);
        pacing: bytes/s each connection is paced at (None: not paced); eager_limit: messages up to
        this many bytes are sent without waiting for the receiver (None: the rank's default); label:
        what errors call the collective (default: the algorithm); source_ports: {rank: {peer: [port
        per stream]}} from a hash draw (connections.source_ports; None: the kernel's choice); dscp: the
        DS field every rank's packets carry (a job's traffic class; None: the default); stopped_ok: a
        rank found stopped (SIGSTOP) is waited for, not reported (a run that hangs ranks on purpose)."""
        listed = algorithm if isinstance(algorithm, list) else [algorithm]
        schedules = [{"algorithm": s, "schedule_args": {}} if isinstance(s, str) else
                     {"algorithm": s.name, "schedule_args": s.args()} for s in listed]
        algorithm = "+".join(s["algorithm"] for s in schedules)
        self.algorithm, self.addresses, self.launch = algorithm, addresses, launch
        self.label = label or algorithm
        self.config = {"ranks": len(addresses), "schedules": schedules, "addresses": addresses,
                       "timeout": timeout, "sockbuf": sockbuf, "streams": streams, "pacing": pacing,
                       "eager_limit": eager_limit, "dscp": dscp}
        self.timeout, self.ranks, self.inbox = timeout, [], queue.Queue()
        self.source_ports, self.stopped_ok = source_ports or {}, stopped_ok
        self.retransmissions = False      # ask each rank for its retransmissions per peer (a watched job)

    def __enter__(self):
        try:
            for rank in range(len(self.addresses)):
                config = {**self.config, "rank": rank, "source_ports": self.source_ports.get(rank)}
                self.ranks.append(self.launch(rank, json.dumps(config), self.inbox))
            self._collect("ready", self.timeout + 30)
        except BaseException:
            stop_all(self.ranks, grace=0)
            raise
        return self

    def __exit__(self, _type, error, _tb):
        stop_all(self.ranks, grace=0 if error else 5.0)   # after a failure nobody waits for ranks

    @property
    def procs(self):
        return [r.proc for r in self.ranks]

    def _collect(self, key, timeout):
        try:
            return expect_all(self.ranks, key, timeout, label=f"{self.label}: ", stopped_ok=self.stopped_ok)
        except ProgramError as e:
            raise AllreduceError(str(e)) from None

    def iterate(self, count, iteration, timeout, repeat=1, compute_s=0.0, schedule=0):
        """`repeat` allreduces back to back, as one batch; each one's time runs from the end of the
        one before (from the first rank's start, for the first) to its last rank's end, on the
        machine-wide monotonic clock. Returns the batch's start and end, every allreduce's time,
        #wrong over all, and when each step of the first ended (the last rank's end, from the
        batch's start): the view that shows a straggling flow, and each rank's timing of the first
        (``programs.rank``: its start and per step [sent, end, from, to]). compute_s: seconds each rank spends
        before each allreduce (a training step's modelled computation); schedule: which of the
        coordinator's schedules runs."""
        for rank in self.ranks:
            try:
                rank.send(count=count, iteration=iteration, repeat=repeat, compute_s=compute_s, schedule=schedule,
                          retrans=self.retransmissions)
            except ProgramError as e:
                raise AllreduceError(f"{self.label}: {e}") from None
        replies = self._collect("iteration", (timeout + compute_s) * repeat)
        start = min(r["t0"] for r in replies)
        ends = [max(column) for column in zip(*(r["ends"] for r in replies))]
        # step i of the collective ends when its last rank ends it
        step_ends = [max(column) - start for column in zip(*(r["steps"] for r in replies))]
        return {"start": start, "end": ends[-1], "time": ends[-1] - start,
                "times": [b - a for a, b in zip([start] + ends, ends)], "step_ends": step_ends,
                "wrong": sum(r["wrong"] for r in replies), "timing": [r["timing"] for r in replies]}

    def run_for(self, count, seconds, timeout=120.0, on_iteration=None):
        """Iterations back to back for `seconds`: [{"start", "end", "time", "wrong", "timing"}]
        (monotonic clock), and the error that stopped them early, if one did."""
        done, until = [], time.monotonic() + seconds
        while time.monotonic() < until:
            try:
                result = self.iterate(count, len(done), timeout)
            except AllreduceError as e:
                return done, str(e)
            done.append({k: result[k] for k in ("start", "end", "time", "wrong", "timing")})
            if on_iteration:
                on_iteration(done[-1])
        return done, None

    def run(self, count, iterations, warmup=1, timeout=120.0, schedule=0):
        """Times (s) of the timed iterations, run back to back as one batch after the warmup's, and
        the total #wrong over all of them, warmup included; schedule: which of the coordinator's."""
        wrong = self.iterate(count, 0, timeout, repeat=warmup, schedule=schedule)["wrong"] if warmup else 0
        timed = self.iterate(count, 1, timeout, repeat=iterations, schedule=schedule)
        return timed["times"], wrong + timed["wrong"]
