"""Machines on this one machine, for the tests of runs across machines (--machines): each machine a
network namespace on a Linux bridge (the underlay, this machine its head at .254), a Dask scheduler
here and a Dask worker inside each machine's namespace, named as the machine."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testbed.emulation.processes import free_port

BRIDGE, PREFIX, NET = "tbmlab", "tbmlab-", "10.253.7"
HEAD = f"{NET}.254"


def _ip(*args, ns=None):
    subprocess.run(["ip", *(["-n", ns] if ns else []), *args], check=True, capture_output=True)


class Lab:
    """with Lab(["a", "b"], mtu=9100) as lab: lab.machines_file(path, slots=1); lab.kill("b")"""

    def __init__(self, names, mtu=9100, ssh=False):
        """Each worker's log goes to lab.logs (a new temporary folder). ssh: no scheduler nor
        workers of the lab's own; each machine runs an SSH server (ssh_server) instead, and the
        machines file names ssh targets, for the engine to start its own (the client's key and
        known hosts in lab.home/.ssh: give the engine HOME=lab.home)."""
        self.names, self.mtu, self.ssh = list(names), mtu, ssh
        self.logs = Path(tempfile.mkdtemp(prefix="tbmlab-logs"))
        self.port, self.procs = free_port(), {}

    def address(self, name):
        return f"{NET}.{self.names.index(name) + 1}"

    def __enter__(self):
        try:
            _ip("link", "add", BRIDGE, "mtu", str(self.mtu), "type", "bridge")
            _ip("addr", "add", f"{HEAD}/24", "dev", BRIDGE)
            _ip("link", "set", BRIDGE, "up")
            for name in self.names:
                ns, port = PREFIX + name, PREFIX + name
                _ip("netns", "add", ns)
                _ip("link", "add", port, "mtu", str(self.mtu), "type", "veth", "peer", "name", "eth0", "netns", ns)
                _ip("link", "set", port, "master", BRIDGE, "up")
                _ip("addr", "add", f"{self.address(name)}/24", "dev", "eth0", ns=ns)
                _ip("link", "set", "eth0", "mtu", str(self.mtu), "up", ns=ns)
                _ip("link", "set", "lo", "up", ns=ns)
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": Path(__file__).parents[2]}
            if self.ssh:
                self._ssh_servers(quiet["cwd"])
                return self
            self.procs["scheduler"] = subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", HEAD, "--port", str(self.port),
                 "--no-dashboard"], **quiet)
            for name in self.names:
                log = open(self.logs / f"worker-{name}.log", "w")   # noqa: SIM115 (the worker's while it runs)
                self.procs[name] = subprocess.Popen(
                    ["ip", "netns", "exec", PREFIX + name, sys.executable, "-m", "distributed.cli.dask_worker",
                     self.scheduler, "--name", name, "--nthreads", "4", "--no-nanny", "--no-dashboard",
                     "--death-timeout", "10"], stdout=log, stderr=subprocess.STDOUT, cwd=quiet["cwd"],
                    env={**os.environ, "PYTHONFAULTHANDLER": "1"})     # SIGABRT dumps every thread's stack
        except BaseException:
            self.__exit__()
            raise
        return self

    def _ssh_servers(self, cwd):
        import asyncssh
        self.home = self.logs / "home"
        (self.home / ".ssh").mkdir(parents=True)
        client, host = asyncssh.generate_private_key("ssh-ed25519"), asyncssh.generate_private_key("ssh-ed25519")
        client.write_private_key(self.home / ".ssh" / "id_ed25519")
        client.write_public_key(self.logs / "authorized_keys")
        host.write_private_key(self.logs / "host_key")
        public = host.export_public_key().decode().strip()
        (self.home / ".ssh" / "known_hosts").write_text("".join(f"{self.address(n)} {public}\n" for n in self.names))
        for name in self.names:
            # its warnings (a newer cryptography's about DSA, at asyncssh's import) go to its log, not
            # into the line that says it is ready
            log = open(self.logs / f"ssh-{name}.log", "w")   # noqa: SIM115 (the server's while it runs)
            server = self.procs[name] = subprocess.Popen(
                ["ip", "netns", "exec", PREFIX + name, sys.executable, "-m", "tests.emulation.ssh_server",
                 self.address(name), "22", str(self.logs / "host_key"), str(self.logs / "authorized_keys")],
                cwd=cwd, stdout=subprocess.PIPE, stderr=log, text=True)
            assert server.stdout.readline().strip() == "ready", f"the SSH server of {name} did not start"

    @property
    def scheduler(self):
        return f"tcp://{HEAD}:{self.port}"

    def machines_file(self, path, slots=1):
        lines = [f'head = "{HEAD}"'] + ([] if self.ssh else [f'scheduler = "{self.scheduler}"'])
        for name in self.names:
            lines += ["[[machine]]", f'name = "{name}"', f'underlay = "{self.address(name)}"', f"slots = {slots}"]
            lines += [f'ssh = "root@{self.address(name)}"'] if self.ssh else []
        Path(path).write_text("\n".join(lines) + "\n")
        return path

    def kill(self, name):
        """SIGKILL a machine's worker, as a machine that vanishes."""
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait()

    def __exit__(self, *exc):
        for proc in self.procs.values():
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for name, proc in self.procs.items():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._abort(name, proc)
        # A Part's sweeper (machines.sweeper) sweeps the run record of a worker that died mid-run: let it
        deadline = time.monotonic() + 20
        while any(ours_in(self.names).values()) and time.monotonic() < deadline:
            time.sleep(0.5)
        for name in self.names:
            for pid in _pids_in(PREFIX + name):       # anything a worker left in its machine
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["ip", "link", "del", PREFIX + name], capture_output=True)    # both ends, now
            subprocess.run(["ip", "netns", "del", PREFIX + name], capture_output=True)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        if not exc or exc[0] is None:       # kept when the block failed: the workers' logs say why
            shutil.rmtree(self.logs, ignore_errors=True)

    def _abort(self, name, proc):
        """A worker that ignored SIGTERM is hung: SIGABRT has faulthandler write every thread's
        stack to its log, which is printed (the test's captured output) before it is killed."""
        proc.send_signal(signal.SIGABRT)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log = self.logs / f"worker-{name}.log"
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-150:]
            print(f"the lab's {name} did not end on SIGTERM; its log ends:", *tail, sep="\n")


def _pids_in(ns):
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def ours_in(names):
    """Processes still in the lab machines' namespaces (their workers excluded by the caller)."""
    return {name: _pids_in(PREFIX + name) for name in names}
