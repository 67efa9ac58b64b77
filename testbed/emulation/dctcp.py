"""DCTCP for the hosts' TCP where the kernel has none (this one has reno, cubic and bbr): the
project's own BPF struct_ops congestion control (``programs/dctcp.bpf.c``), compiled with clang
against the running kernel's BTF and registered with bpftool under the name ``testbed_dctcp``.
A socket then takes it like any other (TCP_CONGESTION); its connections ask for ECN whatever the
host's tcp_ecn says, and each one's alpha is kept in the program's map (``alphas``).

A registration is machine-wide and outlives the process that made it, so a run notes its id in its
run record and the teardown (or ``--cleanup``) unregisters it; sockets still open keep the program
until they close.
"""
import functools
import json
import platform
import shutil
import socket
import struct
import subprocess
from pathlib import Path

from testbed.emulation.ecn import HEADER
from testbed.errors import TestbedError

SOURCE = Path(__file__).resolve().parents[1] / "programs" / "dctcp.bpf.c"
NAME = "testbed_dctcp"                # the kernel's name for it (tcp_available_congestion_control)
OFFERED = "dctcp"                     # the users' name (--cc dctcp)
BTF = Path("/sys/kernel/btf/vmlinux")
KALLSYMS = Path("/proc/kallsyms")
ALPHA_ONE = 1024                      # alpha is kept in 1/1024


def kernel_controls():
    """The TCP congestion controls this kernel offers now."""
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def offered():
    """The congestion controls a run may ask for: the kernel's, and dctcp."""
    return sorted({c for c in kernel_controls() if c != NAME} | {OFFERED})


def missing():
    """What this machine lacks to build and register DCTCP, in words, or None."""
    gone = [f"{tool} (Debian's {package})" for tool, package in (("clang", "clang"), ("bpftool", "bpftool"))
            if shutil.which(tool) is None]
    if not HEADER.exists():
        gone.append(f"{HEADER} (Debian's libbpf-dev)")
    if not BTF.exists():
        gone.append(f"the kernel's BTF ({BTF}: a kernel built with CONFIG_DEBUG_INFO_BTF)")
    elif " bpf_tcp_ca_" not in _kallsyms():
        gone.append("BPF congestion controls in the kernel (CONFIG_BPF_JIT and BPF struct_ops)")
    return ", ".join(gone) or None


@functools.cache
def _kallsyms():
    try:
        return KALLSYMS.read_text()
    except OSError:
        return ""


def check(cc, option="--cc"):
    """Refuses, in one line naming option, a congestion control this machine cannot give."""
    if cc == OFFERED:
        gone = missing()
        if gone:
            raise TestbedError(f"{option} dctcp needs {gone}: run ./setup.sh, or choose one of "
                               f"{', '.join(c for c in offered() if c != OFFERED)}")
    elif cc not in kernel_controls():
        raise TestbedError(f"{option} {cc!r} is not a congestion control of this kernel: choose one of "
                           f"{', '.join(offered())}")


def kernel_name(cc):
    """The name a socket asks for (TCP_CONGESTION) to get cc."""
    return NAME if cc == OFFERED else cc


def build(folder):
    """The program compiled into folder, against a vmlinux.h dumped from this kernel's BTF."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    header, out = folder / "vmlinux.h", folder / "dctcp.bpf.o"
    with open(header, "w") as f:
        _run(["bpftool", "btf", "dump", "file", str(BTF), "format", "c"], stdout=f)
    done = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I{folder}",
                           f"-I/usr/include/{platform.machine()}-linux-gnu", "-c", str(SOURCE), "-o", str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        raise TestbedError(f"clang could not compile DCTCP: {done.stderr.strip().splitlines()[-1]}")
    return out


def register(obj):
    """DCTCP registered from obj (one left by a dead run replaced); its struct_ops id."""
    before = registered()
    for old in before:
        unregister(old)
    _run(["bpftool", "struct_ops", "register", str(obj)])
    ids = [i for i in registered() if i not in before]     # not one held by a dead run's sockets
    if not ids or not available():
        raise TestbedError(f"bpftool registered no {NAME} from {obj}")
    return ids[0]


def unregister(struct_ops_id):
    """DCTCP's registration gone, if that id is still DCTCP's (nothing otherwise)."""
    if struct_ops_id in registered():
        subprocess.run(["bpftool", "struct_ops", "unregister", "id", str(struct_ops_id)], capture_output=True)


def available():
    """Whether a socket can take DCTCP now: registered, and not yet unregistered."""
    return NAME in kernel_controls()


def held():
    """The ids of DCTCP's registrations that were unregistered but that sockets still use: the
    kernel keeps them listed until the last such socket closes (minutes after a killed run, whose
    connections linger in TIME_WAIT), and no new socket can take them."""
    return [] if available() else registered()


def registered():
    """The ids of DCTCP's registrations on this machine (held ones included): none once every run
    is done and its sockets are closed."""
    if shutil.which("bpftool") is None:
        return []
    done = subprocess.run(["bpftool", "-j", "struct_ops", "show"], capture_output=True, text=True)
    shown = json.loads(done.stdout or "[]") if done.returncode == 0 else []
    return [s["id"] for s in (shown if isinstance(shown, list) else [shown]) if s.get("name") == NAME]


def alphas():
    """{(source ip, source port, destination ip, destination port): alpha} of every open DCTCP
    connection, alpha as a fraction (0..1), at its last update (once per round trip)."""
    return {conn: kept["alpha"] / ALPHA_ONE for conn, kept in seen().items()}


def seen():
    """{(source ip, source port, destination ip, destination port): what the program keeps of the
    connection} of every open DCTCP connection: its alpha (in 1/1024) and number of updates; its
    last update's alpha before, packets delivered and of them echoed CE; its number of window cuts
    and the last one's window before, threshold set and alpha (programs/dctcp.bpf.c, struct seen)."""
    if not registered():
        return {}
    def ip(v):                        # kept in network order, read as a little-endian number
        return socket.inet_ntoa(struct.pack("<I", v))

    out = {}
    for entry in json.loads(_run(["bpftool", "-j", "map", "dump", "name", "alphas"]) or "[]"):
        for e in entry if isinstance(entry, list) else [entry]:    # a map per registration still in use
            key = e["formatted"]["key"]
            out[ip(key["saddr"]), key["sport"], ip(key["daddr"]), key["dport"]] = dict(e["formatted"]["value"])
    return out


def _run(args, stdout=subprocess.PIPE):
    done = subprocess.run(args, text=True, stdout=stdout, stderr=subprocess.PIPE)
    if done.returncode:
        raise TestbedError(f"{' '.join(args)}: {(done.stderr or '').strip()}")
    return done.stdout
