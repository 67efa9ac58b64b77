"""Scenario pages drawn from kept records: the measured block of a page is generated from a record
(``record``), never typed, and whether it is current is judged by the run's fingerprint, not by
which files changed.

A page marks each block with the record it shows::

    <!-- measured: docs/records/NAME/STAMP-COMMIT.json -->
    ... generated ...
    <!-- /measured -->

``refresh`` rewrites every block from the newest kept record of the same command (its arguments
less where it wrote and its seed) on the same datapath (so that a page can show a VM's kernel-datapath
run beside this machine's), with the table of that command's earlier runs below it, and a
stale banner at its top where the fingerprint of what the command does at HEAD differs from the
record's (naming the parts that differ). ``stale`` lists those blocks and the command that
refreshes each. The test suite checks that every block is what its record gives (the banner aside):
a page cannot show figures its run did not produce.

A block shows the verdicts its run printed (kept in the record), never ones computed after the run:
where the claims at HEAD would judge the record's figures otherwise, the block says so beside them.
A record whose code half (``code_half``) differs from the tree's was measured with older code: its
block says which files changed, and is not stale. A page whose blocks were measured on machines of
different classes (datapath and calibration) says so at its top.

A scenario's page (``docs/scenarios/NAME.md``) leads with its answer and its default run; what
else the scenario's options show (a variant, another fabric, the VM's datapath) goes on pages of
its own in ``docs/scenarios/NAME/``, whose blocks are drawn and checked the same way.
"""
import os
import re
import shlex

from testbed.errors import TestbedError
from testbed.experiments import calibrations, code_half, held_out
from testbed.experiments import record as records
from testbed.experiments.claims import check_claims
from testbed.experiments.fingerprint import changed, of_run

ROOT = records.ROOT
PAGES = ROOT / "docs" / "scenarios"
BLOCK = re.compile(r"<!-- measured: (\S+) -->\n(.*?)<!-- /measured -->", re.DOTALL)
STALE = "> **Stale:**"
OLDER = "> **Measured with older code:**"
CLASSES = re.compile(r"<!-- machine classes -->\n.*?<!-- /machine classes -->\n\n", re.DOTALL)
VERDICTS = "Claims as this run judged them:"
VERDICT_LINE = re.compile(r"^- (.*): \*\*(.*?)\*\* \((.*)\)$")
# A figure a page or guide quotes, filled from the newest record of a command (the scenario's
# default, or the arguments given before " | "):
#   <!-- fig: SCENARIO FIGURE -->0.985<!-- /fig -->
#   <!-- fig: SCENARIO --option value | FIGURE -->0.985<!-- /fig -->
#   <!-- fig: SCENARIO@kernel | FIGURE -->0.79<!-- /fig -->     (a run on the kernel datapath)
FIGURE = re.compile(r"<!-- fig: (.+?) -->(.*?)<!-- /fig -->", re.DOTALL)
# The datapath the pages' figures are measured on unless a reference names another: the project's
# own machine, whose kernel loads no modules, runs Open vSwitch's userspace datapath (a scenario that
# emulates nothing records none).
FIGURE_DATAPATH = "user"
GUIDES = ROOT / "docs" / "lab"
MAX_ROW_LINES = 40
FOLD_ROW_LINES = 12     # rows above this many are folded under a summary line, the summary shown
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


def machine_class(record):
    """What a block's figures depend on in the machine: its datapath and what its calibration found
    faithful (per-step latencies and the loads a run may offer scale with them)."""
    m = record.get("machine") or {}
    calibration = m.get("calibration")
    faithful = ", ".join(f"{mbit} Mbit/s at MTU {key.split()[0]}" for key, mbit in sorted(calibration.items())
                         if key.endswith(" none")) if isinstance(calibration, dict) else ""
    return f"{m.get('datapath') or 'no'} datapath, faithful to {faithful or 'an uncalibrated rate'}"


def output_lines(record):
    """The run's output as the page shows it: header, rows (the first MAX_ROW_LINES) and summary,
    with its fabric checks (each with its emulator verdict) folded under a summary line, and its
    rows too where they are more than FOLD_ROW_LINES: a reader sees the summary first."""
    out = record["output"]
    rows = out.get("rows", [])
    shown = rows[:MAX_ROW_LINES] + ([f"({len(rows) - MAX_ROW_LINES} more rows in the record)"]
                                    if len(rows) > MAX_ROW_LINES else [])
    checks = out.get("checks", [])
    folded = folded_lines("The fabric checks before the run, each saying whether the emulator was the bottleneck "
                          f"({len(checks)} lines)", checks) if checks else []
    if len(rows) > FOLD_ROW_LINES:
        folded += folded_lines(f"The run's rows as it printed them ({len(rows)} lines"
                               + (f", the first {MAX_ROW_LINES} here" if len(rows) > MAX_ROW_LINES else "") + ")",
                               shown)
        shown = []
    header = code(out.get("header", []))
    return [*header, *([""] if header and folded else []), *folded, *code(shown + out.get("summary", []))]


