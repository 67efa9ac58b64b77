"""Link shaping, neighbour tables and routes over netlink (pyroute2), in any network namespace.

Each end of a link gets, on egress: HTB root 1: -> class 1:10 at the link rate -> pfifo 10: with the
link's queue limit in packets. Shaping both ends shapes both directions. With a link delay the leaf is
netem 10: instead, which holds each packet for the delay in its own FIFO (its queue length counts the
packets on the wire as well as those waiting, so its limit is the queue limit plus the wire's).

A switch's egress port has two classes, each with its own pfifo of the queue limit: 1:11 (pfifo 11:)
for the high class and 1:10 (pfifo 10:) for the rest, under the link's class 1:1. Packets whose DS
field is ``CONTROL_DSCP`` (a rank's clear-to-send bytes and ACKs) go in the high class on every
switch port (``classes`` "control"), so that they pass other flows' queued frames: at 10 Mbit/s a
9000-byte frame is 7.2 ms on the wire, and clear-to-sends waiting behind them held an alltoall in
link-disjoint rounds to 0.55 of the link (0.92 with this class, docs/design.md). With traffic
classes for jobs (``PRIORITIES``), packets whose DS field is ``HIGH_DSCP`` go in the high class too.
A u32 filter on the IP header's TOS byte sorts them. ``control`` and ``strict``: 1:11 is assured
the whole link at HTB priority 0, 1:10 1% of it at priority 1 and may borrow what 1:11 leaves (HTB
serves the lower priority number first); ``weighted``: both at one priority, assured 3/4 and 1/4 of
the link and sharing what either leaves by those weights. A port's queue figures are its FIFOs'
together. A delayed link (netem) and a host's NIC have one class.
"""
import ctypes
import gzip
import math
import os
import platform
from contextlib import contextmanager
from pathlib import Path

from pyroute2 import IPRoute

HTB_ROOT, HTB_CLASS, FIFO = 0x10000, 0x10010, 0x100000
HTB_LINK, HTB_HIGH, FIFO_HIGH = 0x10001, 0x10011, 0x110000
PRIORITIES = ("strict", "weighted")
CONTROL = "control"
HIGH_DSCP = 46            # EF: the DS field a high-priority job's packets carry
CONTROL_DSCP = 48         # CS6, network control: a rank's clear-to-send bytes and ACKs
ETH_P_IP = 0x0800
NUD_PERMANENT = 0x80
ETH_HEADER = 14
ONE_FIFO, STRICT, WEIGHTED = "one FIFO", "strict", "weighted"     # how a port serves its classes
STRICT_REST = 0.01        # under strict priority, the rest's assured share (it borrows what the high leaves)


CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns failed")


def open_netlink(pid=None):
    """An IPRoute in the namespace of process pid (None: this process's namespace), to close when done."""
    return _ipr_in_namespace(pid) if pid else IPRoute()


