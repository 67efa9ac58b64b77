"""Every Open vSwitch command the testbed runs, in one place: the database (ovs-vsctl), OpenFlow
state (ovs-ofctl), and facts about the running ovs-vswitchd."""
import json
import re
import subprocess
from pathlib import Path

PIDFILE = Path("/var/run/openvswitch/ovs-vswitchd.pid")
OPENFLOW = "OpenFlow13"
# A run split into slots (emulation.slots) has an ovs-vswitchd per slot, whose bridges answer ovs-ofctl
# on their own management sockets: the functions below take `targets`, {bridge: "unix:<slot dir>/<bridge>.mgmt"}
# (the emulation's ``ofctl_targets``), and reach any other bridge by its name.


def vsctl(*args, timeout=15):
    return subprocess.run(["ovs-vsctl", f"--timeout={timeout}", *args],
                          capture_output=True, text=True, timeout=timeout + 5)


def ofctl(*args, timeout=10):
    return subprocess.run(["ovs-ofctl", "-O", OPENFLOW, *args], capture_output=True, text=True, timeout=timeout)


def datapath_name(datapath):
    """'user' -> 'userspace datapath', 'kernel' -> 'kernel datapath'."""
    return f"{'userspace' if datapath == 'user' else datapath} datapath"


def version():
    """'3.1' for Open vSwitch 3.1.0."""
    out = subprocess.run(["ovs-vsctl", "--version"], capture_output=True, text=True).stdout
    return re.findall(r"\d+\.\d+", out)[0]


def reachable():
    """Whether the OVS database answers."""
    try:
        return vsctl("show", timeout=3).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def vswitchd_pid():
    """The pid of the running ovs-vswitchd, or None."""
    try:
        pid = int(PIDFILE.read_text())
    except (OSError, ValueError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


def kernel_datapath_loaded():
    return Path("/sys/module/openvswitch").exists()


def kernel_datapath_available():
    """Whether the running kernel has the openvswitch module, loaded or loadable (asked without
    loading it: modprobe's dry run)."""
    if kernel_datapath_loaded():
        return True
    try:
        return subprocess.run(["modprobe", "--dry-run", "--quiet", "openvswitch"], capture_output=True).returncode == 0
    except OSError:
        return False


def load_kernel_datapath():
    """Load the module (root); whether it is there afterwards."""
    if not kernel_datapath_loaded():
        subprocess.run(["modprobe", "-q", "openvswitch"], capture_output=True)
    return kernel_datapath_loaded()


def tagged_bridges(tag):
    """{bridge: value of external id `tag`} for every bridge that carries it."""
    out = vsctl("--format=json", "--columns=name,external_ids", "list", "Bridge")
    if out.returncode:
        return {}
    bridges = {}
    for name, (_, ids) in json.loads(out.stdout)["data"]:
        tags = dict(ids)
        if tag in tags:
            bridges[name] = tags[tag]
    return bridges


def delete_bridges(names):
    """Remove the bridges from the database (which outlives the daemon and reboots). Without a
    running ovs-vswitchd, ovs-vsctl would wait for it to apply the change: then it does not."""
    if names:
        args = [] if vswitchd_pid() else ["--no-wait"]
        for name in names:
            args += ["--", "--if-exists", "del-br", name]
        vsctl(*args)


def forget_datapath_flows(control=None):
    """Delete every flow the datapath has cached; the OpenFlow tables stay, so each flow's next
    packet is looked up again as on a fresh fabric. control: the unixctl socket of a slot's
    ovs-vswitchd (default: the machine's)."""
    appctl = ["ovs-appctl", *(["-t", str(control)] if control else [])]
    datapaths = subprocess.run([*appctl, "dpctl/dump-dps"], capture_output=True, text=True, timeout=10).stdout
    for datapath in datapaths.split():
        subprocess.run([*appctl, "dpctl/del-flows", datapath], capture_output=True, text=True, timeout=10)


def flow_count(bridge, targets=None):
    found = re.search(r"flow_count=(\d+)", ofctl("dump-aggregate", (targets or {}).get(bridge, bridge)).stdout)
    return int(found.group(1)) if found else -1


def port_bytes(ports, targets=None):
    """{(bridge, port): (bytes received, bytes sent)} from the OpenFlow port counters, one call per
    bridge."""
    out = {}
    for bridge in sorted({sw for sw, _ in ports}):
        text = ofctl("dump-ports", (targets or {}).get(bridge, bridge)).stdout
        for port, received, sent in re.findall(
                r"port\s+(\d+): rx pkts=\d+, bytes=(\d+).*?\n\s+tx pkts=\d+, bytes=(\d+)", text):
            out[bridge, int(port)] = (int(received), int(sent))
    return {port: out[port] for port in ports}