def folded_lines(summary, lines):
    return [f"<details><summary>{summary}</summary>", "", *code(lines), "", "</details>", ""]


def code(lines):
    return ["    " + line if line.strip() else "" for line in lines]


MAX_HEADLINE = 6      # figures in a row of the runs table; the record holds every one


def headline_text(record):
    """The run's headline as a runs-table cell: a compared figure as its gain and interval
    ("job0 slowdown under ecmp: gain +0.123 [-0.008, +0.254]", a ratio less 1 or a difference, as the
    run's summary says), the sides it compared left to the record; a share with its interval
    ("located 0.8 [0.49, 0.94]"); any other figure as it is; at most MAX_HEADLINE of them."""
    figures = record["headline"]
    gains = {k[:-len(": gain")] for k in figures if k.endswith(": gain")}
    bounds = {k[:-len(" low")] for k in figures if k.endswith(" low") and k[:-len(" low")] in figures}
    shown = []
    for k, v in figures.items():
        compared = next((g for g in gains if k.startswith(g + ": ")), None)
        if k.endswith((" low", " high")) and k.rsplit(" ", 1)[0] in bounds:
            continue
        lo, hi = figures.get(k + " low"), figures.get(k + " high")
        ranged = f" [{lo:+.3g}, {hi:+.3g}]" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""
        if compared is None:
            shown.append(f"{k} {v:g}{ranged.replace('+', '')}" if isinstance(v, (int, float)) else f"{k} {v}")
        elif k == compared + ": gain" and isinstance(v, (int, float)):
            shown.append(f"{compared}: gain {v:+.3g}{ranged}")
    more = len(shown) - MAX_HEADLINE
    return "; ".join(shown[:MAX_HEADLINE]) + (f"; {more} more in the record" if more > 0 else "") if shown else "-"


def verdict_lines(checked):
    return [f"- {c['claim']}: **{c['verdict']}** ({c['said']})" for c in checked]


def body(record, runs, claims=(), held=None):
    """A block's text from its record; runs: every kept record of the same command, oldest first;
    claims: the scenario's at HEAD, which judge the record's figures beside its own verdicts only
    where they judge otherwise; held: whether its seed was held out from the scenario's method."""
    status = "" if record["status"] == "complete" else f" It ended {record['status']}."
    lines = [f"Measured with `sudo python3 {record['command']}` on {record['started'][:16].replace('T', ' ')}, "
             f"commit {commit_of(record)}, in {duration(record['seconds'])} ({machine_of(record)}); machine class: "
             f"{machine_class(record)}; plan {record['fingerprint']['hash'][:7]}; record `{record['path']}`.{status}",
             *(["", f"Seed {record.get('seed')}, from the records kept before this run: {held}."] if held else []),
             "", *output_lines(record), ""]
    kept = record.get("claims") or []
    if kept:
        lines += [VERDICTS, "", *verdict_lines(kept), ""]
    said = {(c["claim"], c["verdict"], c["said"]) for c in kept}
    otherwise = [c for c in check_claims(claims, record["headline"])
                 if (c["claim"], c["verdict"], c["said"]) not in said]
    if otherwise:
        lines += ["The claims at HEAD would judge this run's figures otherwise (not a verdict of this run):", "",
                  *verdict_lines(otherwise), ""]
    lines += ["Runs of this command (newest first):", "", "| date | commit | plan | time | headline figures |",
              "|---|---|---|---|---|"]
    for run in reversed(runs):
        mark = " (shown)" if run["path"] == record["path"] else ""
        lines.append(f"| {run['started'][:16].replace('T', ' ')}{mark} | {commit_of(run)} | "
                     f"{run['fingerprint']['hash'][:7]} | {duration(run['seconds'])} | {headline_text(run)} |")
    return "\n".join(lines) + "\n"


def block_body(record, runs, scenarios, kept):
    """``body`` with the scenario's claims at HEAD and, where its method is tuned on runs
    (``HELD_OUT``), whether the record's seed was held out from it; kept: ``by_command``."""
    module = scenarios[record["scenario"]]
    everyone = sorted((r for (name, _, _), same in kept.items() if name == module.NAME for r in same),
                      key=lambda r: r["started"])
    held = held_out.of_record(record, module, everyone) if getattr(module, "HELD_OUT", False) else None
    return body(record, runs, getattr(module, "CLAIMS", ()), held)


