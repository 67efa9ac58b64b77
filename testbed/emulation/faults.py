"""Faults a training cluster meets, injected into a running emulation and undone: a link at a
fraction of its rate, a link down or flapping, a switch down, one port of a bonded NIC down, a
rank slowed to a share of a CPU or stalled for a while.

    fault = Fault.parse("slow-link:U0-L1:0.25@8")          # KIND:WHERE[:HOW]@WHEN
    events = fault.events(emu, rank_pids)                  # emulation.events, for a Timeline

WHEN is seconds into the run (8 or 8s) or an iteration (5it: once the collective finished 5).

- slow-link:LINK:FRACTION  both ends' HTB class at FRACTION of the link's rate (shaping.set_rate)
- link-down:LINK            the link's switch ends administratively down (as a pulled cable)
- flap:LINK:PERIOD          down and up every PERIOD seconds, for `lasting`
- switch-down:SWITCH        every link of the switch down
- port-down:HOST:PORT       one port of a bonded NIC: its link to its ToR down
- slow-rank:RANK:SHARE      the rank's process in a cgroup (v1 cpu controller, Mininet's
                            CPULimitedHost way) of SHARE of one CPU: cfs quota over period
- hang-rank:RANK            the rank stopped (SIGSTOP) and continued after `lasting` (SIGCONT)
- loss:LINK:FRACTION        both ends drop FRACTION of their packets at random: netem's loss,
                            or where the kernel has no netem, an nftables rule on each switch
                            end's egress (``drops``), so only on links between switches

A LINK is two node labels joined by '-' (U0-L1, leaf0-spine1, h3-tor.s0.r1.p0, or bridge and host
names), with the first of its parallel links. Random loss is refused in one line where the kernel
has neither netem nor nftables' egress hook (or nft is not installed: ./setup.sh installs it).
Every fault is undone when its time is up, and the run record undoes what a killed run left:
links come back up with the run (emulation.runrecord), cgroups are removed by ``CgroupLimit``'s
record entry, a stopped rank is continued and ended with the run's processes.
"""
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from testbed.emulation import drops
from testbed.emulation.events import Event, toggles
from testbed.emulation.shaping import netem_available
from testbed.errors import TestbedError

KINDS = ("slow-link", "link-down", "flap", "switch-down", "port-down", "slow-rank", "hang-rank", "loss")
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
CGROUP_PARENT = "ai-testbed"


