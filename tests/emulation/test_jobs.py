"""Training jobs on one fabric, through the API: two data-parallel jobs whose Rings cross the one
spine of a small Clos share its links, and each is slowed by the other; with strict priority
classes on the switch ports, the job marked high keeps (most of) its pace."""
import pytest

import testbed
from testbed.collectives.workload import data_parallel
from testbed.emulation.shaping import HIGH_DSCP
from testbed.routing.hashing import Draw
from testbed.runs.jobs import Job
from testbed.topology import LeafSpine

# the slow set (./setup.sh test -m slow): two jobs on one fabric, about 1 minute
pytestmark = pytest.mark.slow

SIZE, ITERS = 1 << 20, 3


def jobs(topo, high=False):
    """Job a on h0 and h2, job b on h1 and h3: both Rings cross leaf0 -> spine0 -> leaf1 and back.
    Job a computes 0.6 s per iteration, in which job b has the link (under strict priority, b's
    only time on it); b computes nothing."""
    a = Job("a", data_parallel(2, SIZE, 0.6), data_parallel(2, SIZE, 0.6).groups(), ("h0", "h2"), port=7000,
            dscp=HIGH_DSCP if high else None)
    b = Job("b", data_parallel(2, SIZE, 0.0), data_parallel(2, SIZE, 0.0).groups(), ("h1", "h3"), port=7256)
    return [a, b]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    topo = LeafSpine(2, 1, 2)
    out = {}
    draws = [Draw(1), Draw(2)]
    for name, priority in (("plain", None), ("strict", "strict")):
        folder = tmp_path_factory.mktemp(name)
        with testbed.emulate(topo, folder=folder, priority=priority) as emu:
            a, b = jobs(topo, high=priority is not None)
            out[name, "a alone"] = emu.jobs([a], iters=ITERS, draws=draws[:1])[0]
            out[name, "together"] = emu.jobs([a, b], iters=ITERS, draws=draws, capture="together")
    return out


def test_both_jobs_are_measured_on_the_link_they_share(measured):
    a, b = measured["plain", "together"]
    shared = set(a["link_bytes"]) & set(b["link_bytes"])
    assert any(link.startswith("leaf0:") for link in shared), (a["link_bytes"], b["link_bytes"])
    for link in shared:                      # each sent its 2 x 1/2 x 1 MiB per iteration, 4 iterations
        assert a["link_bytes"][link] > SIZE and b["link_bytes"][link] > SIZE
    assert a["wrong"] == b["wrong"] == 0


def test_a_job_is_slowed_by_the_other_and_strict_priority_keeps_its_pace(measured):
    alone = measured["plain", "a alone"]["iteration_s"]
    together = measured["plain", "together"][0]["iteration_s"]
    assert together > 1.25 * alone, (alone, together)         # a's collective shares its link with b's
    high_alone = measured["strict", "a alone"]["iteration_s"]
    high, low = (r["iteration_s"] for r in measured["strict", "together"])
    assert high < 1.3 * high_alone, (high_alone, high)        # the high class takes the link it needs
    assert low > high, (high, low)
