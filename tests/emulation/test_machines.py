"""A run across machines (--machines) on Dask distributed, with the machines as namespaces of this
one (machines_lab): the preflight measures what it checks and refuses what fails, and a machine or
the head lost mid-run ends everything the run made, on every machine, within seconds."""
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import testbed
from testbed.errors import RunFailure, TestbedError
from testbed.machines import engine as engine_module
from testbed.machines import inventory, remote
from testbed.machines.checks import preflight
from testbed.machines.engine import Engine, MachineLost
from testbed.topology import BiGraph
from tests.emulation.machine import leftovers
from tests.emulation.machines_lab import Lab, ours_in

# the slow set (./setup.sh test -m slow): runs across machines: Dask workers over ssh, about 3 minutes
pytestmark = pytest.mark.slow

TOPO = BiGraph(2, 8, rate=10)


def _left(lab):
    """Processes in the lab machines other than their workers."""
    workers = {proc.pid for proc in lab.procs.values()}
    return {name: [_cmdline(p) for p in pids if p not in workers] for name, pids in ours_in(lab.names).items()}


def _cmdline(pid):
    try:
        return f"{pid} " + open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:120]
    except OSError:
        return f"{pid} (gone)"


def test_the_preflight_measures_every_pair_and_leaves_nothing(tmp_path):
    with Lab(["a", "b"]) as lab:
        ms = inventory.load(lab.machines_file(tmp_path / "m.toml"))
        with Engine(ms, log=print) as engine:
            found = preflight(engine, TOPO, 9000, seconds=1)
        assert set(found["bandwidth_mbit"]) == {"a->b", "b->a"}
        assert min(found["bandwidth_mbit"].values()) >= 80          # BiGraph(2,8)'s 8 cut links at 10 Mbit/s
        assert _left(lab) == {"a": [], "b": []}


def test_an_underlay_too_small_for_the_full_frame_is_refused(tmp_path):
    with Lab(["a", "b"], mtu=1500) as lab:
        ms = inventory.load(lab.machines_file(tmp_path / "m.toml"))
        with Engine(ms, log=print) as engine, pytest.raises(TestbedError) as e:
            preflight(engine, TOPO, 9000, seconds=1)
    assert "does not carry a 9050-byte frame with Don't Fragment set" in str(e.value)