@dataclass(frozen=True)
class Fault:
    kind: str
    where: str            # a link (A-B), a switch, host:port or a rank number
    how: float = 0.0      # the fraction of the rate, the flap period or the CPU share
    at: float = 0.0       # seconds into the run
    lasting: float = 0.0  # seconds (0: until the run ends)
    iteration: int | None = None   # at the end of this iteration instead of at `at` seconds

    @classmethod
    def parse(cls, text, lasting=0.0):
        """KIND:WHERE[:HOW]@WHEN, e.g. slow-link:U0-L1:0.25@8, hang-rank:3@5 (checked here: one line)."""
        spec, _, when = text.partition("@")
        kind, _, rest = spec.partition(":")
        if kind not in KINDS:
            raise TestbedError(f"--inject {text}: unknown fault {kind!r}: use one of {', '.join(KINDS)}")
        if kind == "loss" and not loss_available():
            raise TestbedError(f"--inject {text}: random loss needs the netem qdisc or nftables' egress hook; "
                               "this machine has neither: run ./setup.sh (it installs nftables)")
        iteration = None
        try:
            if when.endswith("it"):
                iteration, at = int(when[:-2]), 0.0
            else:
                at = float(when.removesuffix("s")) if when else 0.0
        except ValueError:
            raise TestbedError(f"--inject {text}: after @ give seconds (8, 8s) or an iteration (5it), "
                               f"not {when!r}") from None
        if iteration is not None and iteration < 1:
            raise TestbedError(f"--inject {text}: the iteration must be 1 or later")
        needs_how = kind in ("slow-link", "flap", "slow-rank", "loss")
        where, how_text = rest, None
        if needs_how:
            where, _, how_text = rest.rpartition(":")
        if not where or (needs_how and how_text is None):
            raise TestbedError(f"--inject {text}: write {kind}:{_form(kind)}@SECONDS")
        how = 0.0
        if how_text is not None:
            try:
                how = float(how_text)
            except ValueError:
                raise TestbedError(f"--inject {text}: {how_text!r} should be a number") from None
        least = CgroupLimit.MIN_SHARE if kind == "slow-rank" else 0.01
        if kind in ("slow-link", "slow-rank", "loss") and not least <= how < 1:
            raise TestbedError(f"--inject {text}: the fraction must be between {least:g} and 1 (got {how:g})")
        if kind == "flap" and how <= 0:
            raise TestbedError(f"--inject {text}: the flap period must be positive (got {how:g})")
        if at < 0 or lasting < 0:
            raise TestbedError(f"--inject {text}: times cannot be negative")
        return cls(kind, where, how, at, lasting, iteration)

    def describe(self):
        how = {"slow-link": f" at {self.how:g} of its rate", "flap": f" every {self.how:g} s",
               "slow-rank": f" to {self.how:g} of a CPU", "loss": f" losing {self.how:g} of its packets"}
        when = f"after iteration {self.iteration}" if self.iteration is not None else f"at {self.at:g} s"
        return (f"{self.kind} {self.where}{how.get(self.kind, '')} {when}" +
                (f" for {self.lasting:g} s" if self.lasting else ""))

    def check(self, topo, ranks):
        """Refuse, in one line naming --inject, a place the fabric or the job does not have (before
        anything is built)."""
        try:
            if self.kind in ("slow-link", "link-down", "flap", "loss"):
                link = find_link(topo, self.where)
                if self.kind == "loss" and not can_lose(topo, link):
                    raise TestbedError("without netem only a link between switches loses packets (a switch's "
                                       "egress drops them): choose one")
            elif self.kind == "port-down":
                port_link(topo, self.where)
            elif self.kind == "switch-down":
                find_switch(topo, self.where)
            elif not self.where.isdigit() or int(self.where) >= ranks:
                raise TestbedError(f"the job's ranks are 0 to {ranks - 1}")
        except TestbedError as e:
            raise TestbedError(f"--inject {self.kind}:{self.where}: {e}") from None
        return self

    def events(self, emu, rank_pids=None, end=600.0):
        """The fault as emulation.events: its start and its undoing (at `lasting`, else `end`)."""
        lasting = self.lasting or max(0.0, end - self.at)
        topo = emu.topo
        if self.kind in ("slow-link", "link-down", "flap", "port-down", "loss"):
            link = find_link(topo, self.where) if self.kind != "port-down" else port_link(topo, self.where)
            ports = [end for end in link.ends() if end[0] in topo.switches]
            name = f"{self.kind} {label(topo, link)}"
            if self.kind == "slow-link":
                return [Event(self.at, lambda: emu.set_link_rate(link, link.rate * self.how), f"{name} slow",
                              ports, False),
                        Event(self.at + lasting, lambda: emu.set_link_rate(link, link.rate), f"{name} back", ports,
                              True)]
            if self.kind == "loss":
                return [Event(self.at, lambda: emu.set_link_loss(link, self.how), f"{name} lossy", ports, False),
                        Event(self.at + lasting, lambda: emu.set_link_loss(link, 0.0), f"{name} back", ports, True)]
            changes = toggles(self.at, lasting, self.how if self.kind == "flap" else 0)
            return [Event(t, lambda up=up: emu.set_link(link, up), f"{name} {'up' if up else 'down'}", ports, up)
                    for t, up in changes]
        if self.kind == "switch-down":
            switch = find_switch(topo, self.where)
            ports = [end for link in topo.links if switch in (link.a, link.b) for end in link.ends()
                     if end[0] in topo.switches]
            return [Event(t, lambda up=up: emu.set_switch(switch, up),
                          f"switch {topo.label(switch)} {'up' if up else 'down'}", ports, up)
                    for t, up in toggles(self.at, lasting, 0)]
        pid = rank_pid(rank_pids, self.where)
        if self.kind == "slow-rank":
            limit = CgroupLimit(emu.record, pid, self.how)
            return [Event(self.at, limit.apply, f"rank {self.where} slowed", [], False),
                    Event(self.at + lasting, limit.remove, f"rank {self.where} back", [], True)]
        if self.kind == "hang-rank":
            return [Event(self.at, lambda: _signal(pid, signal.SIGSTOP), f"rank {self.where} stopped", [], False),
                    Event(self.at + lasting, lambda: _signal(pid, signal.SIGCONT), f"rank {self.where} continued",
                          [], True)]
        raise ValueError(f"no such fault kind: {self.kind}")


