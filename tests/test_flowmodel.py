"""The flow model: max-min fair rates and transfer completion on hand-made placements whose
answers are known. No root."""
import pytest

from testbed.errors import TestbedError
from testbed.fidelity.flowmodel import completion, max_min, payload_fraction


def test_flows_on_one_link_share_it_equally():
    assert max_min({"a": ["L"], "b": ["L"], "c": ["L"], "d": ["L"]}, {"L": 12}) == {k: 3 for k in "abcd"}


def test_a_flow_held_back_elsewhere_leaves_its_share_to_the_others():
    # b is held to 2 by link B (shared with c); a then takes the rest of A
    rates = max_min({"a": ["A"], "b": ["A", "B"], "c": ["B"]}, {"A": 10, "B": 4})
    assert rates == pytest.approx({"a": 8, "b": 2, "c": 2})


def test_the_parking_lot():
    # one long flow over three links of capacity 1, a short one on each: all get 1/2
    paths = {"long": ["x", "y", "z"], "sx": ["x"], "sy": ["y"], "sz": ["z"]}
    assert max_min(paths, {"x": 1, "y": 1, "z": 1}) == pytest.approx(dict.fromkeys(paths, 0.5))


def test_a_link_of_its_own_caps_a_flow_at_its_rate():
    rates = max_min({"a": ["nic_a", "core"], "b": ["nic_b", "core"]}, {"nic_a": 1, "nic_b": 10, "core": 8})
    assert rates == pytest.approx({"a": 1, "b": 7})


def test_transfers_that_end_leave_their_share_to_the_rest():
    # 10 and 30 bytes on a link of 10/s: both at 5 until the first ends at 2 s, the second alone until 4 s
    end, ends = completion({"a": ["L"], "b": ["L"]}, {"L": 10}, {"a": 10, "b": 30})
    assert end == pytest.approx(4) and ends == pytest.approx({"a": 2, "b": 4})
    # two that collide on a link take twice as long as two on links of their own
    shared, _ = completion({"a": ["L", "A"], "b": ["L", "B"]}, {"L": 10, "A": 10, "B": 10}, {"a": 10, "b": 10})
    alone, _ = completion({"a": ["A"], "b": ["B"]}, {"A": 10, "B": 10}, {"a": 10, "b": 10})
    assert shared == pytest.approx(2 * alone) == pytest.approx(2)


def test_payload_over_wire_for_full_segments():
    assert payload_fraction(9000) == pytest.approx(8948 / 9014)
    assert payload_fraction(1500) == pytest.approx(1448 / 1514)


def test_a_link_without_a_rate_is_refused():
    with pytest.raises(TestbedError, match="no rate"):
        max_min({"a": ["L", "M"]}, {"L": 1})


def test_equal_transfers_end_as_the_fluid_model_with_departures_says():
    # a: alone on A; b and c share B; b also crosses C with d, which is held back by D
    paths = {"a": ["A"], "b": ["B", "C"], "c": ["B"], "d": ["C", "D"]}
    capacity = {"A": 10, "B": 6, "C": 8, "D": 1}
    end, ends = completion(paths, capacity, dict.fromkeys(paths, 12))
    assert ends == pytest.approx({"a": 1.2, "b": 4, "c": 4, "d": 12}) and end == pytest.approx(12)
    # unequal sizes go event by event: c ends first and leaves B to b, which then runs at 6
    _, ends = completion(paths, capacity, {"a": 12, "b": 12, "c": 3, "d": 12})
    assert ends["c"] == pytest.approx(1) and ends["b"] == pytest.approx(1 + 9 / 6)
