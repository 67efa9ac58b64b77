"""ECN marking at every switch port's egress, where the kernel has no RED qdisc: the project's own
tc-eBPF program (``programs/ecn_marker.bpf.c``), compiled once with clang and attached on the port's
clsact egress hook ahead of its HTB classes, then told the port's settings through its map
"config" (``probes.markers.Config``: the link's rate, K, the FIFO's limit, and how the port serves
its classes, as ``shaping.served`` says; the rate again whenever the link's changes). It keeps a
virtual queue per class (the high class, that is the control class or a high-priority job, and the
rest; one for all where the port has one FIFO) drained as the port's HTB serves that class, and sets
CE on an ECN-capable packet that arrives while its class's virtual queue holds more than K bytes;
what a port marked, and what arrived over K, per class and per IPv4 source, is read back from the
program's maps (``counts``, ``sources``).

Nothing is pinned: a program and its maps live as long as the interface they are attached to, so
the run's teardown (and ``--cleanup``), which deletes the switch ports, removes them.
"""
import ctypes
import functools
import hashlib
import json
import platform
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testbed.emulation import bpfmaps, shaping
from testbed.emulation.shaping import ETH_HEADER
from testbed.errors import TestbedError

SOURCE = Path(__file__).resolve().parents[1] / "programs" / "ecn_marker.bpf.c"
CLASSES = ("rest", "high")            # the program's class indices
REST, HIGH = 0, 1
ONE_FIFO, STRICT, WEIGHTED = 0, 1, 2  # how the port serves its classes (struct config's mode)
NO_DSCP = 0xFF
MAX_GAP_NS = 10_000_000_000
CONFIG = struct.Struct("=QQQII2I")    # struct config
QUEUES = struct.Struct("=2QQ")        # struct vqueues: each class's bytes, when last drained
PROGRAM = "testbed_ecn"               # its function's name, as bpftool lists a loaded one
TOOLS = {"clang": "clang", "bpftool": "bpftool", "tc": "iproute2"}
HEADER = Path("/usr/include/bpf/bpf_helpers.h")


@dataclass(frozen=True)
class Config:
    """A marker's settings (struct config): the rate its queues drain at, all classes together
    (the link's, times HULL's drain fraction), K and each FIFO's limit in bytes, how the port
    serves its classes (ONE_FIFO, STRICT or WEIGHTED: shaping's classes), the high class's assured
    share under WEIGHTED, and the DS fields of the high class."""
    rate_kbps: int
    k_bytes: int
    limit_bytes: int
    mode: int = ONE_FIFO
    high_permille: int = 0
    high_dscps: tuple = ()

    def packed(self):
        dscps = (tuple(self.high_dscps) + (NO_DSCP, NO_DSCP))[:2]
        return CONFIG.pack(self.rate_kbps, self.k_bytes, self.limit_bytes, self.mode, self.high_permille, *dscps)

    @classmethod
    def unpacked(cls, data):
        rate, k, limit, mode, permille, *dscps = CONFIG.unpack_from(data)
        return cls(rate, k, limit, mode, permille, tuple(d for d in dscps if d != NO_DSCP))


