"""A machine's part of a fabric split across machines: a Dask actor on the machine's worker that
builds its slots (an Emulation with a Share: the slots' switches and hosts, VXLAN to the other
machines' slots, the slots' switches reaching the controller on the head), runs programs in its
hosts and reports their lines, reads its counters, and removes it all at the end.

Actor methods run one at a time on the worker: every method but build() returns at once.
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.emulation import runrecord
from testbed.emulation.network import Emulation
from testbed.emulation.processes import POPEN, PROJECT, argv
from testbed.machines import remote


@dataclass(frozen=True)
class Share:
    """What one machine builds of a fabric split into slots."""
    slots: frozenset        # slot indices built here
    underlay: dict          # {slot index: its machine's underlay address}
    controller: tuple       # (host, port) of the controller, on the head


class Part:
    def __init__(self, topo, plan, mtu, slot_count, share, control_class=True):
        self.topo, self.plan, self.control_class = topo, plan, control_class
        self.mtu, self.slot_count, self.share = mtu, slot_count, share
        self.emu, self.procs, self.cpu, self.sweeper = None, {}, None, None
        self._lines, self._lock = {}, threading.Lock()

    def build(self):
        """Build the share; returns this machine's boot id and monotonic clock (the head maps rank
        times onto its own clock with them)."""
        self.folder = Path(tempfile.mkdtemp(prefix="tbpart"))
        self.emu = Emulation(self.topo, self.plan, self.folder, mtu=self.mtu, log=lambda m: None,
                             refuse_overload=False, slot_count=self.slot_count, share=self.share,
                             control_class=self.control_class)
        remote.made(self)
        self.emu.__enter__()
        self.emu.record.add(directories=[self.folder])     # swept with the rest if the worker is killed
        me = os.getpid()
        self.sweeper = subprocess.Popen(
            [sys.executable, "-m", "testbed.machines.sweeper", str(self.emu.record.path), str(me),
             str(runrecord.start_time(me))], cwd=PROJECT, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return {"boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(), "now": time.monotonic()}

    def now(self):
        return time.monotonic()

    # --- programs in this machine's hosts ---------------------------------------------------
    def start(self, key, host, module, args):
        proc = self.emu.spawn(argv(module, *args), host, **POPEN)
        self.procs[key] = proc
        self._lines[key] = []
        threading.Thread(target=self._read, args=(key, proc), daemon=True).start()
        return proc.pid

    def _read(self, key, proc):
        for line in proc.stdout:
            with self._lock:
                self._lines[key].append(line)
        with self._lock:
            self._lines[key].append(None)

    def drain(self):
        """{key: [lines]} said since the last drain; None ends a program's output."""
        with self._lock:
            out = {key: lines[:] for key, lines in self._lines.items() if lines}
            for lines in self._lines.values():
                lines.clear()
        return out

    def write(self, key, text):
        with contextlib.suppress(OSError, ValueError):
            self.procs[key].stdin.write(text)
            self.procs[key].stdin.flush()

    def close(self, key):
        with contextlib.suppress(OSError, ValueError):
            self.procs[key].stdin.close()

    def returncode(self, key):
        return self.procs[key].poll()

    def kill(self, key):
        with contextlib.suppress(OSError):
            self.procs[key].kill()

    # --- reading and acting on the fabric -----------------------------------------------------
    def cmd(self, host, command):
        return self.emu.host(host).cmd(command)

    def switch_drops(self):
        return self.emu.switch_drops()

    def underlay_errors(self):
        return self.emu.underlay_errors()

    def set_link(self, index, up):
        self.emu.set_link(self.topo.links[index], up)

    def forget_flows(self):
        self.emu.forget_flows()

    def counters(self, nic):
        return self.emu.counters(nic)

    def cpu_start(self):
        self.cpu = self.emu.cpu_monitor().__enter__()

    def cpu_stop(self):
        self.cpu.__exit__(None, None, None)
        return self.cpu.result()

    def stop(self):
        """Everything this part made goes (also called by remote.reap when the run ends badly)."""
        try:
            for proc in self.procs.values():
                with contextlib.suppress(OSError):
                    proc.kill()
            if self.emu is not None:
                emu, self.emu = self.emu, None
                emu.__exit__(None, None, None)
        finally:
            if self.sweeper is not None:        # the record is swept: nothing left for it to do
                self.sweeper.kill()
                self.sweeper.wait()
                self.sweeper = None
            shutil.rmtree(self.folder, ignore_errors=True)
        return os.getpid()
