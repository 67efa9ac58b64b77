"""One way to run a program of ``testbed.programs``: inside an emulated host (its network
namespace, through ``Emulation.program``) or here on loopback (``start_local``), ready when it says
so, stopped by its own pid.

Every such program speaks JSON lines on stdout: ``{"ready": true}`` once it can work, then one
object per reply; on a failure ``{"error": "..."}`` before it exits. It reads commands, one JSON
object per line, on stdin, and ends when stdin closes. Lines that are not JSON (a traceback) are
kept and quoted when the program fails.
"""
import contextlib
import json
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from testbed.errors import RunFailure

PROJECT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"


class ProgramError(RunFailure):
    pass


def free_port():
    """A port free on loopback now, below the kernel's ephemeral range: a port the kernel handed
    out itself could be taken, before its listener binds it, as the local port of a connection
    another program (another loopback rank) opens ("Address already in use"). Never the same port
    twice in one process: ranks started together would otherwise draw one port now and then."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if len(_handed_out) > 4096:          # long done with: the range must not run dry
        _handed_out.clear()
    while True:
        port = random.randrange(max(1024, low - 16384), low)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            _handed_out.add(port)
            return port


_handed_out = set()


def argv(module, *args):
    """The command line of testbed.programs.<module>."""
    return [sys.executable, "-m", f"testbed.programs.{module}", *map(str, args)]


POPEN = {"cwd": PROJECT, "stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT,
         "text": True}


class Program:
    """A started program. Its messages go to `inbox` as (program, message), and (program, None) when
    its output ends; programs that are waited on together share one inbox."""

    def __init__(self, name, proc, inbox=None):
        self.name, self.proc = name, proc
        self.inbox = inbox if inbox is not None else queue.Queue()
        self.said = deque(maxlen=4)
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def pid(self):
        return self.proc.pid

    def stopped(self):
        """Whether the process is stopped (SIGSTOP, a debugger): it will say nothing until continued."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in "Tt"
        except (OSError, IndexError):
            return False

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if isinstance(msg, dict):
                self.inbox.put((self, msg))
            elif line.strip():
                self.said.append(line.strip())
        self.inbox.put((self, None))

    def send(self, **msg):
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):   # its pipe broke: it is gone
            raise ProgramError(self.exited()) from None

    def exited(self):
        """What to say about a program whose output ended."""
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = "still running"
        last = f": {self.said[-1]}" if self.said else ""
        return f"{self.name} exited (code {code}){last}"

    def expect(self, key, timeout):
        """Its next message that has `key`; ProgramError if it fails, exits or stays silent."""
        return expect_all([self], key, timeout)[0]

    def stop(self, grace=5.0):
        stop_all([self], grace)


POLL = 0.5   # s between looks at the processes while waiting for them


def _root_cause(inbox, first, settle=0.5):
    """The error that names the cause: an error marked as a consequence of another program's (its
    connection closed) waits up to `settle` s for that program's own."""
    msg, until = first, time.monotonic() + settle
    while msg.get("consequence") and time.monotonic() < until:
        try:
            _, other = inbox.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            break
        if other and "error" in other and not other.get("consequence"):
            msg = other
    return msg["error"]


def expect_all(programs, key, timeout, label="", stopped_ok=False):
    """One message with `key` from each program (which share an inbox), in the programs' order. A
    program found stopped twice in a row is reported at once, since the others would wait for it,
    unless stopped_ok (a run that stops a rank on purpose, as a hung rank)."""
    got, deadline, suspects = {}, time.monotonic() + timeout, set()
    inbox = programs[0].inbox
    while len(got) < len(programs):
        left = deadline - time.monotonic()
        try:
            program, msg = inbox.get(timeout=max(0.0, min(POLL, left)))
        except queue.Empty:
            if left <= POLL:
                silent = [p.name for p in programs if p not in got]
                raise ProgramError(f"{label}{', '.join(silent)} did not answer within {timeout:.0f} s") from None
            stopped = set() if stopped_ok else {p for p in programs if p not in got and p.stopped()}
            for p in stopped & suspects:
                raise ProgramError(f"{label}{p.name} (pid {p.pid}) is stopped (SIGSTOP or a debugger) "
                                   "and holds up the others") from None
            suspects = stopped
            continue
        if msg is None:
            raise ProgramError(label + program.exited())
        if "error" in msg:
            raise ProgramError(f"{label}{_root_cause(inbox, msg)}")
        if key in msg:
            got[program] = msg
    return [got[p] for p in programs]


def stop_all(programs, grace=5.0):
    """Close every program's stdin (they end on that), give them `grace` seconds, kill what still
    runs (a stopped process too), and reap them all."""
    for program in programs:
        with contextlib.suppress(OSError, ValueError):
            program.proc.stdin.close()
    deadline = time.monotonic() + grace
    for program in programs:
        try:
            program.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            program.proc.kill()
            program.proc.wait()


def start_local(name, module, *args, inbox=None):
    """A program in this machine's own namespace (loopback tests, no root)."""
    return Program(name, subprocess.Popen(argv(module, *args), **POPEN), inbox)
