"""--cc and DCTCP's program, without root: a name the kernel lacks is refused in one line naming
the choices, dctcp on a machine that cannot build it says what is missing, the option is part of
what a run does, the program compiles against this kernel's BTF, and --cleanup tells a
registration it removed from one the kernel keeps for sockets still open, and fails where one stays."""
import subprocess
import sys
from pathlib import Path

import pytest

import run_scenario
from testbed.emulation import dctcp, runrecord
from testbed.emulation.settings import RunSettings
from testbed.errors import TestbedError
from testbed.experiments.fingerprint import of_run

PROJECT = Path(__file__).resolve().parents[1]


def test_a_congestion_control_the_kernel_lacks_is_refused_naming_the_choices():
    with pytest.raises(TestbedError, match=r"--cc 'vegas' is not a congestion control of this kernel: choose one of "
                                           r".*dctcp") as e:
        dctcp.check("vegas")
    assert "\n" not in str(e.value)
    dctcp.check("cubic")
    assert dctcp.kernel_name("dctcp") == dctcp.NAME and dctcp.kernel_name("cubic") == "cubic"
    assert dctcp.NAME not in dctcp.offered() and "dctcp" in dctcp.offered()


def test_dctcp_on_a_machine_that_cannot_build_it_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(dctcp.shutil, "which", lambda tool: None if tool == "bpftool" else "/usr/bin/" + tool)
    with pytest.raises(TestbedError, match=r"--cc dctcp needs bpftool \(Debian's bpftool\).*setup\.sh"):
        dctcp.check("dctcp")
    monkeypatch.setattr(dctcp.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(dctcp, "BTF", tmp_path / "none")
    with pytest.raises(TestbedError, match=r"the kernel's BTF .*CONFIG_DEBUG_INFO_BTF.*choose one of"):
        dctcp.check("dctcp", "--senders-cc")


def test_a_congestion_control_is_not_set_across_machines():
    with pytest.raises(TestbedError, match="--cc is set on the hosts of one machine's fabric"):
        RunSettings(congestion_control="cubic", machines=object())
    with pytest.raises(TestbedError, match="--cc must be a congestion control's name"):
        RunSettings(congestion_control=3)


def test_a_congestion_control_is_part_of_what_a_run_does_and_its_absence_changes_no_kept_run():
    import run_scenario
    from scenarios import SCENARIOS
    parse = run_scenario.parser().parse_args
    plain, chosen = parse(["incast"]), parse(["incast", "--cc", "dctcp"])
    assert of_run(SCENARIOS["incast"], plain) != of_run(SCENARIOS["incast"], chosen)
    assert "'cc'" not in str(of_run(SCENARIOS["incast"], plain))


def test_an_unknown_cc_is_refused_before_anything_is_built(tmp_path):
    done = subprocess.run([sys.executable, "run_scenario.py", "incast", "--cc", "vegas", "--results",
                           str(tmp_path / "run")], cwd=PROJECT, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: --cc 'vegas' is not a congestion control") and done.stderr.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(dctcp.missing() is not None, reason="needs clang, bpftool, libbpf-dev and BTF (setup.sh)")
def test_the_program_compiles_against_this_kernels_btf(tmp_path):
    obj = dctcp.build(tmp_path)
    assert obj.read_bytes()[:4] == b"\x7fELF" and (tmp_path / "vmlinux.h").stat().st_size > 100_000


@pytest.fixture
def machine_with(monkeypatch):
    """A machine with no run records nor bridges, whose DCTCP registrations behave as given:
    machine_with(listed_after_unregister, available_after_unregister)."""
    def make(listed, available):
        state = {"listed": [12], "available": True}
        monkeypatch.setattr(runrecord.RunRecord, "all", classmethod(lambda cls: []))
        monkeypatch.setattr(runrecord, "tagged_bridges", lambda: {})
        monkeypatch.setattr(runrecord.ovs, "delete_bridges", lambda names: None)
        monkeypatch.setattr(dctcp, "registered", lambda: state["listed"])
        monkeypatch.setattr(dctcp, "kernel_controls", lambda: ["cubic"] + [dctcp.NAME] * state["available"])
        monkeypatch.setattr(dctcp, "unregister", lambda i: state.update(listed=listed, available=available))
    return make


def test_cleanup_says_a_registration_that_sockets_still_hold_is_left_and_it_blocks_no_run(machine_with):
    machine_with(listed=[12], available=False)        # as after a killed run: unregistered, still listed
    assert runrecord.leftovers() != []                 # registered: a new run would be refused
    removed, stays, failed = runrecord.cleanup_all()
    assert removed == [dctcp.NAME] and failed == []
    assert stays and "struct_ops 12" in stays[0] and "blocks no run" in stays[0]
    assert runrecord.leftovers() == [] and dctcp.held() == [12]


def test_cleanup_fails_where_unregistering_left_dctcp_registered(machine_with, capsys, monkeypatch):
    machine_with(listed=[12], available=True)
    monkeypatch.setattr(run_scenario.preflight, "require_root", lambda: None)
    assert run_scenario.main(["--cleanup"]) == 1
    out, err = capsys.readouterr()
    assert dctcp.NAME not in out.split("\n")[0] and "could not remove: testbed_dctcp: still registered" in err


def test_cleanup_removes_a_registration_that_unregistering_ends(machine_with):
    machine_with(listed=[], available=False)
    assert runrecord.cleanup_all() == ([dctcp.NAME], [], [])
