"""--cli opens Mininet's CLI on a scenario's fabric, with its controller and routes, and removes it all on
exit; every run writes report.md."""
import subprocess
import sys
from pathlib import Path

from tests.emulation.machine import leftovers

PROJECT = Path(__file__).resolve().parents[2]


def test_cli_explores_the_fabric_and_exit_removes_it(run_dir, clean_machine):
    # A daemon started from the CLI leaves its host's shell: exit must end it too.
    commands = "pingall\nh0 ip route\ndpctl dump-flows -O OpenFlow13\nh1 setsid sleep 4242 &\nexit\n"
    out = subprocess.run([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4", "--cli",
                          "--results", str(run_dir)], cwd=PROJECT, input=commands, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "routing deterministic" in text
    assert "Results: 0% dropped (12/12 received)" in text          # the controller's rules carry every pair
    assert "nw_dst=10.0.0." in text                                  # dpctl shows them
    assert leftovers() == []
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if b"sleep\x004242" in _read(p)]
    assert (run_dir / "topology.json").exists() and (run_dir / "report.md").exists()


def _read(path):
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_a_run_writes_its_report(run_dir, clean_machine):
    out = subprocess.run([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4",
                          "--duration", "2", "--results", str(run_dir)], cwd=PROJECT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = (run_dir / "report.md").read_text()
    assert report.startswith("# fabric_check: complete")
    assert "BiGraph(m=1, n=4" in report and "- Open vSwitch: " in report
    assert "reachability" in report and "PASS" in report and "emulator was not the bottleneck" in report
    assert f"report: {run_dir / 'report.md'}" in out.stdout
