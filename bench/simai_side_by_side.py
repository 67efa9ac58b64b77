"""SimAI's analytical simulator and this testbed's replay on the same workload files, side by side:
per group kind the communication an iteration waits for, the bubble and the iteration, with what
differs and why. (No computation row: both sides take each layer's compute time as the file writes
it, so such a row would read 1.00 by construction.)

    sudo .venv/bin/python -m bench.simai_side_by_side --simai ~/SimAI \\
        --workload tests/data/workloads/gpt13b_tp4_16.txt [--workload FILE ...] [--system hpn7-ring]

--simai: a SimAI checkout with its analytical binary built (`./scripts/build.sh -c analytical`
there makes `bin/SimAI_analytical`), or that binary. The simulator is given the fabric the replay
runs: the file's GPU count, the system's accelerators per server, one NIC per accelerator, NICs
at --workload-gbit and NVLink at --scaleup-gbit (as busbw, GB/s). The replay is
`run_scenario.py training_scaling --workload FILE --systems SYSTEM` at the same rates (needs root);
its sizes are scaled by --rate over --workload-gbit, so its bandwidth terms take about as long as
on the real fabric, while each step pays this emulation's latency (about 0.5 ms, against a few
microseconds on a real one). Writes JSON into results/bench/ and prints one table per file.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from scenarios import training_scaling
from testbed.api import NVLINK_GBIT
from testbed.collectives import workload as workloads
from testbed.collectives.parallelism import KINDS
from testbed.collectives.placements import servers
from testbed.errors import TestbedError
from testbed.report.folder import RESULTS_ROOT

ROOT = Path(__file__).resolve().parents[1]
RATIOS = Path("astra-sim-alibabacloud/inputs/ratio")     # where SimAI_analytical looks, from its cwd
# SimAI's EndToEnd.csv summary columns, in microseconds, and the replay's figure for each
SIMAI_COLUMNS = {"Expose TP comm": "TP", "Expose DP comm": "DP", "Expose_EP_comm": "EP",
                 "Expose DP_EP comm": "DP_EP", "Expose_PP_comm": "PP", "bubble time": "bubble",
                 "Total time": "iteration"}
WHY = {
    "DP": "SimAI's analytical mode exposes every weight gradient's collective (its -dp_o, 0 by default, "
          "is the share it hides); the replay starts it when its computation ends and waits only where "
          "the next forward pass or the update needs it, as SimAI's packet-level mode does",
    "TP": "SimAI's busbw for a group inside a server is NVLink's; the replay models such a group at "
          "--scaleup-gbit the same way, and runs a group across servers for real with this emulation's "
          "per-step latency; SimAI's analytical mode times a collective under 1 MiB as a fixed latency "
          "by group size (10 us at 2 ranks to 135 us at 32), whatever the bandwidth",
    "EP": "an expert-parallel alltoall across servers runs for real here, one step per peer, each paying "
          "this emulation's latency",
    "PP": "SimAI counts pipeline traffic as hidden (-pp_o 1 by default); the replay sends it for real, "
          "pp_comm per micro-batch each way, without blocking, and exposes only what is still in flight "
          "at the iteration's end",
    "bubble": "both take the bubble as a stage's time, its embedding layer left out, x (pp - 1) / (ga x vpp), "
              "so it follows each side's waits for its forward and input-gradient collectives",
    "iteration": "SimAI's Total time is its compute and exposed communication, the bubble reported beside it, "
                 "not in it; the replay's iteration is shown less its bubble to compare like with like",
}


def simai_binary(path):
    """(the binary, its checkout): SimAI reads its busbw ratio tables by paths relative to the checkout."""
    path = Path(path).expanduser()
    binary = path / "bin" / "SimAI_analytical" if path.is_dir() else path
    if not (binary.exists() and os.access(binary, os.X_OK)):
        raise TestbedError(f"--simai {path}: no SimAI_analytical there: build it in the checkout with "
                           "./scripts/build.sh -c analytical, or give the binary")
    binary = binary.resolve()
    checkout = next((d for d in binary.parents if (d / RATIOS).is_dir()), None)
    if checkout is None:
        raise TestbedError(f"--simai {path}: no {RATIOS} above {binary}: give the SimAI checkout it was built in")
    return binary, checkout


def per_server(system, gpus, rate):
    topo = training_scaling.system_fabric(system, gpus, rate, 100, None)[0]
    sizes = {len(box) for box in servers(topo)}
    return max(sizes)


def run_simai(simai, workload, gpus, gpus_per_server, nic_gbit, nvlink_gbit, into):
    """SimAI's analytical run of `workload`: {figure: seconds} from its EndToEnd.csv summary. It runs
    in `into`, which sees the checkout's ratio tables through a link and takes SimAI's ./results/."""
    binary, checkout = simai
    into.mkdir(parents=True, exist_ok=True)
    (into / RATIOS.parts[0]).symlink_to(checkout / RATIOS.parts[0])
    (into / "results").mkdir()
    command = [str(binary), "-w", str(Path(workload).resolve()), "-g", str(gpus), "-g_p_s", str(gpus_per_server),
               "-n_p_s", str(gpus_per_server), "-nv", f"{nvlink_gbit / 8:g}", "-nic", f"{nic_gbit / 8:g}",
               "-r", "replay-"]
    done = subprocess.run(command, cwd=into, capture_output=True, text=True, timeout=600)
    (into / "simai.log").write_text(done.stdout + done.stderr)
    found = sorted(into.rglob("*EndToEnd.csv"))
    if done.returncode != 0 or not found:
        raise TestbedError(f"SimAI_analytical failed on {workload} (exit {done.returncode}; its output in "
                           f"{into / 'simai.log'})")
    return command, summary(found[-1].read_text())


def summary(text):
    """{figure: seconds} of an EndToEnd.csv's summary: its last two lines, the column names and
    'value (share%)' cells, in microseconds."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next(k for k in range(len(lines) - 1, -1, -1) if lines[k].startswith("File name"))
    keys = [k.strip() for k in lines[header].split(",")]
    cells = next(csv.reader([lines[header + 1]], skipinitialspace=True))
    out = {}
    for key, cell in zip(keys, cells):
        if key in SIMAI_COLUMNS:
            number = re.match(r"\s*([-\d.e+]+)", cell)
            out[SIMAI_COLUMNS[key]] = float(number.group(1)) / 1e6 if number else None
    return out


