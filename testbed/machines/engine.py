"""The machines of a run, started, supervised and collected by Dask distributed.

Without a `scheduler` in the machines file, the head runs a Dask scheduler on its underlay address
and starts one worker per machine over ssh, with SSHCluster's worker class (asyncssh; the project
at the same path on each, run by its venv's Python); with one, the workers already attached to it
are used. A machine's worker is the one named as the machine, or the one started over ssh from its
address. Work for a machine is a task pinned to its worker. The head renews a lease on every worker each half second and
watches that each worker is still there and still beating: a machine lost mid-run, or one whose
worker sent no heartbeat for SILENT seconds (hung), ends the run at once (MachineLost),
a head lost leaves the workers to end what the run made there (machines.remote.Reaper) within
LEASE seconds, and a worker that loses its scheduler closes within DEATH_TIMEOUT and does the same.
"""
import contextlib
import sys
import threading
import time

from testbed.errors import RunFailure, TestbedError
from testbed.machines import remote

JOIN_TIMEOUT = 60.0     # s for every machine's worker to join
DEATH_TIMEOUT = 10      # s a worker outlives its scheduler
WATCH = 0.5             # s between the head's looks at its workers
SILENT = 20.0           # s without a heartbeat after which a worker counts as hung
UNREGISTER = 15.0       # s the head waits for the workers to end what the run made there


class MachineLost(RunFailure):
    pass


def _login(machine):
    """asyncssh's options for a machine's ssh target (keys and known hosts as ~/.ssh has them)."""
    user, _ = machine.ssh_user_host
    return {"username": user} if user else {}