class VirtualQueues:
    """The marker's virtual queues, as the program keeps them (the same integer arithmetic, so that
    a test can hold the program to it packet by packet): each class's backlog in bytes at a time,
    drained by what the port sends since, as its HTB serves the classes."""

    def __init__(self, config, backlog=(0, 0), at_ns=0):
        self.config, self.bytes, self.at_ns = config, list(backlog), at_ns

    def drain(self, now_ns):
        """Bring the backlogs to now_ns (an earlier time changes nothing)."""
        if now_ns <= self.at_ns:
            return
        cfg, q = self.config, self.bytes
        can = min(now_ns - self.at_ns, MAX_GAP_NS) * cfg.rate_kbps // 8_000_000
        if cfg.mode == WEIGHTED:          # each its share first, then what the other left
            share = can * cfg.high_permille // 1000
            high, rest = min(q[HIGH], share), min(q[REST], can - share)
            q[HIGH] -= high
            q[REST] -= rest
            can -= high + rest
        sent = min(q[HIGH], can)          # STRICT: the high class first (WEIGHTED: its extra)
        q[HIGH] -= sent
        q[REST] -= min(q[REST], can - sent)
        self.at_ns = now_ns

    def arrive(self, now_ns, length, dscp, ect=True):
        """A packet of `length` bytes with DS field `dscp` handed to the port at now_ns: whether the
        marker sets CE on it (ECN-capable, its class's queue over K); it joins its queue unless the
        queue is full."""
        self.drain(now_ns)
        cfg = self.config
        queue = HIGH if cfg.mode != ONE_FIFO and dscp in cfg.high_dscps else REST
        backlog = self.bytes[queue]
        if backlog + length <= cfg.limit_bytes:
            self.bytes[queue] = backlog + length
        return ect and backlog > cfg.k_bytes

    def backlog(self, now_ns, queue=REST):
        """The bytes a class's virtual queue holds at now_ns (nothing changed)."""
        copy = VirtualQueues(self.config, self.bytes, self.at_ns)
        copy.drain(now_ns)
        return copy.bytes[queue]


def missing():
    """What this machine lacks to compile and load the marker, in words, or None."""
    gone = [f"{tool} (Debian's {package})" for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if not HEADER.exists():
        gone.append(f"{HEADER} (Debian's libbpf-dev)")
    return ", ".join(gone) or None


def fifo_limit(queue_packets, mtu):
    """The most a port's FIFO holds, bytes: its limit in packets of a full frame."""
    return queue_packets * (mtu + ETH_HEADER)


def check(k_bytes, queue_packets, mtu, option="--ecn"):
    """Refuses, in one line naming `option`, a threshold the FIFO cannot reach or a machine that
    cannot mark."""
    limit = fifo_limit(queue_packets, mtu)
    if not isinstance(k_bytes, int) or isinstance(k_bytes, bool) or k_bytes <= 0:
        raise TestbedError(f"{option} must be a positive number of bytes (got {k_bytes!r}): e.g. {option} 30000")
    if k_bytes < mtu + ETH_HEADER:
        raise TestbedError(f"{option} {k_bytes} is below one frame ({mtu + ETH_HEADER} B at MTU {mtu}): a port "
                           f"would mark behind a single frame; give {mtu + ETH_HEADER} or more")
    if k_bytes >= limit:
        raise TestbedError(f"{option} {k_bytes} is at or above the FIFO's limit ({queue_packets} packets of "
                           f"{mtu + ETH_HEADER} B = {limit} B): a port would drop before it marks; give less")
    gone = missing()
    if gone:
        raise TestbedError(f"{option} needs {gone}: run ./setup.sh, which installs them")


@functools.cache
def build(folder, test_clock=False):
    """The marker compiled into folder (once per source); test_clock: its clock is each packet's
    skb->tstamp, for a test that replays a trace through BPF_PROG_TEST_RUN."""
    text = SOURCE.read_bytes()
    tag = hashlib.sha256(text + (b" test clock" if test_clock else b"")).hexdigest()[:12]
    out = Path(folder) / f"ecn_marker-{tag}.o"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", *(["-DTEST_CLOCK"] if test_clock else []),
                               f"-I/usr/include/{platform.machine()}-linux-gnu",      # asm/types.h
                               "-c", str(SOURCE), "-o", str(out)], capture_output=True, text=True)
        if done.returncode:
            raise TestbedError(f"clang could not compile the ECN marker: {done.stderr.strip().splitlines()[-1]}")
    return out


def config(rate_mbit, k_bytes, limit_bytes, classes=None, delay_ms=0.0, control=True, drain=1.0):
    """A port's marker settings: its queues drained at `drain` times the link's rate, as shaping
    serves the port's classes (shaping.shape's classes, delay and control)."""
    serving, high, dscps = shaping.served(classes, delay_ms, control)
    mode = {shaping.ONE_FIFO: ONE_FIFO, shaping.STRICT: STRICT, shaping.WEIGHTED: WEIGHTED}
    return Config(rate_kbps=max(1, round(rate_mbit * 1000 * drain)), k_bytes=k_bytes, limit_bytes=limit_bytes,
                          mode=mode[serving], high_permille=round(high * 1000) if serving == shaping.WEIGHTED else 0,
                          high_dscps=dscps)


