"""pytest fixtures for throughput assertions on an emulated fabric (registered as the ``testbed``
plugin by the package's entry point, so any test run by the project's venv has them):

    @pytest.mark.fabric("bigraph:2,8", routing="deterministic")
    def test_hdrm_beats_hd(emulation):
        sweep = emulation.sweep(["hd", "hdrm"], [1 << 20])
        assert sweep.ratio("hdrm", "hd", 1 << 20) > 1.3

- ``emulation``: the fabric the test's ``fabric`` mark names (default bigraph:2,8, deterministic
  routes), built for the test and always torn down, its files in the test's tmp_path;
- ``emulate``: ``testbed.emulate`` with the run's files in the test's tmp_path, for tests that
  build several fabrics, one ``with emulate(topo) as emu:`` after another (one runs at a time);
- ``needs_emulation``: skips the test, in one line, where this machine cannot emulate (not
  root, Open vSwitch not running); the two fixtures above use it.
Tests that use them are marked ``emulation``: ``pytest -m "not emulation"`` leaves them out.
"""
from __future__ import annotations

import os

import pytest

MARK = "fabric"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{MARK}(spec, routing='deterministic', **fabric_options): the fabric "
                                       "the `emulation` fixture builds (testbed.fabric's spec and options)")
    config.addinivalue_line("markers", "emulation: builds an emulated fabric (root, Open vSwitch)")


def pytest_collection_modifyitems(items):
    for item in items:
        if {"emulation", "emulate", "needs_emulation"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.emulation)


def why_not_here() -> str | None:
    """Why this machine cannot emulate now, in one line, or None."""
    if os.geteuid() != 0:
        return "emulation needs root: run pytest with sudo (sudo .venv/bin/python -m pytest ...)"
    from testbed.emulation import ovs

    if not ovs.reachable():
        return "Open vSwitch is not running: run 'sudo ./setup.sh'"
    return None


@pytest.fixture
def needs_emulation():
    reason = why_not_here()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def emulate(needs_emulation, tmp_path):
    import testbed

    count = iter(range(1 << 30))

    def emulate(topo, routing="deterministic", **kw):
        kw.setdefault("folder", tmp_path / f"fabric{next(count)}")
        return testbed.emulate(topo, routing, **kw)

    return emulate


@pytest.fixture
def emulation(request, emulate):
    import testbed

    mark = request.node.get_closest_marker(MARK)
    spec = mark.args[0] if mark and mark.args else "bigraph:2,8"
    options = dict(mark.kwargs) if mark else {}
    routing, hash_ = options.pop("routing", "deterministic"), options.pop("hash", "same")
    mtu = options.get("mtu")
    kw = {"mtu": mtu} if mtu else {}
    with emulate(testbed.fabric(spec, **options), routing, hash=hash_, **kw) as emu:
        yield emu
