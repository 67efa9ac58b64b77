"""The switch ports' control class (docs/design.md, *The control class*), on and off in one run:
what it changes is what its test asserts."""
import testbed

LARGE = 1 << 20


def median_busbw_over_link(c):
    """busbw/link of the median iteration: one iteration a late rank puts out of step does not move it."""
    return c.busbw_over_link * c.time_us / c.row["median_us"]


def alltoall(tmp_path, control_class):
    with testbed.emulate(testbed.fabric("bigraph:2,8"), folder=tmp_path / str(control_class),
                         control_class=control_class) as emu:
        result = emu.sweep(["topo"], [LARGE], collective="alltoall", warmup=1, iters=3, model=False)
    assert result.wrong == 0
    return result.get("topo", LARGE)


def test_the_control_class_lets_the_alltoall_s_rounds_run_at_the_link(tmp_path):
    """With one FIFO per switch port the rounds' clear-to-sends and ACKs wait behind other flows'
    frames (0.55 of the link measured before the class), with the class the median iteration runs
    at the link (0.98)."""
    on, off = alltoall(tmp_path, True), alltoall(tmp_path, False)
    assert median_busbw_over_link(on) >= 0.85, on
    assert median_busbw_over_link(on) >= 1.25 * median_busbw_over_link(off), (on, off)
