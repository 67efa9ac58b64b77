"""The controller as a process of its own: started on 127.0.0.1 and a free port, stopped by pid.

It reads the routing plan from the run folder. Readiness is checked on the switches themselves: a
switch is ready when its flow table holds every rule the plan gives it (plus the table-miss rule).
The run tells it what to route around (the drain file) and, with --ecn, where to read each switch
port's ECN marks and drops (the congestion file); it logs the counts that grew, as it logs the ports
it sees go down, and the run reads both back from its log.
"""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from testbed.emulation import ovs
from testbed.emulation.processes import LOOPBACK, PROJECT, free_port
from testbed.errors import TestbedError
from testbed.topology import interface


class Controller:
    def __init__(self, plan, plan_file, topology_file, run_dir, host=LOOPBACK):
        """host: the address it listens on (a run across machines: the head's underlay address)."""
        self.plan, self.plan_file, self.run_dir, self.host = plan, Path(plan_file), Path(run_dir), host
        self.topology_file = Path(topology_file)
        self.port, self.proc = free_port(), None
        self.log_path = self.run_dir / "controller.log"
        self.drain_path = self.run_dir / "drain.json"
        self.congestion_path = self.run_dir / "congestion.json"

    def start(self):
        self._log = open(self.log_path, "w")   # noqa: SIM115 (open while the controller runs; closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controllers", "--routing", str(self.plan_file),
             "--topology", str(self.topology_file), "--drain", str(self.drain_path),
             "--congestion", str(self.congestion_path),
             "--ofp-listen-host", self.host, "--ofp-tcp-listen-port", str(self.port)],
            cwd=PROJECT, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)   # a signal to the run's process group (Ctrl-C, timeout) is the run's to handle
        return self.proc.pid

    def drain(self, ends):
        """Have the controller route around the links at `ends` ([(switch, port)]; [] puts every
        link back)."""
        _publish(self.drain_path, [list(end) for end in ends])

    def watch_congestion(self, ports):
        """Have the controller read the ECN marks and the drops of the switch ports in `ports`
        ({port: (its marker's ecn_counts map id, the pid of its namespace or None)}; {}: none)."""
        _publish(self.congestion_path, {port: list(at) for port, at in ports.items()})

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


def _publish(path, value):
    """value as path's JSON, whole or not at all for a reader polling it."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)


def wait_for_rules(plan, bridges, controller=None, targets=None, timeout=60.0):
    """Wait until every bridge ({name: dpid}, a slot's reached through targets) holds the rules the plan
    gives it plus the table-miss rule; seconds waited. controller: the local Controller, whose exit
    ends the wait (None on a machine of a split run, whose controller runs on the head)."""
    waiting, start = dict(bridges), time.monotonic()
    where = f": see {controller.log_path}" if controller else " (the controller runs on the head)"
    while waiting:
        if controller and controller.proc.poll() is not None:
            raise TestbedError(f"the controller exited with code {controller.proc.returncode}{where}")
        for bridge, dpid in list(waiting.items()):
            if ovs.flow_count(bridge, targets) == len(plan.rules.get(dpid, [])) + 1:
                del waiting[bridge]
        if waiting and time.monotonic() - start > timeout:
            raise TestbedError(f"switches {' '.join(sorted(waiting))} did not get their flows within "
                               f"{timeout:.0f} s{where}")
        if waiting:
            time.sleep(0.2)
    return time.monotonic() - start


PORT_EVENT = re.compile(r"port (\S+):(\d+) (down|up) at (\d+\.\d+):")


def port_events(log_path):
    """[(wall time, switch, port, up?)]: the port changes the controller logged (its
    port_status_handler), as an operator reads them off the controller; [] before it logged any."""
    try:
        text = Path(log_path).read_text()
    except OSError:
        return []
    return [(float(t), switch, int(port), state == "up") for switch, port, state, t in PORT_EVENT.findall(text)]


CONGESTION = re.compile(r"(?:(marks|drops) at \d+\.\d+: (.*)|congestion read on \d+ ports)$", re.MULTILINE)
PORT_COUNT = re.compile(r"(\S+):(\d+) (\w+) (\d+)")


def congestion(log_path):
    """{"marks": {switch port: {class: packets marked since its marker was attached}}, "drops":
    {switch port: {class: packets its FIFO dropped since it was made}}}: the last count the
    controller logged for each port where it grew since the controller was last told where to read
    (its watch_congestion), as an operator reads a switch's ECN and drop counters off the
    controller; empty before it logged any."""
    try:
        text = Path(log_path).read_text()
    except OSError:
        text = ""
    out = {"marks": {}, "drops": {}}
    for signal, counts in CONGESTION.findall(text):
        if not signal:
            out = {"marks": {}, "drops": {}}
        for switch, port, cls, count in PORT_COUNT.findall(counts):
            out[signal].setdefault(interface(switch, int(port)), {})[cls] = int(count)
    return out
