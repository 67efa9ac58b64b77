"""Mutants: each claim's mechanism broken on purpose, to show that the claim's smoke run fails when
it breaks (a claim whose smoke passes with its mechanism gone proves nothing).

A mutant is one exact text replacement in one source file (found exactly once) and the scenarios
whose claims rest on it. For each, this script copies the working tree, applies the replacement in
the copy, runs each scenario's smoke form there (``SMOKE``, with its fixed seed), and reports the
claims the run refutes: the mutant is **killed** when at least one claim is refuted (or the run
fails), and **survives** otherwise. The tree itself is never changed.

    sudo .venv/bin/python tests/mutants.py              # every mutant (about 40 min here)
    sudo .venv/bin/python tests/mutants.py hdrm-as-hd   # the ones named
    sudo .venv/bin/python tests/mutants.py planes-as-single:hpn7_rails   # one of a mutant's scenarios

Its output, as a Markdown table, is on docs/tests.md. ``tests/test_mutants.py`` checks without
root that every mutant still applies to the tree and that every scenario is named by one.
"""
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEFT_BEHIND = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info")


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str                 # the mechanism, in words
    path: str
    old: str
    new: str
    scenarios: tuple


MUTANTS = (
    Mutant("hdrm-as-hd", "HDRM's rank mapping left out: HDRM's ranks placed in plain rank order",
           "testbed/collectives/placements.py",
           "        hosts.append(topo.host_at(switch, j).name)\n    return hosts",
           "        hosts.append(topo.host_at(switch, j).name)\n    return rank_order(topo)",
           ("bigraph_allreduce", "collectives", "ecmp_collisions", "server_nics", "training_scaling")),
    Mutant("links-at-half-rate", "every link shaped to half the rate it is said to have",
           "testbed/emulation/shaping.py",
           "_htb_class(ipr, index, HTB_LINK, HTB_ROOT, rate_mbit, rate_mbit, frame)",
           "_htb_class(ipr, index, HTB_LINK, HTB_ROOT, rate_mbit / 2, rate_mbit / 2, frame)",
           ("fabric_check",)),
    Mutant("slow-link-rule-off", "the detector's queue rule (a slowed link) never fires",
           "testbed/fidelity/diagnosis.py",
           "        if now - then >= QUEUE_GROWTH and now >= QUEUE_RATIO * max(then, 0.5):",
           "        if False:",
           ("fault_localisation",)),
    Mutant("traces-read-empty", "a kept trace read back with none of its rows: the detectors see nothing of what "
           "the monitor saw", "testbed/faultbench/trace.py",
           "        tables[name] = table.to_pylist()",
           "        tables[name] = table.slice(0, 0).to_pylist()",
           ("faultbench",)),
    Mutant("port-event-rule-off", "the detector ignores the controller's port events (cut links, ports, switches)",
           "testbed/fidelity/diagnosis.py",
           "    downs = [(t, switch, port) for t, switch, port, up in after.events if not up]",
           "    downs = []",
           ("fault_localisation",)),
    Mutant("slow-rank-rule-off", "the detector's slow-rank rule never fires",
           "testbed/fidelity/diagnosis.py",
           "    if len(now) < 2 or not slower_job(before.timing, after.timing):\n        return None\n    ranks",
           "    if True:\n        return None\n    ranks",
           ("fault_localisation",)),
    Mutant("hang-rule-off", "the detector's hung-rank rule never fires",
           "testbed/fidelity/diagnosis.py",
           "    if worst[hung] >= HANG_S and worst[hung] >= HANG_RATIO * before_worst:",
           "    if False:",
           ("fault_localisation",)),
    Mutant("cut-never-cut", "a link cut by a failure stays up",
           "testbed/emulation/events.py",
           "lambda up=up: emu.set_link(link, up)",
           "lambda up=up: emu.set_link(link, True)",
           ("dual_tor_failover",)),
    Mutant("marker-never-marks", "the ports' eBPF ECN marker never sets CE",
           "testbed/programs/ecn_marker.bpf.c",
           "int marked = over && ecn != ECN_NOT_ECT && ecn != ECN_CE && bpf_skb_ecn_set_ce(skb);",
           "int marked = 0 && over && ecn != ECN_NOT_ECT && ecn != ECN_CE && bpf_skb_ecn_set_ce(skb);",
           ("congestion",)),
    Mutant("queues-read-empty", "the queue probe reads every port's queue length as empty",
           "testbed/probes/queues.py",
           "        return max((s[1] for s in self.samples[ifname]), default=0)",
           "        return 0",
           ("incast",)),
    Mutant("planes-as-single", "HPN 7.0's dual plane built as one plane",
           "testbed/topology/hpn7.py",
           "self.planes, self.tors, self.cores, self.uplink_ratio = planes, tors, cores, uplink_ratio",
           "self.planes, self.tors, self.cores, self.uplink_ratio = 1, tors, cores, uplink_ratio",
           ("hpn7_planes", "hpn7_rails", "hpn7_at_scale")),
    Mutant("one-connection-per-peer", "a rank opens one connection per peer whatever streams it is given",
           "testbed/collectives/connections.py",
           "turn=k) for k in range(streams)]",
           "turn=k) for k in range(1)]",
           ("load_balancing",)),
    Mutant("fragmented-as-packed", "the jobs' servers taken rack by rack, not from every rack in turn: each job "
           "on racks of its own, as on an idle cluster", "testbed/collectives/placements.py",
           "    if how == \"fragmented\":\n        order = [",
           "    if False:\n        order = [",
           ("multi_job",)),
    Mutant("ranks-in-one-host", "the launcher starts every rank in rank 0's host, whatever the placement",
           "testbed/runs/launch.py",
           "self.procs.append(self._spawn(rank, host, self.command, self.environment(rank)))",
           "self.procs.append(self._spawn(rank, self.hosts[0], self.command, self.environment(rank)))",
           ("launch",)),
)
# the scenarios no mutant here can fail through its smoke, and why (docs/tests.md)
NOT_SHOWN = {}