def shown_verdicts(block):
    """[(claim, verdict, said)] a block shows under its run's verdicts."""
    if VERDICTS not in block:
        return []
    found = []
    for line in block.split(VERDICTS, 1)[1].lstrip("\n").splitlines():
        m = VERDICT_LINE.match(line)
        if not m:
            break
        found.append(m.groups())
    return found


def banner(parts, why=""):
    said = why or f"what this command does at HEAD differs from this run in {', '.join(parts)}"
    return (f"{STALE} {said}; measure it again (`run_scenario.py --stale` gives the command) and "
            "refresh the page (`run_scenario.py --pages`).\n\n")


def older_banner(files):
    return (f"{OLDER} {', '.join(f'`{f}`' for f in files)} changed since this run; its plan is what the command "
            "does now, and its figures are as that code measured them (`run_scenario.py --stale` lists such "
            "blocks).\n\n")


def without_banner(text):
    while text.startswith((STALE, OLDER)):
        text = text.split("\n\n", 1)[1]
    return text


def staleness(record, scenarios, parser):
    """([plan parts that differ], why, [code files that differ]): what the record's command does at
    HEAD against the record, and the files of its code half changed since."""
    module = scenarios[record["scenario"]]
    kept = record["fingerprint"].get("code", {})
    older = code_half.changed(kept, code_half.of(module))
    try:
        args = parser.parse_args(record["argv"])
        older = code_half.changed(kept, code_half.of(module, args))
        if record.get("fitted_rate") is not None:       # a default rate lowered to the machine's capacity
            args.rate = record["fitted_rate"]
        now = of_run(module, args, seed=record.get("seed"))
    except SystemExit:
        return ["options"], f"its command no longer parses at HEAD ({record['command']})", older
    except TestbedError as e:
        return ["options"], f"its command is refused at HEAD ({e})", older
    return changed(record["fingerprint"], now), "", older


def datapath_of(record):
    return (record.get("machine") or {}).get("datapath")


def by_command(scenarios):
    """{(scenario, command key, datapath): [records, oldest first]} of every kept record."""
    found = {}
    for name in scenarios:
        for rec in records.history(name, scenarios):
            found.setdefault((name, tuple(rec["key"]), datapath_of(rec)), []).append(rec)
    return found


def page_of(name):
    return PAGES / f"{name}.md"


def pages_of(name):
    """A scenario's page, then the pages in its folder (``docs/scenarios/NAME/``)."""
    return [page_of(name), *sorted((PAGES / name).glob("*.md"))]


def scenario_pages(names):
    """(scenario, page) for every page of each of `names`."""
    return [(name, page) for name in names for page in pages_of(name)]


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


def figure_text(record, figure):
    """A record's headline figure as a guide quotes it: 3 significant figures, with its interval
    where the record keeps one; the record's date after it."""
    figures = record["headline"]
    if figure not in figures:
        raise TestbedError(f"the newest record of {record['scenario']} ({record['path']}) has no figure {figure!r}: "
                           "quote one its headline has")
    value, lo, hi = figures[figure], figures.get(figure + " low"), figures.get(figure + " high")
    def number(v):
        return f"{v:,.0f}" if abs(v) >= 1000 or float(v).is_integer() else f"{v:.3g}"
    said = number(value) if isinstance(value, (int, float)) else str(value)
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        said += f" [{number(lo)}, {number(hi)}]"
    return said


def with_figures(text, scenarios, where, kept):
    """text with every figure reference filled from the newest record of its command (kept:
    ``by_command``'s records, loaded once by the caller)."""
    def filled(m):
        said = m.group(1)
        command, figure = said.split(" | ", 1) if " | " in said else said.split(" ", 1)
        key = tuple(shlex.split(command))
        name, _, datapath = key[0].partition("@")
        key = (name,) + key[1:]
        if name not in scenarios:
            raise TestbedError(f"{where} quotes a figure of {name!r}, not a scenario: run_scenario.py --list")
        runs = kept.get((name, key, datapath or FIGURE_DATAPATH)) or (None if datapath else kept.get((name, key, None)))
        if not runs:
            raise TestbedError(f"{where} quotes {figure!r} of `{' '.join(key)}`, which has no kept run")
        return f"<!-- fig: {said} -->{figure_text(runs[-1], figure)}<!-- /fig -->"
    return FIGURE.sub(filled, text)


def guides():
    return sorted(GUIDES.glob("*.md"))


def classes_note(classes):
    """The note at a page's top where its blocks come from machines of different classes."""
    distinct = list(dict.fromkeys(classes))
    if len(distinct) < 2:
        return ""
    return ("<!-- machine classes -->\n> **Runs from different machines:** this page's blocks were measured on "
            f"machines of {len(distinct)} classes ({'; '.join(distinct)}): per-step times and the loads a run may "
            "offer differ between them, so compare figures within a block.\n<!-- /machine classes -->\n\n")


