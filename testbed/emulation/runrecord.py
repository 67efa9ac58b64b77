"""What a run creates, written down before it is created, so that a crash leaves a list to clean.

A record in STATE_DIR names the run's OVS bridges, its interfaces in the root namespace and its
processes (pid with start time, so a reused pid is never killed). Every bridge also carries the
OVS external id TAG: the OVS database outlives reboots and /run, so a bridge is recognised as ours
even when its record is gone; so does a BPF congestion control by its name (emulation.dctcp).
Nothing else is ever touched.
"""
import contextlib
import fcntl
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

from pyroute2 import IPRoute

from testbed.emulation import cores, dctcp, drops, faults, ovs, sendbuffer
from testbed.errors import TestbedError

STATE_DIR = Path("/run/ai-testbed")
LOCK = STATE_DIR / "lock"
TAG = "ai-testbed-run"
CLEANUP_HINT = "run 'sudo .venv/bin/python run_scenario.py --cleanup'"
_lock_fd = None
_SAVING = threading.Lock()


def acquire_lock():
    """One run at a time on a machine: an exclusive lock on LOCK, held until release_lock() or the
    process ends (so a killed run never holds it). Refuses, naming the pid that holds it."""
    global _lock_fd
    if _lock_fd is not None:
        return
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode().strip() or "unknown"
        os.close(fd)
        raise TestbedError(f"another testbed run is active (pid {holder}): wait for it or stop it") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    _lock_fd = fd


def release_lock():
    global _lock_fd
    if _lock_fd is not None:
        os.ftruncate(_lock_fd, 0)
        os.close(_lock_fd)
        _lock_fd = None
_SAVING = threading.Lock()


