"""Kept calibrations: what machines of the kinds the testbed runs on forward faithfully, one record
per calibration (``run_scenario.py --calibrate --keep LABEL``), and the one table of them that
docs/fidelity.md shows (filled by ``run_scenario.py --pages``), so that the docs quote capacity
from measurements, never typed.
"""
import json
import re

from testbed.emulation import capacity
from testbed.errors import TestbedError
from testbed.experiments import record as records

KEPT = records.ROOT / "docs" / "calibrations"
PAGE = records.ROOT / "docs" / "fidelity.md"
BLOCK = re.compile(r"<!-- calibrations -->\n.*?<!-- /calibrations -->", re.DOTALL)
COLUMNS = ((9000, "none"), (9000, "pinned"), (1500, "none"), (1500, "pinned"))


def keep(label):
    """This machine's stored calibration, kept under docs/calibrations/ with `label`; its path."""
    found, why = capacity.load()
    if found is None:
        raise TestbedError(f"nothing to keep: {why}")
    if not label.strip():
        raise TestbedError("--keep needs a label naming the machine (e.g. 'a 2-core VM, Debian 12')")
    provenance = records.provenance()
    kept = {"label": label.strip(), "date": found.data["updated"], "commit": provenance["commit"],
            "dirty": provenance["dirty"], "machine": found.data["machine"],
            "datapath": found.data.get("datapath", "user"), "criterion": found.data["criterion"],
            "faithful_mbit": found.data["faithful_mbit"], "rows": found.data.get("rows", [])}
    stamp = kept["date"].replace("-", "").replace(":", "").replace(" ", "-")
    path = KEPT / f"{stamp}-{(kept['commit'] or 'nocommit')[:7]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1) + "\n")
    return path


def kept():
    """Every kept calibration, oldest first (refused in one line where one does not parse)."""
    out = []
    for path in sorted(KEPT.glob("*.json")):
        try:
            data = json.loads(path.read_text())
            data["figures"] = {(f["mtu"], f["placement"]): f["offered_mbit"] for f in data["faithful_mbit"]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise TestbedError(f"kept calibration {path.name} does not parse ({e}): keep it again with "
                               "run_scenario.py --calibrate --keep LABEL") from None
        out.append(data)
    return sorted(out, key=lambda d: d["date"])


def table():
    """The kept calibrations as one Markdown table, in a block --pages fills."""
    def cell(figures, key):
        if key not in figures:
            return "-"
        return "none faithful" if figures[key] == 0 else f"{figures[key]:,}"
    lines = ["<!-- calibrations -->",
             "| date | machine | kernel | datapath | cores | Open vSwitch | "
             + " | ".join(f"MTU {m}, {p}" for m, p in COLUMNS) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(COLUMNS)]
    for data in kept():
        m = data["machine"]
        lines.append(f"| {data['date'][:10]} | {data['label']} | {m.get('kernel')} | {data['datapath']} | "
                     f"{m.get('cores')} | {m.get('ovs')} | " + " | ".join(cell(data["figures"], k) for k in COLUMNS)
                     + " |")
    if len(lines) == 3:
        lines.append("| (none kept yet) |" + " |" * (5 + len(COLUMNS)))
    return "\n".join(lines + ["<!-- /calibrations -->"])


def with_table(text):
    return BLOCK.sub(lambda m: table(), text)
