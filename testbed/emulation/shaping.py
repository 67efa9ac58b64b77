"""Link shaping, neighbour tables and routes over netlink (pyroute2), in any network namespace.

Each end of a link gets, on egress: HTB root 1: -> class 1:10 at the link rate -> pfifo 10: with the
link's queue limit in packets. Shaping both ends shapes both directions. With a link delay the leaf is
netem 10: instead, which holds each packet for the delay in its own FIFO (its queue length counts the
packets on the wire as well as those waiting, so its limit is the queue limit plus the wire's).
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
NUD_PERMANENT = 0x80
ETH_HEADER = 14


CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns failed")


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
    ipr = _ipr_in_namespace(pid) if pid else IPRoute()
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


def shape(ipr, ifname, rate_mbit, queue_packets, mtu, delay_ms=0.0):
    """Set the MTU and an HTB rate limit with a bounded FIFO (netem's when delayed) on ifname's egress."""
    index = index_of(ipr, ifname)
    ipr.link("set", index=index, mtu=mtu)
    frame = mtu + ETH_HEADER
    ipr.tc("add", "htb", index, HTB_ROOT, default=HTB_CLASS & 0xFFFF)
    # One frame of burst: a larger bucket lets small messages through an idle link at veth speed
    # (busbw above the link rate was measured with two). quantum = frame keeps HTB from warning.
    ipr.tc("add-class", "htb", index, HTB_CLASS, parent=HTB_ROOT, rate=f"{round(rate_mbit * 1000)}kbit",
           ceil=f"{round(rate_mbit * 1000)}kbit", burst=frame, cburst=frame, quantum=frame, mtu=frame)
    if delay_ms:   # netem's FIFO also holds the packets on the wire: room for them above the limit
        on_wire = math.ceil(rate_mbit * 1e6 / 8 * delay_ms / 1000 / frame)
        ipr.tc("add", "netem", index, FIFO, parent=HTB_CLASS, delay=round(delay_ms * 1000),
               limit=queue_packets + on_wire)
    else:
        ipr.tc("add", "pfifo", index, FIFO, parent=HTB_CLASS, limit=queue_packets)


def _fifo_stats(msg):
    stats = msg.get_attr("TCA_STATS2")
    queue = dict(stats.get_attr("TCA_STATS_QUEUE"))
    basic = dict(stats.get_attr("TCA_STATS_BASIC"))
    return {"qlen": queue["qlen"], "backlog": queue["backlog"], "drops": queue["drops"],
            "bytes": basic["bytes"], "packets": basic["packets"]}


def queue_stats(ipr, ifname):
    """The egress FIFO's counters: qlen (packets), backlog (bytes), drops, sent bytes/packets."""
    return queue_stats_all(ipr, [ifname])[ifname]


def queue_stats_all(ipr, ifnames):
    """{ifname: its FIFO's counters} for several interfaces, from one dump of every qdisc."""
    wanted = {index_of(ipr, name): name for name in ifnames}
    found = {wanted[msg["index"]]: _fifo_stats(msg) for msg in ipr.get_qdiscs()
             if msg["index"] in wanted and msg["handle"] == FIFO}
    missing = set(ifnames) - set(found)
    if missing:
        raise LookupError(f"{' '.join(sorted(missing))} not shaped")
    return found


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
