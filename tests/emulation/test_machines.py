"""A run across machines (--machines) on Dask distributed, with the machines as namespaces of this
one (machines_lab): the preflight measures what it checks and refuses what fails, and a machine or
the head lost mid-run ends everything the run made, on every machine, within seconds."""
import subprocess
import sys
import textwrap
import time

import pytest

from testbed.emulation import machines, remote
from testbed.emulation.engine import Engine, MachineLost
from testbed.emulation.machine_check import preflight
from testbed.errors import TestbedError
from testbed.topology import BiGraph
from tests.emulation.machines_lab import Lab, ours_in

TOPO = BiGraph(2, 8, rate=10)


def _left(lab):
    """Processes in the lab machines other than their workers."""
    workers = {proc.pid for proc in lab.procs.values()}
    return {name: [p for p in pids if p not in workers] for name, pids in ours_in(lab.names).items()}


def test_the_preflight_measures_every_pair_and_leaves_nothing(tmp_path):
    with Lab(["a", "b"]) as lab:
        ms = machines.load(lab.machines_file(tmp_path / "m.toml"))
        with Engine(ms, log=print) as engine:
            found = preflight(engine, TOPO, 9000, seconds=1)
        assert set(found["bandwidth_mbit"]) == {"a->b", "b->a"}
        assert min(found["bandwidth_mbit"].values()) >= 80          # BiGraph(2,8)'s 8 cut links at 10 Mbit/s
        assert _left(lab) == {"a": [], "b": []}


def test_an_underlay_too_small_for_the_full_frame_is_refused(tmp_path):
    with Lab(["a", "b"], mtu=1500) as lab:
        ms = machines.load(lab.machines_file(tmp_path / "m.toml"))
        with Engine(ms, log=print) as engine, pytest.raises(TestbedError) as e:
            preflight(engine, TOPO, 9000, seconds=1)
    assert "does not carry a 9050-byte frame with Don't Fragment set" in str(e.value)


def test_a_machine_that_joins_no_cluster_is_refused(tmp_path):
    with Lab(["a"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        path.write_text(path.read_text() + '[[machine]]\nname = "z"\nunderlay = "10.253.7.99"\n')
        with pytest.raises(TestbedError, match="machine z did not join the Dask cluster within 2 s"):
            Engine(machines.load(path), join_timeout=2).__enter__()


def test_a_machine_lost_mid_run_ends_the_run_at_once_and_the_others_end_what_they_made(tmp_path):
    with Lab(["a", "b"]) as lab:
        ms = machines.load(lab.machines_file(tmp_path / "m.toml"))
        with Engine(ms, log=print) as engine:
            engine.call("a", remote.bandwidth_server, lab.address("a"), 5201)      # waits for a client
            assert _left(lab)["a"]
            lab.kill("b")
            started = time.monotonic()
            with pytest.raises(MachineLost, match="machine b was lost mid-run"):
                engine.call("b", remote.identity)
            assert time.monotonic() - started < 5
        time.sleep(1)
        assert _left(lab)["a"] == []


def test_a_head_lost_mid_run_leaves_nothing_on_the_machines(tmp_path):
    with Lab(["a"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        head = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import time
            from testbed.emulation import machines, remote
            from testbed.emulation.engine import Engine
            with Engine(machines.load("{path}"), log=lambda m: None) as engine:
                engine.call("a", remote.bandwidth_server, "{lab.address('a')}", 5201)
                print("serving", flush=True)
                time.sleep(600)
            """)], stdout=subprocess.PIPE, text=True)
        try:
            assert head.stdout.readline().strip() == "serving"
            assert _left(lab)["a"]
            head.kill()
            deadline = time.monotonic() + remote.LEASE + 5
            while _left(lab)["a"] and time.monotonic() < deadline:
                time.sleep(0.5)
            assert _left(lab)["a"] == []
        finally:
            head.kill()
            head.wait()