def loss_available():
    """Whether random loss can be injected here: netem, or nftables' egress hook (``drops``)."""
    return netem_available() or drops.available()


def can_lose(topo, link):
    """Whether a link can lose packets here: any with netem, else one between switches (``drops``)."""
    return netem_available() or {link.a, link.b} <= set(topo.switches)


def _form(kind):
    return {"slow-link": "A-B:FRACTION", "link-down": "A-B", "flap": "A-B:PERIOD", "switch-down": "SWITCH",
            "port-down": "HOST:PORT", "slow-rank": "RANK:SHARE", "hang-rank": "RANK", "loss": "A-B:FRACTION"}[kind]


def _signal(pid, sig):
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def node_of(topo, name):
    """A node by host name, bridge name or switch label."""
    if name in topo.hosts or name in topo.switches:
        return name
    for switch in topo.switches.values():
        if switch.label == name:
            return switch.name
    raise TestbedError(f"no host or switch {name!r} in {topo.name}")


def find_link(topo, text):
    a, sep, b = text.partition("-")
    if not sep:
        raise TestbedError(f"a link is written A-B (two node names; got {text!r})")
    a, b = node_of(topo, a), node_of(topo, b)
    for link in topo.links:
        if {link.a, link.b} == {a, b}:
            return link
    raise TestbedError(f"no link between {text.replace('-', ' and ')} in {topo.name}")


def find_switch(topo, text):
    name = node_of(topo, text)
    if name not in topo.switches:
        raise TestbedError(f"{text} is no switch of {topo.name}")
    return name


def port_link(topo, text):
    host, _, port = text.rpartition(":")
    if host not in topo.hosts or not port.isdigit() or int(port) >= len(topo.hosts[host].ports):
        raise TestbedError(f"port-down takes HOST:PORT, a NIC port of a host of {topo.name} (got {text!r})")
    return topo.link_at(*topo.attachment(topo.hosts[host].ports[int(port)]))


def label(topo, link):
    name = lambda node: topo.switches[node].label if node in topo.switches else node
    return f"{name(link.a)}-{name(link.b)}"


def rank_pid(rank_pids, rank):
    try:
        return rank_pids[int(rank)]
    except (ValueError, IndexError, TypeError):
        raise TestbedError(f"no rank {rank!r} to slow or stop here") from None


class CgroupLimit:
    """A process in a cgroup of its own under the cpu controller (cgroup v1), limited to `share` of
    one CPU by CFS bandwidth: quota = share x period, over 100 ms, or longer for a share whose
    quota would fall below the kernel's least (1 ms). Written on the run record first."""
    PERIOD_US, LONGEST_US, LEAST_QUOTA_US = 100_000, 1_000_000, 1000
    MIN_SHARE = LEAST_QUOTA_US / LONGEST_US

    def __init__(self, record, pid, share):
        self.record, self.pid, self.share = record, pid, share
        self.path = CGROUP_CPU / CGROUP_PARENT / f"{record.run_id}-{pid}" if record else None

    def apply(self):
        if not CGROUP_CPU.is_dir():
            raise TestbedError("no cgroup v1 cpu controller at /sys/fs/cgroup/cpu: a rank cannot be slowed here")
        self.record.add(cgroups=[str(self.path)])
        self.path.mkdir(parents=True, exist_ok=True)
        period, quota = self.bandwidth(self.share)
        (self.path / "cpu.cfs_period_us").write_text(str(period))
        (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        (self.path / "cgroup.procs").write_text(str(self.pid))

    @classmethod
    def bandwidth(cls, share):
        """(period, quota) in microseconds for `share` of one CPU."""
        period = min(cls.LONGEST_US, max(cls.PERIOD_US, round(cls.LEAST_QUOTA_US / share)))
        return period, max(cls.LEAST_QUOTA_US, round(share * period))

    def remove(self):
        remove_cgroup(self.path)


def remove_cgroup(path):
    """Move the cgroup's processes back to the root cpu cgroup, then remove it (and its parent
    when empty)."""
    path = Path(path)
    if not path.is_dir():
        return
    with contextlib.suppress(OSError):
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (CGROUP_CPU / "cgroup.procs").write_text(pid)
    with contextlib.suppress(OSError):
        path.rmdir()
    with contextlib.suppress(OSError):
        path.parent.rmdir()          # only once every run's cgroup under it is gone
