"""Scenario pages drawn from kept records: the measured block of a page is generated from a record
(``record``), never typed, and whether it is current is judged by the run's fingerprint, not by
which files changed.

A page marks each block with the record it shows::

    <!-- measured: docs/records/NAME/STAMP-COMMIT.json -->
    ... generated ...
    <!-- /measured -->

``refresh`` rewrites every block from the newest kept record of the same command (its arguments
less where it wrote and its seed), with the table of that command's earlier runs below it, and a
stale banner at its top where the fingerprint of what the command does at HEAD differs from the
record's (naming the parts that differ). ``stale`` lists those blocks and the command that
refreshes each. The test suite checks that every block is what its record gives (the banner aside):
a page cannot show figures its run did not produce.
"""
import os
import re

from testbed.errors import TestbedError
from testbed.experiments import record as records
from testbed.experiments.claims import check_claims
from testbed.experiments.fingerprint import changed, of_run

ROOT = records.ROOT
PAGES = ROOT / "docs" / "scenarios"
BLOCK = re.compile(r"<!-- measured: (\S+) -->\n(.*?)<!-- /measured -->", re.DOTALL)
STALE = "> **Stale:**"
MAX_ROW_LINES = 40
OPTIONS = re.compile(r"## Options\n\n```\n.*?```\n", re.DOTALL)
WIDTH = "100"         # the width the pages' Options blocks are written at


def named(path):
    """A path as a person reads it: from the repository's top where it is in the repository."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def blocks(text):
    """[(match, record path)] of a page's measured blocks."""
    return [(m, m.group(1)) for m in BLOCK.finditer(text)]


def duration(seconds):
    minutes, s = divmod(round(seconds), 60)
    return f"{minutes} min {s} s" if minutes else f"{s} s"


def commit_of(record):
    said = (record["commit"] or "no commit")[:7]
    return said + (" with uncommitted changes to " + ", ".join(record.get("changed") or ["tracked files"])
                   if record["dirty"] else "")


def machine_of(record):
    m = record.get("machine") or {}
    versions = record.get("versions") or {}
    calibration = m.get("calibration")
    faithful = ", ".join(f"{mbit} Mbit/s at MTU {key.split()[0]} placement {key.split()[1]}"
                         for key, mbit in calibration.items()) if isinstance(calibration, dict) else calibration
    ovs = f"Open vSwitch {versions['open vswitch']} ({m.get('datapath')} datapath)" if "open vswitch" in versions \
        else "no Open vSwitch (model only)"
    return f"{m.get('cores')} cores, kernel {m.get('kernel')}, {ovs}; calibration: {faithful or 'none'}"


def output_lines(record):
    """The run's output as the page shows it: header, fabric checks, rows (the first
    MAX_ROW_LINES), summary."""
    out = record["output"]
    rows = out.get("rows", [])
    shown = rows[:MAX_ROW_LINES] + ([f"({len(rows) - MAX_ROW_LINES} more rows in the record)"]
                                    if len(rows) > MAX_ROW_LINES else [])
    lines = out.get("header", []) + out.get("checks", []) + shown + out.get("summary", [])
    return ["    " + line if line.strip() else "" for line in lines]


MAX_HEADLINE = 6      # figures in a row of the runs table; the record holds every one


def headline_text(record):
    """The run's headline as a runs-table cell: a compared figure as its gain and interval
    ("job0 slowdown under ecmp: gain +0.123 [-0.008, +0.254]", a ratio less 1 or a difference, as the
    run's summary says), the sides it compared left to the record; any
    other figure as it is; at most MAX_HEADLINE of them."""
    figures = record["headline"]
    gains = {k[:-len(": gain")] for k in figures if k.endswith(": gain")}
    shown = []
    for k, v in figures.items():
        compared = next((g for g in gains if k.startswith(g + ": ")), None)
        if compared is None:
            shown.append(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}")
        elif k == compared + ": gain" and isinstance(v, (int, float)):
            lo, hi = figures.get(compared + ": gain low"), figures.get(compared + ": gain high")
            ranged = f" [{lo:+.3g}, {hi:+.3g}]" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""
            shown.append(f"{compared}: gain {v:+.3g}{ranged}")
    more = len(shown) - MAX_HEADLINE
    return "; ".join(shown[:MAX_HEADLINE]) + (f"; {more} more in the record" if more > 0 else "") if shown else "-"


