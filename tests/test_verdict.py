"""The bottleneck verdict looks where forwarding happens: ovs-vswitchd's CPU on the userspace datapath,
the busiest core (softirq) on the kernel datapath, where a machine average hides one saturated core."""
import pytest

from testbed.fidelity import verdict


def stat(cores):
    """/proc/stat text for cores given as (busy, softirq) ticks out of 100 each, plus the machine line."""
    def line(name, busy, softirq):
        # user nice system idle iowait irq softirq steal
        return f"{name} {busy - softirq} 0 0 {100 * scale - busy} 0 0 {softirq} 0 0 0"
    scale = 1
    lines = [line(f"cpu{i}", busy, soft) for i, (busy, soft) in enumerate(cores)]
    scale = len(cores)
    total = line("cpu", sum(b for b, _ in cores), sum(s for _, s in cores))
    return "\n".join([total, *lines, "intr 0", "ctxt 0"])


@pytest.fixture
def spans(monkeypatch):
    """Make the monitor see /proc/stat go from idle to the given per-core load, with ovs-vswitchd idle."""
    def run(datapath, cores):
        zero = "\n".join(f"cpu{n} 0 0 0 0 0 0 0 0" for n in ["", *range(len(cores))])
        texts = iter([zero, stat(cores)])
        monkeypatch.setattr(verdict, "_read_stat", lambda: next(texts))
        monkeypatch.setattr(verdict.ovs, "vswitchd_pid", lambda: None)
        with verdict.CpuMonitor(datapath) as cpu:
            pass
        return cpu.result()
    return run


def test_a_kernel_datapath_saturating_one_core_is_the_bottleneck_though_the_machine_is_half_idle(spans):
    result = spans("kernel", [(100, 90), (4, 0)])
    assert result["machine_busy"] == 0.52
    assert result["busiest_core"] == 1.0 and result["busiest_core_softirq"] == 0.9
    assert result["emulator_bottleneck"]
    assert "WAS the bottleneck (kernel datapath: busiest core 100% busy, 90% in softirq" in verdict.describe(result)


def test_a_kernel_datapath_with_cores_to_spare_is_not_the_bottleneck(spans):
    result = spans("kernel", [(60, 40), (44, 10)])
    assert not result["emulator_bottleneck"]
    assert "was not the bottleneck (kernel datapath" in verdict.describe(result)


def test_the_userspace_verdict_follows_ovs_vswitchd_not_a_busy_core(spans):
    # A core busy with the hosts' own work: ovs-vswitchd idle, the machine below its limit.
    result = spans("user", [(100, 0), (4, 0)])
    assert not result["emulator_bottleneck"]
    assert "ovs-vswitchd 0.00 cores" in verdict.describe(result)


def test_a_saturated_machine_is_the_bottleneck_on_either_datapath(spans):
    for datapath in ("user", "kernel"):
        assert spans(datapath, [(94, 0), (94, 0)])["emulator_bottleneck"]
