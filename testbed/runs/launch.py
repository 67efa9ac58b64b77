"""A user's own distributed program on a running fabric, once per rank, as torchrun starts one.

Each rank's process runs inside its emulated host's network namespace with torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; OMP_NUM_THREADS=1, as
torchrun sets it where several ranks share a machine), GLOO_SOCKET_IFNAME naming the host's NIC (a
host's name resolves to no address of the fabric), the project's venv first on PATH and the project
on PYTHONPATH (so ``python3`` is the venv's, with torch, and ``import testbed`` works). With
``mpi`` the program is started by ``mpirun`` instead, from rank 0's host, its daemons reaching the
other hosts through ``programs/rsh_agent.py`` (an rsh agent that enters a host's namespace), over
TCP on the fabric's addresses.

Each rank writes its stdout and stderr to files of its own in the run folder. A rank that exits
with an error ends every other rank (their process groups), as torchrun's elastic agent does; so do
Ctrl-C and the end of the fabric. A program reports a step by printing a line ``testbed-step
SECONDS`` (``testbed.step(seconds)`` prints it), which the launch reads back per rank.
"""
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.errors import RunFailure, TestbedError

PROJECT = Path(__file__).resolve().parents[2]
RSH_AGENT = PROJECT / "testbed" / "programs" / "rsh_agent.py"
MASTER_PORT = 29500
# a step's seconds and, where the program gives it, the wall-clock time it ended (``step``)
STEP = re.compile(r"^testbed-step\s+([0-9.eE+-]+)(?:\s+([0-9.eE+-]+))?\s*$", re.M)
GRACE_S = 3.0


class LaunchError(RunFailure):
    pass


def mpirun(emulation, hosts, folder):
    """(mpirun's command up to the program's words, the file of host pids its rsh agent reads) for
    one rank per entry of `hosts`, over TCP on the fabric's addresses, its daemons started in the
    hosts' namespaces by the rsh agent, idle ranks yielding; writes folder/hostfile and
    folder/host_pids.json. Run it from the first host's namespace with TESTBED_PEER_PIDS set to the
    pid file, and export that variable to the ranks (``-x``)."""
    pids = folder / "host_pids.json"
    pids.write_text(json.dumps({h: emulation.host(h).pid for h in dict.fromkeys(hosts)}))
    hostfile = folder / "hostfile"
    hostfile.write_text("".join(f"{h} slots={hosts.count(h)}\n" for h in dict.fromkeys(hosts)))
    return ["mpirun", "--allow-run-as-root", "-np", str(len(hosts)), "--hostfile", str(hostfile),
            "--map-by", "slot", "--bind-to", "none", "--mca", "plm_rsh_agent", str(RSH_AGENT),
            "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", "10.0.0.0/8", "--mca", "oob_tcp_if_include", "10.0.0.0/8",
            "--mca", "mpi_yield_when_idle", "1"], pids


def step(seconds):
    """Report one step of a launched program (its time, seconds, ending now) to the launch that
    started it: the line ``testbed-step SECONDS END``, END on the wall clock (which every host
    shares), so that the operator's monitor places the step in its windows."""
    print(f"testbed-step {seconds:.6f} {time.time():.6f}", flush=True)


