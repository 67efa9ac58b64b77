"""The public API and its pytest plugin, without root: inputs refused before anything is built,
the result objects' ratios, and the plugin's fixtures skipping in one line where this machine
cannot emulate."""
import os

import pytest

import testbed
from testbed.api import Collective, Sweep

pytest_plugins = ["pytester"]


def test_fabric_builds_families_and_files(tmp_path):
    assert len(testbed.fabric("bigraph:2,8").hosts) == 16
    path = tmp_path / "fabric.json"
    path.write_text(__import__("json").dumps(testbed.fabric("leafspine:2,2,2").to_dict()))
    assert len(testbed.fabric(path).hosts) == 4


@pytest.mark.parametrize("spec, options, says", [
    ("bigraph:2,7", {}, "bigraph"),
    ("nosuch:1", {}, "unknown topology"),
    ("bigraph:2,8", {"rate": 0.001}, "rate"),
    ("bigraph:2,8", {"delay": -1}, "--delay"),
    ("bigraph:2,8", {"mtu": 100}, "mtu"),
])
def test_fabric_refuses_bad_input_in_one_line(spec, options, says):
    with pytest.raises(testbed.TestbedError) as e:
        testbed.fabric(spec, **options)
    assert says.lower() in str(e.value).lower() and "\n" not in str(e.value)


@pytest.mark.parametrize("routing, hash_", [("nosuch", "same"), ("ecmp", "nosuch")])
def test_emulate_refuses_bad_routing_before_building(routing, hash_, tmp_path):
    with pytest.raises(testbed.TestbedError):
        testbed.emulate(testbed.fabric("bigraph:2,8"), routing, hash=hash_, folder=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_plane_forms_differ_only_in_wiring():
    single, dual = testbed.plane_forms(testbed.fabric("hpn7:2,2,2,2"))
    assert (single.planes, dual.planes) == (1, 2)
    uplinks = [sorted(link.rate for link in t.links if link.a in t.switches and link.b in t.switches)
               for t in (single, dual)]
    assert uplinks[0] == uplinks[1] and len(single.links) == len(dual.links)


def row(algorithm, size, busbw, time_us, **extra):
    return {"algorithm": algorithm, "size": size, "ranks": 16, "time_us": time_us, "algbw_MBps": busbw / 2,
            "busbw_MBps": busbw, "busbw_over_link": busbw / 12.5, "wrong": 0, **extra}


def test_sweep_ratios_and_verdicts():
    sweep = Sweep(Collective.from_row(r) for r in [
        row("hd", 1 << 20, 6.0, 300.0, emulator_bottleneck=False),
        row("hdrm", 1 << 20, 12.0, 150.0, emulator_bottleneck=True)])
    assert sweep.ratio("hdrm", "hd", 1 << 20) == pytest.approx(2.0)
    assert sweep.ratio("hdrm", "hd", 1 << 20, "time_us") == pytest.approx(0.5)
    assert sweep.get("hdrm", 1 << 20).emulator_bottleneck and sweep.get("hdrm", 1 << 20).verdict == "BOTTLENECK"
    assert sweep.get("hd", 1 << 20).verdict == "ok" and sweep.wrong == 0
    with pytest.raises(KeyError):
        sweep.get("ring", 1 << 20)


def test_compare_is_a_paired_gain_with_its_interval():
    cmp = testbed.compare("busbw", ("a", "b"), [(1.0, 2.0), (1.0, 1.8), (0.5, 1.1)])
    assert cmp.gain.mean == pytest.approx((1.0 + 0.8 + 1.2) / 3)
    assert cmp.gain.excludes(0) and "excludes zero" in cmp.line()


def test_the_plugin_is_registered_by_the_entry_point(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("testbed")


def test_the_fixtures_skip_in_one_line_without_root(pytester, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fabric("bigraph:2,8")
        def test_built(emulation):
            raise AssertionError("built without root")

        def test_several(emulate):
            raise AssertionError("built without root")
    """)
    result = pytester.runpytest_inprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*emulation needs root: run pytest with sudo*"])


def test_testbed_exports_the_api_and_loads_it_only_when_asked():
    import subprocess
    import sys

    from testbed import api

    assert tuple(api.__all__) == testbed.API
    # The controller and the rank programs import testbed; a library probing it for an attribute it
    # lacks (eventlet, os-ken) must not load the API, and with it Mininet and its logging, there.
    probe = ("import sys, testbed, testbed.topology; hasattr(testbed, 'no_such_thing'); "
             "print('testbed.api' in sys.modules, 'mininet' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"], out