def copy(tree):
    """The working tree copied to `tree`, its venv the project's."""
    shutil.copytree(ROOT, tree, ignore=LEFT_BEHIND, symlinks=True)
    (tree / ".venv").symlink_to(ROOT / ".venv")


def applied(mutant, tree):
    """The mutant's replacement made in `tree` (a copy); refused where its text is not there once."""
    path = tree / mutant.path
    text = path.read_text()
    found = text.count(mutant.old)
    if found != 1:
        raise SystemExit(f"{mutant.name}: its text is in {mutant.path} {found} times, not once: update the mutant")
    path.write_text(text.replace(mutant.old, mutant.new))


def smoke(tree, name, folder):
    """(killed, what was seen) of one scenario's smoke run in the mutated tree; killed None where the
    run was refused before it started (another run active, the machine's calibration): not run."""
    said = subprocess.run([sys.executable, "-c", f"import json; from scenarios import SCENARIOS; "
                           f"print(json.dumps(SCENARIOS[{name!r}].SMOKE))"], cwd=tree, capture_output=True, text=True)
    if said.returncode:
        return True, f"the mutated tree does not import ({said.stderr.strip().splitlines()[-1][:120]})"
    options = json.loads(said.stdout)
    run = subprocess.run([sys.executable, "run_scenario.py", name, "--results", str(folder), *options],
                         cwd=tree, capture_output=True, text=True, timeout=1800)
    record = folder / "record.json"
    if not record.exists():
        last = (run.stderr.strip() or run.stdout.strip() or "no output").splitlines()[-1]
        if run.returncode == 2:
            return None, f"refused before it ran: {last[:160]}"
        return True, f"the run failed before a record (exit {run.returncode}: {last[:120]})"
    kept = json.loads(record.read_text())
    refuted = [c for c in kept.get("claims", []) if c["verdict"] in ("DOES NOT HOLD", "NOT MEASURED")]
    if refuted:
        return True, "; ".join(f"{c['verdict']}: {c['claim']} ({c['said']})" for c in refuted)
    if kept["status"] != "complete" or kept["headline"].get("#wrong", 0):
        return True, f"the run ended {kept['status']} (exit {run.returncode})"
    return False, "; ".join(f"{c['verdict']}: {c['claim']}" for c in kept.get("claims", []))


def main(names):
    only = {}                                               # MUTANT:SCENARIO: only those of its runs
    for n in names:
        if ":" in n:
            only.setdefault(n.split(":", 1)[0], []).append(n.split(":", 1)[1])
    names = list(dict.fromkeys(n.split(":", 1)[0] for n in names))
    chosen = [m for m in MUTANTS if not names or m.name in names]
    if names and len(chosen) != len(names) or any(set(only.get(m.name, ())) - set(m.scenarios) for m in chosen):
        known = ", ".join(m.name for m in MUTANTS)
        raise SystemExit(f"unknown mutant among {', '.join(names)}: the mutants are {known}")
    print("| mutant | what it breaks | scenario | result | the smoke run's refuted claims | time |")
    print("|---|---|---|---|---|---|")
    survived = not_run = 0
    for mutant in chosen:
        with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as where:
            tree = Path(where) / "tree"
            copy(tree)
            applied(mutant, tree)
            for name in only.get(mutant.name, mutant.scenarios):
                started = time.monotonic()
                killed, seen = smoke(tree, name, Path(where) / name)
                survived += killed is False
                not_run += killed is None
                result = {True: "killed", False: "SURVIVED", None: "NOT RUN"}[killed]
                print(f"| {mutant.name} | {mutant.breaks} | {name} | {result} | "
                      f"{seen.replace('|', '/')} | {time.monotonic() - started:.0f} s |", flush=True)
    for name, why in NOT_SHOWN.items():
        print(f"| - | - | {name} | not shown | {why} | - |")
    return 1 if survived or not_run else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
