"""The controller as a process of its own: started on 127.0.0.1 and a free port, stopped by pid.

Readiness is checked on the switches themselves: a switch is ready when its flow table holds every
rule the controller was given for it (plus the table-miss rule).
"""
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from testbed.errors import TestbedError

PROJECT = Path(__file__).resolve().parent.parent
LISTEN = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((LISTEN, 0))
        return s.getsockname()[1]


def flow_count(bridge):
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", bridge],
                         capture_output=True, text=True, timeout=10).stdout
    found = re.search(r"flow_count=(\d+)", out)
    return int(found.group(1)) if found else -1


class Controller:
    def __init__(self, rules, run_dir):
        self.rules, self.run_dir = rules, Path(run_dir)
        self.port, self.proc = free_port(), None
        self.log_path = self.run_dir / "controller.log"

    def start(self):
        flows = self.run_dir / "flows.json"
        flows.write_text(json.dumps(self.rules))
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controllers", "--flows", str(flows),
             "--ofp-listen-host", LISTEN, "--ofp-tcp-listen-port", str(self.port)],
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
                if flow_count(bridge) == len(self.rules.get(dpid, [])) + 1:
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
