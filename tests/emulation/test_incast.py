"""Incast on real packets: the last-hop queue measured by its FIFO and by scapy probes at once."""
import pytest

import testbed
from testbed.topology import LeafSpine

FANINS = (2, 8, 15)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    topo = LeafSpine(4, 4, 5)
    with testbed.emulate(topo, folder=tmp_path_factory.mktemp("incast")) as emu:
        rows, _ = emu.incast(FANINS, 256 * 1024, rounds=1, interval=0.005)
    return {r["fanin"]: r for r in rows}


def test_queue_is_deeper_at_fanin_8_than_at_2(rows):
    assert rows[8]["max_queue_packets"] > rows[2]["max_queue_packets"], rows


def test_drops_are_counted_once_the_queue_reaches_its_limit(rows):
    full = rows[15]
    assert full["max_queue_packets"] >= 99, full     # limit 100 (the sample may miss the last one)
    assert full["drops"] > 0, full


def test_probe_delay_and_qdisc_backlog_agree(rows):
    # tolerance: one frame (the one being sent when a probe arrives); measured 0.0-0.6
    for row in rows.values():
        assert row["probes"] > 50, row
        assert row["probe_qdisc_median_diff_frames"] <= 1.0, row
