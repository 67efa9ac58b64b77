"""ECN marking at every switch port's egress, where the kernel has no RED qdisc: the project's own
tc-eBPF program (``programs/ecn_marker.bpf.c``), compiled with clang for the port's link rate, the
marking threshold K and the FIFO's limit, and attached on the port's clsact egress hook ahead of its
HTB classes. It keeps a virtual queue per class (the high class, that is the control class or a
high-priority job, and the rest) drained at the link's rate and sets CE on an ECN-capable packet
that arrives while its class's virtual queue holds more than K bytes; what a port marked, and what
arrived over K, per class and per IPv4 source, is read back from the program's maps (``counts``,
``sources``).

Nothing is pinned: a program and its maps live as long as the interface they are attached to, so
the run's teardown (and ``--cleanup``), which deletes the switch ports, removes them.
"""
import functools
import hashlib
import json
import platform
import shutil
import socket
import struct
import subprocess
from pathlib import Path

from testbed.emulation.shaping import ETH_HEADER
from testbed.errors import TestbedError

SOURCE = Path(__file__).resolve().parents[1] / "programs" / "ecn_marker.bpf.c"
CLASSES = ("rest", "high")            # the program's class indices
PROGRAM = "testbed_ecn"               # its function's name, as bpftool lists a loaded one
TOOLS = {"clang": "clang", "bpftool": "bpftool", "tc": "iproute2"}
HEADER = Path("/usr/include/bpf/bpf_helpers.h")


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
def build(rate_bps, k_bytes, limit_bytes, folder):
    """The marker compiled for one (rate, K, limit) into folder (one object per set, reused)."""
    text = SOURCE.read_bytes()
    tag = hashlib.sha256(text + f"{rate_bps} {k_bytes} {limit_bytes}".encode()).hexdigest()[:12]
    out = Path(folder) / f"ecn_marker-{tag}.o"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-DRATE_BPS={rate_bps}ULL",
                               f"-DK_BYTES={k_bytes}ULL", f"-DLIMIT_BYTES={limit_bytes}ULL",
                               f"-I/usr/include/{platform.machine()}-linux-gnu",      # asm/types.h
                               "-c", str(SOURCE), "-o", str(out)], capture_output=True, text=True)
        if done.returncode:
            raise TestbedError(f"clang could not compile the ECN marker: {done.stderr.strip().splitlines()[-1]}")
    return out


def _in(pid, args):
    """A command in process pid's network namespace (None: this one)."""
    return (["nsenter", "-t", str(pid), "-n"] if pid else []) + args


def attach(pid, ifname, obj):
    """The marker on ifname's egress (clsact, direct action), in pid's namespace."""
    for args in (["tc", "qdisc", "add", "dev", ifname, "clsact"],
                 ["tc", "filter", "add", "dev", ifname, "egress", "bpf", "da", "obj", str(obj), "sec", "tc"]):
        done = subprocess.run(_in(pid, args), capture_output=True, text=True)
        if done.returncode:
            raise TestbedError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")


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
