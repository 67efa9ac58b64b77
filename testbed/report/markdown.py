"""report.md: one run told on its own, for a person (a student hands it in): what ran (fabrics, rates,
options, datapath, versions), what it printed (the tables and the verdicts), the CSV tables and the
figures embedded. Written by run_scenario.py at the end of every run, also one that failed or was
interrupted, from what the run folder holds by then.
"""
import csv
import io
import platform
import sys
import time
from importlib import metadata

from testbed.emulation.ovs import datapath_name
from testbed.machines import inventory as machine_files
from testbed.topology.partition import partition

MAX_ROWS = 30        # a longer CSV table is shown in part; the file has it all
PACKAGES = ("os-ken", "numpy", "scapy", "pyroute2", "mininet")


class Transcript(io.TextIOBase):
    """with Transcript() as t: everything printed goes to the terminal and into t.text()."""

    def __enter__(self):
        self._out, self._buffer = sys.stdout, io.StringIO()
        sys.stdout = self
        return self

    def __exit__(self, *exc):
        sys.stdout = self._out

    def write(self, text):
        self._buffer.write(text)
        return self._out.write(text)

    def flush(self):
        self._out.flush()

    def text(self):
        return self._buffer.getvalue()


def versions(ovs_version=None):
    found = {"kernel": platform.release(), "python": platform.python_version()}
    if ovs_version:
        found["open vswitch"] = ovs_version
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def table(path, name, limit=MAX_ROWS):
    """A CSV file as a Markdown table (at most limit rows, then how many more the file has)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return "(empty)"
    header, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body[:limit]]
    if len(body) > limit:
        lines.append(f"\n({len(body) - limit} more rows in `{name}`)")
    return "\n".join(lines)


def render(scenario, command, status, fabrics, options, datapath, versions, transcript, root, files):
    """The report's text. command: the one that reruns the run exactly; fabrics: descriptions;
    options: {name: value}, every option the run had (those left out are None); files: paths under root."""
    out = [f"# {scenario}: {status}", "", f"{time.strftime('%Y-%m-%d %H:%M:%S')}, rerun it with "
           f"`sudo python3 {command}`", "", "## What ran", ""]
    out += [f"- fabric: {f}" for f in fabrics]
    out += [f"- Open vSwitch: {datapath_name(datapath) if datapath else 'not used (flow model only)'}",
            "- options, defaults included: " + ", ".join(f"`--{k.replace('_', '-')} {v}`" for k, v in options.items()
                                                         if v is not None and v is not False),
            "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()), ""]
    verdicts = [line.strip() for line in transcript.splitlines() if not line.lstrip().startswith("#")
                and any(word in line for word in ("emulator", "PASS", "FAIL"))]
    if verdicts:
        out += ["## Verdicts", "", *[f"- {line}" for line in verdicts], ""]
    out += ["## Output", "", "```", transcript.rstrip(), "```", ""]
    names = {p: str(p.relative_to(root)) for p in files}
    for path in files:
        if path.suffix == ".csv":
            out += [f"## {names[path]}", "", table(path, names[path]), ""]
    figures = [p for p in files if p.suffix == ".png"]
    if figures:
        out += ["## Figures", ""] + [f"![{names[p]}]({names[p]})\n" for p in figures]
    others = [p for p in files if p.suffix not in (".csv", ".png")]
    if others:
        out += ["## Other files", "", *[f"- `{names[p]}`" for p in others], ""]
    return "\n".join(out)


def split(topo, count, mtu, ms=None):
    """How a fabric run with --slots or --machines was split (each run folder's slots.json has it in
    full, and machines.json the machines and what their preflight measured)."""
    if ms is not None:
        part = partition(topo, ms.slot_count)
        machines = ", ".join(f"{m.name} ({m.underlay}, {m.slots} slot{'s' * (m.slots > 1)})" for m in ms.machines)
        return (f"; split into {part.describe()} across machines {machines}, the head at {ms.head}; VXLAN over "
                f"their underlay, frames of {part.underlay_mtu(mtu)} bytes (slots.json, machines.json)")
    if count <= 1:
        return ""
    part = partition(topo, count)
    return (f"; split into {part.describe()}, VXLAN over a veth underlay of MTU {part.underlay_mtu(mtu)} "
            "on this machine (slots.json)")


def write(folder, scenario, command, status, plan, options, datapath, ovs_version, transcript):
    """Write report.md into the run folder, from its files as they are now."""
    files = sorted(p for p in folder.path.rglob("*") if p.is_file() and p.name != "report.md")
    ms = machine_files.load(options["machines"]) if options.get("machines") else None
    fabrics = [f"{t.describe()}, MTU {plan.mtu}" + split(t, options.get("slots", 1), plan.mtu, ms)
               for t in plan.fabrics]
    fabrics += [f"{t.describe()} (modelled, not emulated)" for t in getattr(plan, "modelled", ())]
    text = render(scenario, command, status, fabrics, options, datapath, versions(ovs_version), transcript,
                  folder.path, files)
    path = folder.path / "report.md"
    path.write_text(text + "\n")
    return path