def body(record, runs, claims=()):
    """A block's text from its record; runs: every kept record of the same command, oldest first;
    claims: the scenario's, checked on the record's headline as the code at HEAD reads them."""
    status = "" if record["status"] == "complete" else f" It ended {record['status']}."
    lines = [f"Measured with `sudo python3 {record['command']}` on {record['started'][:16].replace('T', ' ')}, "
             f"commit {commit_of(record)}, in {duration(record['seconds'])} ({machine_of(record)}); plan "
             f"{record['fingerprint']['hash'][:7]}; record `{record['path']}`.{status}", "", *output_lines(record), ""]
    checked = check_claims(claims, record["headline"])
    if checked:
        lines += ["Claims checked on this run's figures:", ""]
        lines += [f"- {c['claim']}: **{c['verdict']}** ({c['said']})" for c in checked]
        lines.append("")
    lines += ["Runs of this command (newest first):", "", "| date | commit | plan | time | headline figures |",
              "|---|---|---|---|---|"]
    for run in reversed(runs):
        mark = " (shown)" if run["path"] == record["path"] else ""
        lines.append(f"| {run['started'][:16].replace('T', ' ')}{mark} | {commit_of(run)} | "
                     f"{run['fingerprint']['hash'][:7]} | {duration(run['seconds'])} | {headline_text(run)} |")
    return "\n".join(lines) + "\n"


def banner(parts, why=""):
    said = why or f"what this command does at HEAD differs from this run in {', '.join(parts)}"
    return (f"{STALE} {said}; measure it again (`run_scenario.py --stale` gives the command) and "
            "refresh the page (`run_scenario.py --pages`).\n\n")


def without_banner(text):
    return text.split("\n\n", 1)[1] if text.startswith(STALE) else text


def staleness(record, scenarios, parser):
    """([parts that differ], why): what the record's command does at HEAD against the record."""
    try:
        args = parser.parse_args(record["argv"])
        now = of_run(scenarios[record["scenario"]], args)
    except SystemExit:
        return ["options"], f"its command no longer parses at HEAD ({record['command']})"
    except TestbedError as e:
        return ["options"], f"its command is refused at HEAD ({e})"
    return changed(record["fingerprint"], now), ""


def by_command(scenarios):
    """{(scenario, command key): [records, oldest first]} of every kept record."""
    found = {}
    for name in scenarios:
        for rec in records.history(name, scenarios):
            found.setdefault((name, tuple(rec["key"])), []).append(rec)
    return found


def page_of(name):
    return PAGES / f"{name}.md"


def options(parser, name):
    """A scenario's Options block: `run_scenario.py NAME --help` from its options on, at the pages' width."""
    sub = next(a for a in parser._actions if a.dest == "scenario").choices[name]
    before, os.environ["COLUMNS"] = os.environ.get("COLUMNS"), WIDTH
    try:
        help_ = sub.format_help()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "## Options\n\n```\n" + help_[help_.index("options:"):].rstrip("\n") + "\n```\n"


def refresh(scenarios, parser, names=None):
    """Rewrite the pages of `names` (default: every scenario): each measured block from the newest
    record of its command, and the Options block from the scenario's --help; {page: [stale parts
    per block]}."""
    kept = by_command(scenarios)
    report = {}
    for name in names or scenarios:
        page = page_of(name)
        text = OPTIONS.sub(options(parser, name).replace("\\", "\\\\"), page.read_text(), count=1)
        out, at, notes = [], 0, []
        for match, path in blocks(text):
            shown = records.load(ROOT / path, scenarios)
            if shown["scenario"] != name:
                raise TestbedError(f"{named(page)} shows record {path} of {shown['scenario']}: "
                                   f"show one of {name}")
            runs = kept.get((name, tuple(shown["key"])), [shown])
            newest = runs[-1]
            parts, why = staleness(newest, scenarios, parser)
            notes.append(parts)
            out += [text[at:match.start()], f"<!-- measured: {newest['path']} -->\n",
                    banner(parts, why) if parts else "",
                    body(newest, runs, getattr(scenarios[name], "CLAIMS", ())), "<!-- /measured -->"]
            at = match.end()
        out.append(text[at:])
        page.write_text("".join(out))
        report[page] = notes
    return report


def stale(scenarios, parser):
    """[(page, record path, parts that differ, why, the command to run)] for every block not current."""
    found = []
    for name in scenarios:
        page = page_of(name)
        for _, path in blocks(page.read_text()):
            rec = records.load(ROOT / path, scenarios)
            parts, why = staleness(rec, scenarios, parser)
            if parts:
                found.append((named(page), path, parts, why,
                              f"sudo python3 {records.rerun(rec['key'], None)} --record"))
    return found


def mismatches(scenarios):
    """[(page, record path, what differs)] where a page's block is not what its record gives."""
    kept = by_command(scenarios)
    found = []
    for name in scenarios:
        page = page_of(name)
        for match, path in blocks(page.read_text()):
            rec = records.load(ROOT / path, scenarios)
            runs = [r for r in kept.get((name, tuple(rec["key"])), [rec]) if r["started"] <= rec["started"]]
            if rec["scenario"] != name:
                found.append((named(page), path, f"a record of {rec['scenario']}"))
            elif without_banner(match.group(2)) != body(rec, runs, getattr(scenarios[name], "CLAIMS", ())):
                found.append((named(page), path, "the block is not what the record gives"))
    return found