@dataclass
class Launch:
    """A launched program: its command, the host of each rank, and once started each rank's
    process (``procs``) and log files (``logs``: {rank: (stdout, stderr)})."""
    emulation: object
    command: list
    hosts: list
    folder: Path
    env: dict = field(default_factory=dict)
    mpi: bool = False
    procs: list = field(default_factory=list)
    logs: dict = field(default_factory=dict)
    started: float | None = None
    ended: float | None = None
    sent_before: int = 0

    @property
    def ranks(self):
        return len(self.hosts)

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def environment(self, rank):
        """The rank's environment: torchrun's variables, its NIC for gloo, the venv and project."""
        topo, host = self.emulation.topo, self.hosts[rank]
        server = topo.hosts[host].server
        mates = [h for h in self.hosts if topo.hosts[h].server == server]
        venv_bin = Path(sys.executable).parent
        env = {"PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
               "HOME": os.environ.get("HOME", "/root"), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
               "RANK": str(rank), "WORLD_SIZE": str(self.ranks), "LOCAL_RANK": str(mates.index(host)),
               "LOCAL_WORLD_SIZE": str(len(mates)), "MASTER_ADDR": topo.hosts[self.hosts[0]].ports[0].ip,
               "MASTER_PORT": str(MASTER_PORT), "GLOO_SOCKET_IFNAME": topo.hosts[host].ports[0].intf,
               "TESTBED_HOST": host}
        return {**env, **self.env}

    def start(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self.sent_before = self._sent()
        self.started = time.monotonic()
        if self.mpi:
            self._start_mpirun()
            return self
        for rank, host in enumerate(self.hosts):
            self.procs.append(self._spawn(rank, host, self.command, self.environment(rank)))
        return self

    def _spawn(self, rank, host, command, env):
        out, err = self.folder / f"rank{rank}.out", self.folder / f"rank{rank}.err"
        self.logs[rank] = (out, err)
        with open(out, "wb") as o, open(err, "wb") as e:
            try:
                return self.emulation.spawn(command, host, stdin=subprocess.DEVNULL, stdout=o, stderr=e, env=env,
                                            cwd=os.getcwd())
            except FileNotFoundError as gone:
                raise TestbedError(f"{command[0]}: no such command: give a program on PATH or a path") from gone

    def _start_mpirun(self):
        """One mpirun, in rank 0's host, its daemons started in the other hosts by the rsh agent;
        each rank's output in its own files (OpenMPI's --output-filename)."""
        command, pids = mpirun(self.emulation, self.hosts, self.folder)
        env = self.environment(0)
        for name in ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GLOO_SOCKET_IFNAME", "TESTBED_HOST"):
            env.pop(name)                 # mpirun gives each rank its own (OMPI_COMM_WORLD_RANK ...)
        env["TESTBED_PEER_PIDS"] = str(pids)
        exported = [a for name in ("PATH", "PYTHONPATH", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "TESTBED_PEER_PIDS",
                                   *self.env) for a in ("-x", name)]
        command += ["--output-filename", str(self.folder / "mpi"), *exported, *self.command]
        self.procs.append(self._spawn(0, self.hosts[0], command, env))
        self.logs = {"mpirun": self.logs.pop(0)}

    def rank_logs(self):
        """{rank: (stdout, stderr)} as the ranks wrote them (mpirun's per-rank files where it ran them)."""
        if not self.mpi:
            return self.logs
        found = {}
        for path in sorted((self.folder / "mpi").glob("*/rank.*/stdout")):
            rank = int(path.parent.name.split(".")[1])
            found[rank] = (path, path.parent / "stderr")
        return found

    def wait(self, timeout):
        """Each rank's exit code, once every rank has ended; a rank that fails ends the others and
        raises LaunchError naming it and its last words, as does running past `timeout` seconds."""
        deadline = self.started + timeout
        while True:
            codes = [p.poll() for p in self.procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                self.stop()
                rank, code = failed[0]
                raise LaunchError(f"rank {rank if not self.mpi else '(mpirun)'} exited with code {code}"
                                  f"{self._last_words(rank)}: the other ranks were ended")
            if all(c == 0 for c in codes):
                self.ended = time.monotonic()
                return codes
            if time.monotonic() > deadline:
                self.stop()
                raise LaunchError(f"the program ran past --timeout {timeout:g} s: every rank was ended "
                                  "(give a longer --timeout, or look at the ranks' logs)")
            time.sleep(0.1)

    def _last_words(self, rank):
        _, err = self.logs.get(rank, self.logs.get("mpirun", (None, None)))
        lines = err.read_text(errors="replace").strip().splitlines() if err and err.exists() else []
        return f" ({lines[-1][:200]})" if lines else ""

    def stop(self):
        """End every rank still running: its process group, SIGTERM, then SIGKILL after a grace."""
        live = [p for p in self.procs if p.poll() is None]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in live:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, sig)
            deadline = time.monotonic() + GRACE_S
            while live and time.monotonic() < deadline:
                live = [p for p in live if p.poll() is None]
                time.sleep(0.05)
            if not live:
                return

    @property
    def seconds(self):
        """From the start to the last rank's end (or now)."""
        return (self.ended or time.monotonic()) - self.started

    def _sent(self):
        """Bytes the ranks' hosts have sent from their NICs (each host once)."""
        topo = self.emulation.topo
        return sum(self.emulation.counters(nic)["tx_bytes"] for h in dict.fromkeys(self.hosts)
                   for nic in topo.hosts[h].ports)

    def fabric_bytes(self):
        """Bytes the ranks' hosts sent onto the fabric since the launch started."""
        return self._sent() - self.sent_before

    def results(self):
        """[each rank's last stdout line that is a JSON object, or {}]."""
        logs, out = self.rank_logs(), []
        for r in range(self.ranks):
            found = {}
            lines = logs[r][0].read_text(errors="replace").splitlines() if r in logs else []
            for line in reversed(lines):
                with contextlib.suppress(ValueError):
                    value = json.loads(line)
                    if isinstance(value, dict):
                        found = value
                        break
            out.append(found)
        return out

    def steps(self):
        """[[seconds of each step reported] per rank]."""
        return [[seconds for seconds, _ in mine] for mine in self.step_times()]

    def step_times(self):
        """[[(seconds, wall-clock end or None) of each step reported] per rank], read as the ranks
        write them (a line still being written is left for the next read)."""
        logs, out = self.rank_logs(), []
        for r in range(self.ranks):
            text = logs[r][0].read_text(errors="replace") if r in logs and logs[r][0].exists() else ""
            text = text[:text.rfind("\n") + 1]
            out.append([(float(seconds), float(end) if end else None) for seconds, end in STEP.findall(text)])
        return out

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