def test_a_machine_that_joins_no_cluster_is_refused(tmp_path):
    with Lab(["a"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        path.write_text(path.read_text() + '[[machine]]\nname = "z"\nunderlay = "10.253.7.99"\n')
        with pytest.raises(TestbedError, match="machine z did not join the Dask cluster within 2 s"):
            Engine(inventory.load(path), join_timeout=2).__enter__()


def test_a_machine_lost_mid_run_ends_the_run_at_once_and_the_others_end_what_they_made(tmp_path):
    with Lab(["a", "b"]) as lab:
        ms = inventory.load(lab.machines_file(tmp_path / "m.toml"))
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
            from testbed.machines import remote
            from testbed.machines import inventory
            from testbed.machines.engine import Engine
            with Engine(inventory.load("{path}"), log=lambda m: None) as engine:
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


LARGE = 1 << 20


@pytest.fixture(scope="module")
def across(tmp_path_factory):
    """BiGraph(2,8) across two machines: one Upper and one Lower switch with their hosts on each, the
    8 links between them VXLAN over the machines' underlay."""
    folder = tmp_path_factory.mktemp("across")
    with Lab(["a", "b"]) as lab:
        path = lab.machines_file(folder / "m.toml")
        with testbed.emulate(testbed.fabric("bigraph:2,8"), machines=path, folder=folder / "run") as emu:
            check = emu.check(seconds=2)
            sweep = emu.sweep(["hd", "hdrm"], [LARGE], warmup=1, iters=3, model=False)
        time.sleep(1)
        left = _left(lab)
    return check, sweep, left, folder / "run"


def test_allreduce_across_machines_matches_numpy_and_keeps_the_link_rate(across):
    # One machine: HDRM 0.98 of the link at 1 MiB, about 2x plain HD (test_slots, test_allreduce)
    _, sweep, _, _ = across
    assert [c.wrong for c in sweep] == [0, 0]
    assert sweep.get("hdrm", LARGE).busbw_over_link >= 0.8, sweep.get("hdrm", LARGE)
    assert sweep.ratio("hdrm", "hd", LARGE) >= 1.3, (sweep.get("hdrm", LARGE), sweep.get("hd", LARGE))
    assert {s["machine"] for s in sweep.get("hdrm", LARGE).row["slots"]} == {"a", "b"}


def test_every_cut_link_crosses_the_underlay_at_its_rate(across):
    check, _, _, folder = across
    cut = check.summary["cut_links"]
    assert cut["covered"] == cut["directions"] == 16 and cut["min"] >= 0.85, cut
    assert not any(cut["underlay_errors"].values()), cut["underlay_errors"]
    assert check.passed
    machines_json = json.loads((folder / "machines.json").read_text())
    assert machines_json["preflight"]["bandwidth_mbit"]["a->b"] >= 80


def test_a_run_across_machines_leaves_nothing(across):
    _, _, left, _ = across
    assert left == {"a": [], "b": []}
    assert leftovers() == []


def test_a_machine_lost_mid_sweep_ends_the_run_and_leaves_nothing(tmp_path):
    with Lab(["a", "b"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        with pytest.raises(RunFailure) as e, \
                testbed.emulate(testbed.fabric("bigraph:2,8"), machines=path, folder=tmp_path / "run") as emu:
            threading.Timer(3, lab.kill, args=("b",)).start()
            started = time.monotonic()
            emu.sweep(["ring"], [LARGE], warmup=0, iters=30, model=False)
        assert time.monotonic() - started < 25
        assert "machine b" in str(e.value) or "exited" in str(e.value), e.value
        deadline = time.monotonic() + remote.LEASE + 10    # b's sweeper, a's part
        while any(_left(lab).values()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _left(lab) == {"a": [], "b": []}
    assert leftovers() == []


def test_a_machine_hung_mid_sweep_ends_the_run_and_leaves_nothing_once_it_is_ended(tmp_path, monkeypatch):
    monkeypatch.setattr(engine_module, "SILENT", 5.0)
    with Lab(["a", "b"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        with pytest.raises(MachineLost) as e, \
                testbed.emulate(testbed.fabric("bigraph:2,8"), machines=path, folder=tmp_path / "run") as emu:
            threading.Timer(3, lab.procs["b"].send_signal, args=(signal.SIGSTOP,)).start()
            started = time.monotonic()
            emu.sweep(["ring"], [LARGE], warmup=0, iters=30, model=False)
        # 3 s before the hang, 5 s of silence, at most UNREGISTER s for the reapers of the others
        assert time.monotonic() - started < 3 + 5 + engine_module.UNREGISTER + 10
        assert "machine b stopped answering" in str(e.value), e.value
        assert _left(lab)["a"] == []
    assert leftovers() == []         # b's sweeper, once the lab ended its worker


def _scenario(*args):
    return subprocess.run([sys.executable, "run_scenario.py", *args], cwd=Path(__file__).parents[2],
                          capture_output=True, text=True)


def test_fabric_check_runs_across_machines_from_the_command_line(tmp_path):
    with Lab(["a", "b"]) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        out = _scenario("fabric_check", "--duration", "2", "--machines", str(path), "--results", str(tmp_path / "run"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "underlay MTU     9050-byte frames" in out.stdout and "16/16 directions of 8 VXLAN links" in out.stdout
    report = (tmp_path / "run" / "report.md").read_text()
    assert "across machines a (10.253.7.1, 1 slot), b (10.253.7.2, 1 slot)" in report
    assert leftovers() == []


def test_a_run_the_preflight_refuses_writes_nothing(tmp_path):
    with Lab(["a", "b"], mtu=1500) as lab:
        path = lab.machines_file(tmp_path / "m.toml")
        out = _scenario("fabric_check", "--machines", str(path), "--results", str(tmp_path / "run"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and "does not carry a 9050-byte frame" in out.stderr
    assert not (tmp_path / "run").exists()


def test_the_engine_starts_its_own_workers_over_ssh(tmp_path, monkeypatch):
    # No scheduler in the file: the head runs one on its underlay address and starts each machine's
    # worker over ssh (SSHCluster's worker class), here through each lab machine's SSH server.
    with Lab(["a", "b"], ssh=True) as lab:
        monkeypatch.setenv("HOME", str(lab.home))
        ms = inventory.load(lab.machines_file(tmp_path / "m.toml"))
        assert ms.scheduler is None
        with Engine(ms, log=print) as engine:
            assert set(engine.workers) == {"a", "b"}
            found = preflight(engine, TOPO, 9000, seconds=1)
            assert min(found["bandwidth_mbit"].values()) >= 80
        time.sleep(2)
        assert _left(lab) == {"a": [], "b": []}       # the workers went with the engine


def test_a_machine_ssh_cannot_reach_is_refused(tmp_path, monkeypatch):
    with Lab(["a"], ssh=True) as lab:
        monkeypatch.setenv("HOME", str(lab.home))
        path = lab.machines_file(tmp_path / "m.toml")
        unreachable = '[[machine]]\nname = "z"\nunderlay = "10.253.7.99"\nssh = "root@10.253.7.99"\n'
        path.write_text(path.read_text() + unreachable)
        started = time.monotonic()
        with pytest.raises(TestbedError, match="could not start the machines' workers over ssh"):
            Engine(inventory.load(path), join_timeout=10).__enter__()
        assert time.monotonic() - started < 40
        time.sleep(1)
        assert _left(lab) == {"a": []}       # a's worker, started before z failed, went too