def _ipr_in_namespace(pid):
    """An IPRoute whose netlink socket lives in pid's network namespace. The socket is opened by
    this thread inside that namespace and keeps it afterwards (pyroute2's own netns= forks a
    child to do this, which hung here under pytest)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        _setns(target)
        try:
            return IPRoute()
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


@contextmanager
def netlink(pid=None):
    """An IPRoute in the namespace of process pid (None: this process's namespace)."""
    ipr = open_netlink(pid)
    try:
        yield ipr
    finally:
        ipr.close()


def index_of(ipr, ifname):
    found = ipr.link_lookup(ifname=ifname)
    if not found:
        raise LookupError(f"no interface {ifname}")
    return found[0]


def netem_available():
    """Whether this kernel has the netem qdisc: loaded, built in, or a module it can load."""
    if Path("/sys/module/sch_netem").exists():
        return True
    try:
        with gzip.open("/proc/config.gz", "rt") as config:
            if any(line.startswith("CONFIG_NET_SCH_NETEM=y") for line in config):
                return True
    except OSError:
        pass
    modules = Path("/lib/modules") / platform.release() / "modules.dep"
    try:
        return "sch_netem.ko" in modules.read_text()
    except OSError:
        return False


def _htb_class(ipr, index, handle, parent, rate_mbit, ceil_mbit, frame, prio=0):
    # One frame of burst: a larger bucket lets small messages through an idle link at veth speed
    # (busbw above the link rate was measured with two). quantum = frame keeps HTB from warning.
    ipr.tc("add-class", "htb", index, handle, parent=parent, rate=f"{max(1, round(rate_mbit * 1000))}kbit",
           ceil=f"{round(ceil_mbit * 1000)}kbit", burst=frame, cburst=frame, quantum=frame, mtu=frame, prio=prio)


def served(classes, delay_ms=0.0, control=True):
    """How shape() serves a port's classes: (ONE_FIFO, STRICT or WEIGHTED; the high class's assured
    share of the link; the DS fields that go in the high class), for the ECN marker to drain its
    virtual queues alike (emulation.ecn)."""
    if classes is None or delay_ms:
        return ONE_FIFO, 0.0, ()
    dscps = ((CONTROL_DSCP,) if control or classes == CONTROL else ()) + ((HIGH_DSCP,) if classes in PRIORITIES else ())
    return (WEIGHTED, 0.75, dscps) if classes == "weighted" else (STRICT, 1.0, dscps)


def shape(ipr, ifname, rate_mbit, queue_packets, mtu, delay_ms=0.0, classes=None, control=True):
    """Set the MTU and an HTB rate limit with a bounded FIFO (netem's when delayed) on ifname's
    egress; classes: None (one FIFO), 'control' or a job priority, 'strict' or 'weighted' (the
    module docstring); control: under a job priority, whether CONTROL_DSCP joins the high class too.
    A delayed link has one class whatever `classes` asks, bar a job priority, which it refuses."""
    index = index_of(ipr, ifname)
    ipr.link("set", index=index, mtu=mtu)
    frame = mtu + ETH_HEADER
    ipr.tc("add", "htb", index, HTB_ROOT, default=HTB_CLASS & 0xFFFF)
    if classes in PRIORITIES and delay_ms:
        raise ValueError(f"priority classes: one of {PRIORITIES}, on a link without delay")
    if classes is not None and not delay_ms:
        if classes not in (CONTROL, *PRIORITIES):
            raise ValueError(f"classes: one of {CONTROL}, {', '.join(PRIORITIES)}")
        serving, high, dscps = served(classes, delay_ms, control)
        _htb_class(ipr, index, HTB_LINK, HTB_ROOT, rate_mbit, rate_mbit, frame)
        _htb_class(ipr, index, HTB_HIGH, HTB_LINK, rate_mbit * high, rate_mbit, frame, prio=0)
        _htb_class(ipr, index, HTB_CLASS, HTB_LINK, rate_mbit * (1 - high if serving == WEIGHTED else STRICT_REST),
                   rate_mbit, frame, prio=0 if serving == WEIGHTED else 1)
        ipr.tc("add", "pfifo", index, FIFO_HIGH, parent=HTB_HIGH, limit=queue_packets)
        ipr.tc("add", "pfifo", index, FIFO, parent=HTB_CLASS, limit=queue_packets)
        for dscp in dscps:
            ipr.tc("add-filter", "u32", index, parent=HTB_ROOT, prio=1, protocol=ETH_P_IP, target=HTB_HIGH,
                   keys=[f"0x{dscp << 18:08x}/0x00fc0000+0"])      # the TOS byte, its six DSCP bits
        return
    _htb_class(ipr, index, HTB_CLASS, HTB_ROOT, rate_mbit, rate_mbit, frame)
    if delay_ms:   # netem's FIFO also holds the packets on the wire: room for them above the limit
        on_wire = math.ceil(rate_mbit * 1e6 / 8 * delay_ms / 1000 / frame)
        ipr.tc("add", "netem", index, FIFO, parent=HTB_CLASS, delay=round(delay_ms * 1000),
               limit=queue_packets + on_wire)
    else:
        ipr.tc("add", "pfifo", index, FIFO, parent=HTB_CLASS, limit=queue_packets)


def set_rate(ipr, ifname, rate_mbit, mtu):
    """Change a shaped interface's link rate in place (its classes keep their shares and its FIFOs
    what they hold), as a link that falls back to a lower speed does."""
    index, frame = index_of(ipr, ifname), mtu + ETH_HEADER
    classes = {msg["handle"]: msg for msg in ipr.get_classes(index=index)}
    change = lambda handle, parent, rate, ceil, prio=0: ipr.tc(
        "change-class", "htb", index, handle, parent=parent, rate=f"{max(1, round(rate * 1000))}kbit",
        ceil=f"{round(ceil * 1000)}kbit", burst=frame, cburst=frame, quantum=frame, mtu=frame, prio=prio)
    if HTB_HIGH not in classes:
        change(HTB_CLASS, HTB_ROOT, rate_mbit, rate_mbit)
        return
    old = classes[HTB_LINK].get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")["rate"] * 8 / 1e6
    change(HTB_LINK, HTB_ROOT, rate_mbit, rate_mbit)
    for handle in (HTB_HIGH, HTB_CLASS):
        parms = classes[handle].get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")
        change(handle, HTB_LINK, parms["rate"] * 8 / 1e6 * rate_mbit / old, rate_mbit, parms["prio"])


def set_loss(ipr, ifname, fraction, queue_packets):
    """Drop `fraction` of the packets leaving a shaped interface at random (netem's loss as the
    link's leaf, in place of its FIFO), or, with 0, put its FIFO back. Needs netem."""
    index = index_of(ipr, ifname)
    if fraction:
        ipr.tc("replace", "netem", index, FIFO, parent=HTB_CLASS, loss=100 * fraction, limit=queue_packets)
    else:
        ipr.tc("replace", "pfifo", index, FIFO, parent=HTB_CLASS, limit=queue_packets)


def _fifo_stats(msg):
    stats = msg.get_attr("TCA_STATS2")
    queue = dict(stats.get_attr("TCA_STATS_QUEUE"))
    basic = dict(stats.get_attr("TCA_STATS_BASIC"))
    return {"qlen": queue["qlen"], "backlog": queue["backlog"], "drops": queue["drops"],
            "bytes": basic["bytes"], "packets": basic["packets"]}


def fifo_stats_by_class(ipr, ifnames):
    """{ifname: {class ("rest", "high"): its FIFO's counters}} for several interfaces, from one
    dump of every qdisc (a port with one FIFO has "rest" only)."""
    return fifo_stats_at(ipr, {index_of(ipr, name): name for name in ifnames})


def fifo_stats_at(ipr, wanted):
    """fifo_stats_by_class of the interfaces `wanted` ({ifindex: ifname}), for a reader that looks
    their indices up once (each lookup is a dump of every link)."""
    found = {}
    for msg in ipr.get_qdiscs():
        if msg["index"] in wanted and msg["handle"] in (FIFO, FIFO_HIGH):
            found.setdefault(wanted[msg["index"]], {})["rest" if msg["handle"] == FIFO else "high"] = _fifo_stats(msg)
    missing = set(wanted.values()) - set(found)
    if missing:
        raise LookupError(f"{' '.join(sorted(missing))} not shaped")
    return found


def queue_stats_all(ipr, ifnames):
    """{ifname: its FIFOs' counters together} for several interfaces, from one dump of every qdisc."""
    return {name: {key: sum(stats[key] for stats in classes.values()) for key in next(iter(classes.values()))}
            for name, classes in fifo_stats_by_class(ipr, ifnames).items()}


def static_neighbours(ipr, ifname, neighbours):
    """Permanent ARP entries: neighbours is [(ip, mac)] reachable on ifname."""
    index = index_of(ipr, ifname)
    for ip, mac in neighbours:
        ipr.neigh("replace", dst=ip, lladdr=mac, ifindex=index, state=NUD_PERMANENT)


def address(ipr, ifname, ip, prefixlen):
    ipr.addr("add", index=index_of(ipr, ifname), address=ip, prefixlen=prefixlen)


def route(ipr, prefix, ifnames, src, metric=0, table=0):
    """A route to prefix out of ifnames, on-link, from source address src, in a routing table (0:
    the main one); two or more interfaces make a multipath route (the kernel picks one per flow
    by its multipath hash)."""
    hops = [{"oif": index_of(ipr, name)} for name in ifnames]
    where = {"table": table} if table else {}
    if len(hops) == 1:
        ipr.route("replace", dst=prefix, oif=hops[0]["oif"], prefsrc=src, scope="link", priority=metric, **where)
    else:
        ipr.route("replace", dst=prefix, multipath=hops, prefsrc=src, scope="link", priority=metric, **where)


def source_port_rule(ipr, first, last, table):
    """TCP from source ports first..last looks up `table` before the main one."""
    ipr.rule("add", table=table, priority=1000 + table, ip_proto=6, sport_range=f"{first}:{last}")


def set_up(ipr, ifname, up):
    ipr.link("set", index=index_of(ipr, ifname), state="up" if up else "down")


def counters(ipr, ifname):
    """The interface's packet and byte counters: {"tx_bytes", "rx_bytes", "tx_packets", ...}."""
    (link,) = ipr.get_links(index_of(ipr, ifname))
    return dict(link.get_attr("IFLA_STATS64"))
