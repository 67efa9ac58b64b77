"""The controller as a process of its own: started on 127.0.0.1 and a free port, stopped by pid.

It reads the routing plan from the run folder. Readiness is checked on the switches themselves: a
switch is ready when its flow table holds every rule the plan gives it (plus the table-miss rule).
"""
import subprocess
import sys
import time
from pathlib import Path

from testbed.emulation import ovs
from testbed.emulation.programs import LOOPBACK, PROJECT, free_port
from testbed.errors import TestbedError


class Controller:
    def __init__(self, plan, plan_file, topology_file, run_dir):
        self.plan, self.plan_file, self.run_dir = plan, Path(plan_file), Path(run_dir)
        self.topology_file = Path(topology_file)
        self.port, self.proc = free_port(), None
        self.log_path = self.run_dir / "controller.log"

    def start(self):
        self._log = open(self.log_path, "w")   # noqa: SIM115 (open while the controller runs; closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controllers", "--routing", str(self.plan_file),
             "--topology", str(self.topology_file),
             "--ofp-listen-host", LOOPBACK, "--ofp-tcp-listen-port", str(self.port)],
            cwd=PROJECT, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self.proc.pid

    def wait_ready(self, bridges, timeout=60.0):
        """bridges: {bridge name: dpid}. Returns seconds waited; raises if not ready in time."""
        waiting, start = dict(bridges), time.monotonic()
        while waiting:
            if self.proc.poll() is not None:
                raise TestbedError(f"the controller exited with code {self.proc.returncode}: "
                                   f"see {self.log_path}")
            for bridge, dpid in list(waiting.items()):
                if ovs.flow_count(bridge) == len(self.plan.rules.get(dpid, [])) + 1:
                    del waiting[bridge]
            if waiting and time.monotonic() - start > timeout:
                raise TestbedError(f"switches {' '.join(sorted(waiting))} did not get their flows within "
                                   f"{timeout:.0f} s: see {self.log_path}")
            if waiting:
                time.sleep(0.2)
        return time.monotonic() - start

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._log.close()