def _in(pid, args):
    """A command in process pid's network namespace (None: this one)."""
    return (["nsenter", "-t", str(pid), "-n"] if pid else []) + args


def attach(pid, ifname, obj):
    """The marker on ifname's egress (clsact, direct action), in pid's namespace; it lets every
    packet pass unmarked until its settings are written (``configure``)."""
    for args in (["tc", "qdisc", "add", "dev", ifname, "clsact"],
                 ["tc", "filter", "add", "dev", ifname, "egress", "bpf", "da", "obj", str(obj), "sec", "tc"]):
        done = subprocess.run(_in(pid, args), capture_output=True, text=True)
        if done.returncode:
            raise TestbedError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")


def configure(table, settings):
    """Write a marker's settings into its "config" map (an id), e.g. a link's new rate."""
    if table is None:
        raise TestbedError("the ECN marker has no config map: was it built from this source?")
    bpfmaps.write(table, ctypes.c_uint32(0), settings.packed())


def settings_of(table):
    """A marker's settings, from its "config" map (an id), or None."""
    data = bpfmaps.read(table, ctypes.c_uint32(0), CONFIG.size)
    return Config.unpacked(data) if data else None


def detach(pid, ifname):
    """No marker on ifname any more (its clsact hook gone with it); nothing where there is none."""
    subprocess.run(_in(pid, ["tc", "qdisc", "del", "dev", ifname, "clsact"]), capture_output=True)


def _json(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise TestbedError(f"{' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout or "null")


def loaded():
    """The ids of the markers loaded on this machine (any namespace): none once their ports are gone."""
    if shutil.which("bpftool") is None:
        return []
    return [p["id"] for p in _json(["bpftool", "-j", "prog", "show"]) or [] if p.get("name") == PROGRAM]


def maps(ports):
    """{ifname: {map name (queues, ecn_counts, source_counts): id}} of the markers on `ports` ({pid
    of a namespace or None: [ifname]}), ports without one left out: one bpftool per namespace and
    two in all, however many ports."""
    programs = {}
    for pid, names in ports.items():
        wanted = set(names)
        for shown in _json(_in(pid, ["bpftool", "-j", "net", "show"])) or []:
            programs.update({tc["devname"]: tc["id"] for tc in shown.get("tc", [])
                             if tc.get("devname") in wanted and tc.get("kind") == "clsact/egress"})
    if not programs:
        return {}
    tables = {p["id"]: p.get("map_ids", []) for p in _json(["bpftool", "-j", "prog", "show"]) or []
              if p.get("name") == PROGRAM}
    names = {m["id"]: m.get("name") for m in _json(["bpftool", "-j", "map", "show"]) or []}
    return {ifname: {names.get(m): m for m in tables[prog]} for ifname, prog in programs.items() if prog in tables}


def map_id(pid, ifname, name):
    """The id of the map `name` of the marker on ifname, or None."""
    return maps({pid: [ifname]}).get(ifname, {}).get(name)


def _dump(table, key):
    """{key(map key): counts} of the marker's map `table` (an id), or None for None."""
    if table is None:
        return None
    out = {}
    for entry in _json(["bpftool", "-j", "map", "dump", "id", str(table)]):
        value = entry.get("formatted", entry)
        out[key(value["key"])] = {k: int(v) for k, v in value["value"].items()}
    return out


def counts(table):
    """{class: {"packets", "ect", "marked", "over"}} a marker has counted since it was attached
    (``CLASSES``), from its ``ecn_counts`` map (an id; None: None)."""
    return _dump(table, lambda key: CLASSES[int(key)])


def sources(table):
    """{IPv4 source: {"packets", "ect", "marked", "over"}} a marker has counted since it was
    attached, from its ``source_counts`` map (an id; None: None)."""
    # the key is the address as on the wire, which bpftool prints as this machine's integer
    return _dump(table, lambda key: socket.inet_ntoa(struct.pack("=I", int(key))))
