"""This machine's measured forwarding capacity: the most offered load one userspace ovs-vswitchd
carried faithfully, per MTU and CPU placement, with the machine it was measured on.

``run_scenario.py --calibrate`` measures it (``fidelity.calibrate``) and stores it in one file per
machine; the rate check, ``largest_faithful_ranks`` and the verdicts read it. A calibration made on
another kernel, Open vSwitch or number of cores is stale: it is not used, and the conservative
figures in ``fidelity.capacity`` apply, which every refusal says.
"""
import json
import os
import platform
import time
from pathlib import Path

from testbed.emulation import ovs

DEFAULT_PATH = "/var/lib/ai-testbed/calibration.json"
# Faithful: the flows together got this much of what they offered, and the slowest this much of its
# rate, both over what TCP can get from a link at that MTU (goodput_ceiling).
FAITHFUL_TOTAL, FAITHFUL_SLOWEST = 0.97, 0.9


def path():
    """Where this machine's calibration lives (AI_TESTBED_CALIBRATION moves it, e.g. for tests)."""
    return Path(os.environ.get("AI_TESTBED_CALIBRATION", DEFAULT_PATH))


def machine():
    """What a calibration holds for: a different kernel, OVS or core count forwards differently."""
    return {"kernel": platform.release(), "ovs": ovs.version(), "cores": len(os.sched_getaffinity(0))}


def goodput_ceiling(mtu):
    """TCP's payload over what a shaped link counts per frame: the frame with its Ethernet header,
    less IP and TCP headers with timestamps (0.956 at MTU 1500, 0.993 at 9000)."""
    return (mtu - 52) / (mtu + 14)


def faithful(row):
    ceiling = goodput_ceiling(row["mtu"])
    return (row["achieved_over_offered"] >= FAITHFUL_TOTAL * ceiling
            and row["min_flow_ratio"] >= FAITHFUL_SLOWEST * ceiling)


def store(results, rows):
    """results: {(mtu, placement): faithful offered Mbit/s}; rows: every measurement behind them.
    Merged into this machine's stored calibration: a figure measured again replaces the old one."""
    found, _ = load()
    figures = dict(found.figures) if found else {}
    figures.update(results)
    date = time.strftime("%Y-%m-%d %H:%M:%S")
    data = {"date": found.data["date"] if found else date, "updated": date, "machine": machine(),
            "criterion": {"achieved_over_offered": FAITHFUL_TOTAL, "min_flow_ratio": FAITHFUL_SLOWEST,
                          "of": "TCP's goodput ceiling at the MTU"},
            "datapath": "user",
            "faithful_mbit": [{"mtu": mtu, "placement": where, "offered_mbit": mbit}
                              for (mtu, where), mbit in sorted(figures.items())],
            "rows": (found.data.get("rows", []) if found else []) + rows}
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(target)
    return target


class Calibration:
    def __init__(self, data):
        self.data = data
        self.date = data["date"][:10]
        self.figures = {(f["mtu"], f["placement"]): f["offered_mbit"] for f in data["faithful_mbit"]}

    def faithful_mbit(self, mtu, placement):
        """The faithful offered load at the largest calibrated MTU not above mtu, or None."""
        below = [m for m, where in self.figures if where == placement and m <= mtu]
        return self.figures[max(below), placement] if below else None

    def best_placement(self, mtu=9000):
        """The placement that carried more at mtu ('none' on a tie: it changes nothing)."""
        pinned, none = self.faithful_mbit(mtu, "pinned"), self.faithful_mbit(mtu, "none")
        return "pinned" if pinned is not None and (none is None or pinned > none) else "none"


_cache = {}


def load():
    """(Calibration or None, why none): None when missing, unreadable or made on another machine."""
    target = path()
    try:
        stamp = target.stat().st_mtime_ns
    except OSError:
        return None, "this machine is not calibrated (run_scenario.py --calibrate measures it)"
    if _cache.get("key") != (target, stamp):
        try:
            data = json.loads(target.read_text())
            found = Calibration(data)
            now = machine()
            changed = [f"{k} {data['machine'].get(k)} -> {now[k]}" for k in now if data["machine"].get(k) != now[k]]
            result = ((None, f"the calibration of {found.date} is stale ({', '.join(changed)}): "
                       "run_scenario.py --calibrate again") if changed else (found, ""))
        except (OSError, ValueError, KeyError, TypeError) as e:
            result = None, f"the calibration in {target} is unreadable ({e}): run_scenario.py --calibrate again"
        _cache.update(key=(target, stamp), result=result)
    return _cache["result"]