def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid):
    """The process's start time in clock ticks since boot, or None if it is gone."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def running(pid, started):
    """Whether the process that started at `started` still runs (a zombie does not)."""
    fields = _stat(pid)
    return bool(fields) and int(fields[19]) == started and fields[0] != "Z"


def tagged_bridges():
    """{bridge: run id} for every OVS bridge this testbed created."""
    return ovs.tagged_bridges(TAG)


class RunRecord:
    def __init__(self, path, data):
        self.path, self.data = Path(path), data

    @classmethod
    def create(cls):
        pid = os.getpid()
        run_id = f"{pid}-{start_time(pid)}"
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        record = cls(STATE_DIR / f"{run_id}.json",
                     {"run_id": run_id, "owner": [pid, start_time(pid)],
                      "bridges": [], "interfaces": [], "processes": []})
        record.save()
        return record

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls(path, json.load(f))

    @classmethod
    def all(cls):
        records = []
        for path in sorted(STATE_DIR.glob("*.json")):
            try:
                records.append(cls.load(path))
            except (OSError, ValueError):
                continue
        return records

    @property
    def run_id(self):
        return self.data["run_id"]

    def owner_alive(self):
        return running(*self.data["owner"])

    def save(self):
        if self.data.get("swept"):   # a thread that adds late (a part's program started as the run ends)
            return                   # must not bring a swept record back
        with _SAVING:     # a failure timeline's thread notes links while the run adds processes
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            tmp.replace(self.path)

    def add(self, bridges=(), interfaces=(), pids=(), directories=(), cgroups=()):
        self.data["bridges"] += list(bridges)
        self.data["cgroups"] = self.data.get("cgroups", []) + [str(c) for c in cgroups]
        self.data["directories"] = self.data.get("directories", []) + [str(d) for d in directories]
        self.data["interfaces"] += list(interfaces)
        self.data["processes"] += [[pid, start_time(pid)] for pid in pids]
        self.save()

    def link_state(self, ifname, up):
        """Note a root-namespace interface taken down (or brought back up) during the run."""
        down = set(self.data.get("down", []))
        (down.discard if up else down.add)(ifname)
        self.data["down"] = sorted(down)
        self.save()

    def note_drops(self):
        """Note that the run adds loss rules in the root namespace (``drops``); sweep() removes them."""
        if not self.data.get("drops"):
            self.data["drops"] = True
            self.save()

    def note_struct_ops(self, struct_ops_id):
        """Note a BPF congestion control registered for the run (emulation.dctcp); sweep() unregisters it."""
        self.data["struct_ops"] = self.data.get("struct_ops", []) + [struct_ops_id]
        self.save()

    def raise_send_buffer(self, pid, size):
        """Raise ovs-vswitchd's send buffer to at least size bytes (see sendbuffer), writing
        down the old size first; sweep() puts it back. Returns False if OVS has no send socket."""
        def note(fd, old):
            self.data["send_buffer"] = [pid, start_time(pid), fd, old]
            self.save()
        return sendbuffer.raise_to(pid, size, note)

    def pin(self, pid, cpus):
        """Pin every thread of process pid to cpus (see placement), writing down their affinities
        first; sweep() puts them back."""
        self.data["affinity"] = [pid, start_time(pid), {}]
        self.save()
        self.data["affinity"][2] = cores.pin(pid, cpus)
        self.save()

    def sweep(self):
        """Remove everything the record names that still exists, then the record itself."""
        for path in self.data.get("cgroups", []):      # a slowed rank's (emulation.faults)
            faults.remove_cgroup(path)
        stop_processes(self.data["processes"])
        if self.data.get("drops"):
            drops.delete_table()
        bring_up(self.data.get("down", []))
        for struct_ops_id in self.data.get("struct_ops", []):
            dctcp.unregister(struct_ops_id)
        ovs.delete_bridges(self.data["bridges"])
        # With ovs-vswitchd gone, the userspace datapath's devices (taps named like the bridges) stay.
        delete_interfaces(self.data["interfaces"] + self.data["bridges"])
        restore_send_buffer(self.data.get("send_buffer"))
        restore_affinity(self.data.get("affinity"))
        for directory in self.data.get("directories", []):   # slots' sockets and logs (emulation.slots)
            shutil.rmtree(directory, ignore_errors=True)
        self.data["swept"] = True
        self.path.unlink(missing_ok=True)


def stop_processes(processes, grace=1.0):
    """SIGHUP, SIGTERM and SIGCONT (Mininet's interactive shells only heed the first; a stopped
    process acts on nothing until continued), then SIGKILL."""
    alive = [(pid, st) for pid, st in processes if running(pid, st)]
    for pid, _ in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGHUP)
            os.kill(pid, signal.SIGCONT)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, _ in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            alive = [(pid, st) for pid, st in alive if running(pid, st)]
            time.sleep(0.05)
        if not alive:
            return


def bring_up(names):
    """Interfaces a run took down, up again (those that still exist)."""
    with IPRoute() as ipr:
        for name in names:
            for index in ipr.link_lookup(ifname=name):
                with contextlib.suppress(Exception):
                    ipr.link("set", index=index, state="up")


def restore_send_buffer(entry):
    """Put back the send buffer size a run found, if that same ovs-vswitchd still runs."""
    if entry:
        pid, started, fd, size = entry
        if running(pid, started) and sendbuffer.send_socket_fd(pid) == fd:
            with sendbuffer.SendBuffer(pid, fd) as buf:
                buf.set(size)


def restore_affinity(entry):
    """Put back the CPU affinities a run found, if that same process still runs."""
    if entry:
        pid, started, before = entry
        if running(pid, started):
            cores.unpin(pid, before)


def delete_interfaces(names, timeout=15.0):
    """Delete the interfaces, and wait until the kernel has let go of them: a veth whose peer sat
    in a dying namespace vanishes asynchronously, and a new run must not find its name taken."""
    if not names:
        return
    with IPRoute() as ipr:
        for name in names:
            for index in ipr.link_lookup(ifname=name):
                with contextlib.suppress(Exception):   # its veth peer's deletion may have taken it already
                    ipr.link("del", index=index)
    deadline = time.monotonic() + timeout
    while any(Path(f"/sys/class/net/{n}").exists() for n in names) and time.monotonic() < deadline:
        time.sleep(0.1)


def leftovers():
    """Descriptions of what dead runs left behind (empty when the machine is clean)."""
    records = RunRecord.all()
    live = {r.run_id for r in records if r.owner_alive()}
    found = [f"record of run {r.run_id}" for r in records if r.run_id not in live]
    stray = sorted(b for b, run in tagged_bridges().items() if run not in live)
    if stray:
        found.append("OVS bridges " + " ".join(stray))
    if not live and dctcp.available():            # held ones (dctcp.held) block nothing and go by themselves
        found.append(f"the congestion control {dctcp.NAME}")
    return found


def live_runs():
    return [r for r in RunRecord.all() if r.owner_alive()]


def cleanup_all():
    """Sweep every dead run's record and every tagged bridge no live run owns; (what went, what
    stays and why, what could not be removed)."""
    removed, records = [], RunRecord.all()
    live = {r.run_id for r in records if r.owner_alive()}
    for record in records:
        if record.run_id not in live:
            removed += record.data["bridges"] + record.data["interfaces"]
            record.sweep()
    stray = [b for b, run in tagged_bridges().items() if run not in live]
    ovs.delete_bridges(stray)
    stays, failed = [], []
    if not live:                       # registered by a run that died before noting it
        was = dctcp.available()
        for struct_ops_id in dctcp.registered():
            dctcp.unregister(struct_ops_id)
        if dctcp.available():
            failed.append(f"{dctcp.NAME}: still registered after 'bpftool struct_ops unregister' (bpftool "
                          "struct_ops show lists it)")
        elif was:
            removed.append(dctcp.NAME)
        if dctcp.held():
            stays.append(f"{dctcp.NAME} (struct_ops {' '.join(map(str, dctcp.held()))}): unregistered, but kept "
                         "listed by the kernel until the sockets that used it close (minutes after a killed run); "
                         "it blocks no run")
    return sorted(set(removed + stray)), stays, failed