class Engine:
    """with Engine(machines) as engine: engine.call("vm1", fn, *args)"""

    def __init__(self, machines, log=print, join_timeout=JOIN_TIMEOUT):
        self.machines, self.log, self.join_timeout = machines, log, join_timeout
        self.client = self.cluster = None
        self.workers, self.lost, self.why, self._reaping = {}, None, "", False
        self._stop = threading.Event()

    def __enter__(self):
        try:
            started = time.monotonic()
            self._connect()
            self.workers = self._join()
            self.client.register_plugin(remote.Reaper(), name=remote.Reaper.name)
            self._reaping = True
            threading.Thread(target=self._watch, daemon=True).start()
            for address in self.workers.values():      # one each: a hung worker holds no other's lease
                threading.Thread(target=self._renew, args=(address,), daemon=True).start()
            self.log(f"machines: {len(self.workers)} Dask workers joined in {time.monotonic() - started:.1f} s "
                     f"({self.describe()})")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def describe(self):
        return ", ".join(f"{m.name} at {m.underlay}, {m.slots} slot{'s' * (m.slots > 1)}"
                         for m in self.machines.machines)

    # --- the cluster ----------------------------------------------------------------------
    def _connect(self):
        from distributed import Client, Scheduler, SpecCluster
        from distributed.deploy.ssh import Worker as SSHWorker
        ms = self.machines
        if ms.scheduler:
            try:
                self.client = Client(ms.scheduler, timeout=f"{self.join_timeout}s")
            except (OSError, TimeoutError) as e:
                raise TestbedError(f"the Dask scheduler at {ms.scheduler} did not answer ({e}): start it "
                                   "('dask scheduler') or leave scheduler out to start one over ssh") from None
            return
        # SSHCluster's parts, but its scheduler here, on the head's underlay address: no ssh to the head
        workers = {m.name: {"cls": SSHWorker, "options": {
            "address": m.ssh_user_host[1], "connect_options": _login(m),
            "kwargs": {"nthreads": 4, "death_timeout": DEATH_TIMEOUT}, "worker_class": "distributed.Worker",
            "remote_python": sys.executable}} for m in ms.machines}
        scheduler = {"cls": Scheduler, "options": {"host": ms.head, "port": 0, "dashboard": False,
                                                   "worker_ttl": f"{DEATH_TIMEOUT}s"}}
        try:
            self.cluster = SpecCluster(workers, scheduler, name="testbed machines")
            self.client = Client(self.cluster, timeout=f"{self.join_timeout}s")
        except Exception as e:   # asyncssh's and the cluster's own errors
            raise TestbedError(f"Dask could not start the machines' workers over ssh ({type(e).__name__}: {e}): "
                               "check that 'ssh TARGET true' works as root without a password for every machine, "
                               "and that the project is set up at the same path on each") from None

    def _join(self):
        """{machine name: worker address}, once every machine's worker is there."""
        deadline = time.monotonic() + self.join_timeout
        while True:
            found = self._match(self.client.scheduler_info(n_workers=-1)["workers"])
            missing = [m.name for m in self.machines.machines if m.name not in found]
            if not missing:
                return found
            if time.monotonic() > deadline:
                raise TestbedError(f"machine {', '.join(missing)} did not join the Dask cluster within "
                                   f"{self.join_timeout:.0f} s: start its worker (named as the machine) or check "
                                   "that it is reachable")
            time.sleep(0.2)

    def _match(self, workers):
        """A machine's worker: by name with a scheduler of the user's, by the address it came from
        with the workers started over ssh."""
        found = {}
        for address, info in workers.items():
            for m in self.machines.machines:
                if (self.machines.scheduler and str(info.get("name")) == m.name) or \
                        (not self.machines.scheduler and info.get("host") in (m.ssh_user_host[1], m.underlay)):
                    found.setdefault(m.name, address)
        return found

    def _watch(self):
        beats = {}       # worker address: (its last heartbeat as the scheduler stamped it, when that changed here)
        while not self._stop.wait(WATCH):
            try:
                present, now = self.client.scheduler_info(n_workers=-1)["workers"], time.monotonic()
                for name, address in self.workers.items():
                    if address not in present:
                        self.lost, self.why = name, "was lost mid-run"
                        return
                    stamp = present[address].get("last_seen")
                    if beats.get(address, (None,))[0] != stamp:
                        beats[address] = (stamp, now)
                    elif now - beats[address][1] > SILENT:
                        self.lost, self.why = name, f"stopped answering (no heartbeat for {SILENT:.0f} s)"
                        return
            except Exception:
                if self._stop.is_set():
                    return
                self.lost, self.why = self.lost or "the scheduler", self.why or "was lost mid-run"

    def _renew(self, address):
        while not self._stop.wait(WATCH):
            with contextlib.suppress(Exception):
                self.client.run(remote.renew, workers=[address], on_error="ignore")

    def close(self):
        self._stop.set()
        if self.client is not None:
            if self._reaping:     # each worker's Reaper ends what the run made there; a hung one cannot
                unregister = threading.Thread(target=self._unregister, daemon=True)
                unregister.start()
                unregister.join(UNREGISTER)
            with contextlib.suppress(Exception):
                self.client.close(timeout=5)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=10)
        self.client = self.cluster = None

    def _unregister(self):
        with contextlib.suppress(Exception):
            self.client.unregister_worker_plugin(remote.Reaper.name)

    # --- work -----------------------------------------------------------------------------
    def check(self):
        if self.lost:
            if self.why.startswith("stopped answering"):
                raise MachineLost(f"machine {self.lost} {self.why}: the run ended, every other machine ends what it "
                                  f"made within seconds, and {self.lost} once its worker is ended (a hung worker)")
            raise MachineLost(f"machine {self.lost} {self.why}: the run ended and every machine "
                              "ends what it made within seconds")

    def together(self, calls, timeout=60.0):
        """Results of [(machine name, fn, *args)], run at once, each on its machine's worker."""
        futures = [self.client.submit(fn, *args, workers=[self.workers[name]], allow_other_workers=False, pure=False)
                   for name, fn, *args in calls]
        deadline = time.monotonic() + timeout
        try:
            while not all(f.done() for f in futures):
                self.check()
                if time.monotonic() > deadline:
                    late = [name for (name, *_), f in zip(calls, futures) if not f.done()]
                    raise RunFailure(f"machine {', '.join(late)} did not answer within {timeout:.0f} s")
                time.sleep(0.1)
            self.check()
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()

    def call(self, name, fn, *args, timeout=60.0):
        """fn(*args) on machine `name`'s worker."""
        return self.together([(name, fn, *args)], timeout)[0]