def run_replay(workload, system, rate, nic_gbit, nvlink_gbit, iters, into):
    """The replay's row for `workload` on `system`: {figure: seconds}, its iteration less its bubble."""
    command = [sys.executable, str(ROOT / "run_scenario.py"), "training_scaling", "--workload", str(workload),
               "--systems", system, "--rate", f"{rate:g}", "--workload-gbit", f"{nic_gbit:g}",
               "--scaleup-gbit", f"{nvlink_gbit:g}", "--iters", str(iters), "--results", str(into)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    (into.parent / f"{into.name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        raise TestbedError(f"the replay of {workload} failed: {' '.join(last)}")
    with open(into / "training_scaling.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    out = {kind: float(row[f"{kind}_s"]) if row.get(f"{kind}_s") else 0.0 for kind in KINDS}
    bubble = float(row.get("bubble_s") or 0)
    out.update(bubble=bubble, iteration=float(row["iteration_s"]) - bubble, wrong=int(row["wrong"]),
               emulator=row.get("emulator_bottleneck"))
    return command, out


def table(simai, replay):
    """Rows (figure, SimAI s, replay s, replay over SimAI, why they differ)."""
    rows = []
    for figure in ("TP", "DP", "EP", "DP_EP", "PP", "bubble", "iteration"):
        s, r = simai.get(figure), replay.get(figure)
        if not s and not r:
            continue
        ratio = r / s if s and r is not None else None
        rows.append((figure, s, r, ratio, WHY.get(figure, "")))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simai", required=True, help="a SimAI checkout with bin/SimAI_analytical, or the binary")
    parser.add_argument("--workload", action="append", required=True, help="a workload file (repeatable)")
    parser.add_argument("--system", default="hpn7-ring", choices=training_scaling.SYSTEMS,
                        help="the replay's system (default %(default)s)")
    parser.add_argument("--rate", type=float, default=10.0, help="the emulated links' rate, Mbit/s (default 10)")
    parser.add_argument("--workload-gbit", type=float, default=400.0,
                        help="the NICs' rate the files were made for, Gbit/s (default 400)")
    parser.add_argument("--scaleup-gbit", type=float, default=NVLINK_GBIT,
                        help="NVLink each way, Gbit/s (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="the replay's timed iterations (default 3)")
    parser.add_argument("--out", help="JSON file (default results/bench/simai_side_by_side.json)")
    args = parser.parse_args(argv)
    try:
        binary = simai_binary(args.simai)
        files = [(path, workloads.read(path)) for path in args.workload]
        for path, w in files:
            if not w.gpus:
                raise TestbedError(f"--workload {path} names no GPU count (all_gpus): SimAI needs one")
        if args.iters < 1:
            raise TestbedError("--iters must be 1 or more")
        if os.geteuid() != 0:
            raise TestbedError("the replay emulates the fabric: run as root (sudo)")
    except TestbedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else RESULTS_ROOT / "bench" / "simai_side_by_side.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = []
    with tempfile.TemporaryDirectory(prefix="simai-") as work:
        for path, w in files:
            per = per_server(args.system, w.gpus, args.rate)
            print(f"# {path}: {w.gpus} GPUs ({w.groups().describe()}), {per} per server, NICs {args.workload_gbit:g} "
                  f"Gbit/s, NVLink {args.scaleup_gbit:g} Gbit/s; the replay on {args.system}", flush=True)
            simai_command, simai = run_simai(binary, path, w.gpus, per, args.workload_gbit, args.scaleup_gbit,
                                             Path(work) / Path(path).stem)
            replay_command, replay = run_replay(path, args.system, args.rate, args.workload_gbit,
                                                args.scaleup_gbit, args.iters, Path(work) / f"{Path(path).stem}-replay")
            rows = table(simai, replay)
            print(f"  {'figure':10s} {'SimAI (ms)':>11s} {'replay (ms)':>12s} {'replay/SimAI':>13s}")
            for figure, s, r, ratio, _ in rows:
                print(f"  {figure:10s} {s * 1e3 if s is not None else float('nan'):11.2f} "
                      f"{r * 1e3 if r is not None else float('nan'):12.2f} "
                      f"{ratio if ratio is not None else float('nan'):13.2f}")
            print(f"  replay: #wrong {replay['wrong']}, emulator bottleneck {replay['emulator']}")
            for figure, *_, why in rows:
                if why:
                    print(f"  {figure}: {why}")
            report.append({"workload": str(path), "gpus": w.gpus, "gpus_per_server": per, "system": args.system,
                           "simai_command": simai_command, "replay_command": replay_command,
                           "simai_s": simai, "replay_s": replay,
                           "rows": [dict(zip(("figure", "simai_s", "replay_s", "ratio", "why"), r)) for r in rows]})
    out.write_text(json.dumps(report, indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
