"""Which DS field a rank's listener gives its connections (no root: the emulation is not built)."""
import pytest

import testbed
from testbed.emulation.network import Emulation
from testbed.emulation.shaping import CONTROL_DSCP
from testbed.routing import plan


@pytest.mark.parametrize("kw, expected", [
    ({}, CONTROL_DSCP),
    ({"control_class": False}, None),
    ({"priority": "strict"}, None),       # a job's class holds for all its packets
    ({"priority": "weighted"}, None),
])
def test_the_control_class_is_marked_only_where_the_ports_serve_it_and_no_job_has_a_class(tmp_path, kw, expected):
    topo = testbed.fabric("bigraph:2,4")
    assert Emulation(topo, plan(topo), tmp_path, **kw).control_dscp == expected
