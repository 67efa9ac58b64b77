"""What runs on a machine's Dask worker for a run that spans machines (machines.engine).

Whatever a run starts on a worker is registered here and ended by its pid: when the run ends
(the head unregisters the Reaper plugin), when the worker closes (it lost the scheduler), and when
the head stops renewing its lease (the head died while the scheduler lives on).
"""
import contextlib
import hashlib
import os
import socket
import subprocess
import threading
import time
import traceback

from distributed.diagnostics.plugin import WorkerPlugin

from testbed.emulation import ovs
from testbed.emulation.processes import PROJECT, start_local

LEASE = 5.0           # s without a renewal from the head after which a worker ends what the run made

_made, _lock = [], threading.Lock()
_renewed = [time.monotonic()]


def made(thing):
    """Register a Program (emulation.processes) or a machine's Part (machines.part) made on this
    worker for the run."""
    with _lock:
        _made.append(thing)
    return thing


def renew():
    _renewed[0] = time.monotonic()


def reap():
    """End every registered program by its pid, and remove every registered part."""
    with _lock:
        things, _made[:] = list(_made), []
    for thing in things:
        if not hasattr(thing, "proc"):
            try:
                thing.stop()
            except Exception:       # said in the worker's log; the rest is still ended
                traceback.print_exc()
            continue
        with contextlib.suppress(OSError):
            thing.proc.kill()
        with contextlib.suppress(Exception):
            thing.proc.wait(5)


class Reaper(WorkerPlugin):
    """Ends what the run made on this worker when the run, the worker or the head's lease ends."""
    name = "testbed-reaper"

    def __init__(self, lease=LEASE):
        self.lease = lease

    def setup(self, worker):
        renew()
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while not self._stop.wait(0.5):
            if time.monotonic() - _renewed[0] > self.lease:
                reap()
                renew()

    def teardown(self, worker):
        self._stop.set()
        # Dask calls this on its event loop, where pyroute2's synchronous IPRoute cannot run its own
        reaper = threading.Thread(target=reap)
        reaper.start()
        reaper.join()


# --- the checks of machines.engine.preflight, each run on one machine ------------------------
def identity():
    """What must match between the machines of one run, and what each must have."""
    commit = subprocess.run(["git", "-C", str(PROJECT), "rev-parse", "HEAD"], capture_output=True, text=True)
    requirements = PROJECT / "requirements.txt"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:12] if requirements.exists() else "none"
    return {"commit": commit.stdout.strip() or "unknown", "requirements": digest,
            "root": os.geteuid() == 0, "ovs": ovs.reachable(), "project": str(PROJECT),
            "host": socket.gethostname()}


def df_ping(peer, frame):
    """Whether a `frame`-byte IPv4 packet reaches peer with Don't Fragment set (ping's payload is the
    frame less 28 bytes of IP and ICMP headers)."""
    out = subprocess.run(["ping", "-M", "do", "-s", str(frame - 28), "-c", "2", "-i", "0.2", "-W", "2", peer],
                         capture_output=True, text=True)
    return out.returncode == 0


def connects(address, port, timeout=3.0):
    """Whether a TCP connection to address:port opens from here."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def bandwidth_server(address, port):
    """An iperf3 server for one test on address:port, ready when this returns."""
    server = made(start_local(f"iperf3 server on {address}", "iperf_endpoint", "server", address, port))
    server.expect("ready", 15)


def bandwidth_client(peer, port, seconds):
    """Mbit/s one TCP connection to peer's iperf3 server received over `seconds`."""
    client = made(start_local(f"iperf3 client to {peer}", "iperf_endpoint", "client", peer, port, seconds, 0))
    client.expect("ready", 15)
    client.send(go=True)
    result = client.expect("result", seconds + 15)["result"]
    client.stop()
    return result["received_mbit"]