def with_classes_note(text, classes):
    text = CLASSES.sub("", text)
    title, _, rest = text.partition("\n\n")
    return f"{title}\n\n{classes_note(classes)}{rest}"


def refresh(scenarios, parser, names=None):
    """Rewrite the pages of `names` (default: every scenario): each measured block from the newest
    record of its command, and the Options block from the scenario's --help; {page: [(stale parts,
    older code files) per block]}. A block whose verdicts differ from its record's (typed over) is
    refused."""
    kept = by_command(scenarios)
    report = {}
    for name, page in scenario_pages(names or scenarios):
        text = OPTIONS.sub(options(parser, name).replace("\\", "\\\\"), page.read_text(), count=1)
        out, at, notes, classes = [], 0, [], []
        for match, path in blocks(text):
            shown = records.load(ROOT / path, scenarios)
            if shown["scenario"] != name:
                raise TestbedError(f"{named(page)} shows record {path} of {shown['scenario']}: "
                                   f"show one of {name}")
            typed = shown_verdicts(match.group(2))
            if typed and typed != [(c["claim"], c["verdict"], c["said"]) for c in shown.get("claims") or []]:
                raise TestbedError(f"{named(page)}: the block of {path} shows verdicts its record does not hold: "
                                   "a block's verdicts are the run's; undo the edit (git checkout the page)")
            runs = kept.get((name, tuple(shown["key"]), datapath_of(shown)), [shown])
            newest = runs[-1]
            parts, why, older = staleness(newest, scenarios, parser)
            notes.append((parts, older))
            classes.append(machine_class(newest))
            out += [text[at:match.start()], f"<!-- measured: {newest['path']} -->\n",
                    banner(parts, why) if parts else "", older_banner(older) if older else "",
                    block_body(newest, runs, scenarios, kept), "<!-- /measured -->"]
            at = match.end()
        out.append(text[at:])
        page.write_text(with_figures(with_classes_note("".join(out), classes), scenarios, named(page), kept))
        report[page] = notes
    for guide in guides() if names is None else ():
        guide.write_text(with_figures(guide.read_text(), scenarios, named(guide), kept))
    if names is None and calibrations.PAGE.exists():
        calibrations.PAGE.write_text(calibrations.with_table(calibrations.PAGE.read_text()))
    return report


def stale(scenarios, parser):
    """[(page, record path, plan parts that differ, why, code files that differ, the command to run)]
    for every block that is stale or was measured with older code. The command is the run's as
    given: a seed it was given stays (a page may show a draw chosen for what it shows), a seed it
    drew is drawn afresh."""
    found = []
    for _, page in scenario_pages(scenarios):
        for _, path in blocks(page.read_text()):
            rec = records.load(ROOT / path, scenarios)
            parts, why, older = staleness(rec, scenarios, parser)
            if parts or older:
                found.append((named(page), path, parts, why, older,
                              "sudo python3 " + records.rerun(rec["argv"], None, "--record")))
    return found


def mismatches(scenarios):
    """[(page, record path, what differs)] where a page's block is not what its record gives, or its
    note on machine classes is not what its blocks' records give."""
    kept = by_command(scenarios)
    found = []
    for name, page in scenario_pages(scenarios):
        text = page.read_text()
        classes = []
        for match, path in blocks(text):
            rec = records.load(ROOT / path, scenarios)
            classes.append(machine_class(rec))
            same = kept.get((name, tuple(rec["key"]), datapath_of(rec)), [rec])
            runs = [r for r in same if r["started"] <= rec["started"]]
            if rec["scenario"] != name:
                found.append((named(page), path, f"a record of {rec['scenario']}"))
            elif without_banner(match.group(2)) != block_body(rec, runs, scenarios, kept):
                found.append((named(page), path, "the block is not what the record gives"))
        if with_classes_note(text, classes) != text:
            found.append((named(page), "-", "its note on machine classes is not what its blocks' records give"))
        if with_figures(text, scenarios, named(page), kept) != text:
            found.append((named(page), "-", "a figure its prose quotes is not its record's (run_scenario.py --pages)"))
    for guide in guides():
        text = guide.read_text()
        if with_figures(text, scenarios, named(guide), kept) != text:
            found.append((named(guide), "-", "a figure it quotes is not its record's (run_scenario.py --pages)"))
    if calibrations.PAGE.exists():
        text = calibrations.PAGE.read_text()
        if calibrations.with_table(text) != text:
            found.append((named(calibrations.PAGE), "-", "its table of calibrations is not what docs/calibrations/ "
                          "holds (run_scenario.py --pages)"))
    return found
