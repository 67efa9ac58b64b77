"""The project's allreduce against OpenMPI's and PyTorch gloo's on the same emulated fabric, in one
sitting: the peers' ranks run in the same emulated hosts, over the same shaped links, one after
the other.

    sudo .venv/bin/python -m bench.allreduce_peers [--topology bigraph:2,8] [--sizes 1024,4096,1048576]
                                                   [--iters 20] [--peers openmpi,gloo] [--openmpi 0,3,4,6]
                                                   [--openmpi-idle sleep|spin] [--out FILE]

It installs what the peers it runs need where missing (Debian's openmpi-bin and mpi4py from PyPI
for OpenMPI; the CPU build of torch from PyTorch's own index, about 200 MB, for gloo) and says
so. OpenMPI runs its tuned default and each forced algorithm of ``OPENMPI_ALGORITHMS`` (mpirun
started in the first host's namespace, its daemons in each host's by ``testbed/programs/rsh_agent.py``; TCP
only, not bound to cores, yielding when idle); gloo its allreduce.
Every peer's result is checked against the sum each rank expects, as the project's are against
numpy. The fabric has no control class (``control_class=False``): the project's clear-to-sends and
ACKs queue with data as the peers' do.

OpenMPI's idle ranks poll for progress and call sched_yield() between polls, which returns at once
when every core is busy: 16 ranks on 2 cores spin. ``--openmpi-idle sleep`` (the default) preloads
``peers/yield_sleeps.c`` into them, so a yield sleeps (``--yield-sleep-us``, 200 by default) and the
CPU goes to the rank with work, as an oversubscribed MPI user arranges; ``spin`` leaves OpenMPI as
it comes. Each peer's run is watched like the project's and its CPU verdict printed: a peer whose
ranks kept the machine busy says so. Writes JSON.
"""
import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import testbed
from testbed.errors import Interrupted
from testbed.fidelity.verdict import describe
from testbed.report.folder import RESULTS_ROOT
from testbed.runs.launch import mpirun

HERE = Path(__file__).resolve().parent / "peers"
OURS = ("auto", "hd", "hdrm", "rd", "rdrm", "ring")
PEERS = ("openmpi", "gloo")
IDLE = ("sleep", "spin")
OPENMPI_ALGORITHMS = {0: "tuned default", 3: "recursive doubling", 4: "ring", 6: "rabenseifner"}
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def ensure_peers(peers):
    """Install what `peers` need where missing: OpenMPI (Debian) and mpi4py (PyPI); torch's CPU build
    from PyTorch's index alone (PyPI's torch is the CUDA build, gigabytes of it)."""
    if "openmpi" in peers and shutil.which("mpirun") is None:
        print("installing Debian's openmpi-bin", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "openmpi-bin"], check=True)
    wanted = {"openmpi": ("mpi4py", ["mpi4py"]), "gloo": ("torch", ["torch", "--index-url", TORCH_INDEX])}
    for module, args in (wanted[p] for p in peers):
        if importlib.util.find_spec(module) is None:
            print(f"installing {module} ({' '.join(args)})", flush=True)
            if subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args]).returncode:
                sys.exit(f"error: could not install {module}: run without it (--peers) or install it yourself")


def in_host(emu, host, args, **kwargs):
    return subprocess.run(["nsenter", "-t", str(emu.emulation.host(host).pid), "-n", "--", *args],
                          capture_output=True, text=True, **kwargs)


def yield_sleeps(folder):
    """peers/yield_sleeps.c built into `folder`: the library OpenMPI's ranks preload."""
    compiler = shutil.which("cc") or shutil.which("clang")
    if compiler is None:
        print("installing Debian's gcc (to build the sched_yield shim)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "gcc"], check=True)
        compiler = "cc"
    built = folder / "libyield_sleeps.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(HERE / "yield_sleeps.c")], check=True)
    return built


def openmpi(emu, hosts, sizes, iters, algorithm, folder, preload, sleep_us):
    """OpenMPI's allreduce `algorithm` over `hosts`, each rank preloading `preload` (the sched_yield
    shim, sleeping `sleep_us`) or nothing (None): [{size, seconds, wrong}]."""
    command, pids = mpirun(emu.emulation, hosts, folder)
    sleeping = ["-x", f"LD_PRELOAD={preload}", "-x", f"TESTBED_YIELD_SLEEP_US={sleep_us}"] if preload else []
    tuned = ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm",
             str(algorithm)] if algorithm else []
    done = in_host(emu, hosts[0], [
        *command, *tuned, "-x", f"TESTBED_PEER_PIDS={pids}", "-x", "PATH", *sleeping,
        sys.executable, str(HERE / "mpi_allreduce.py"), ",".join(map(str, sizes)), str(iters)],
        timeout=900, env={"TESTBED_PEER_PIDS": str(pids), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    if done.returncode:
        raise RuntimeError(f"mpirun failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def gloo(emu, hosts, sizes, iters):
    topo = emu.topo
    master = topo.hosts[hosts[0]].ports[0].ip
    procs = [subprocess.Popen(["nsenter", "-t", str(emu.emulation.host(h).pid), "-n", "--", sys.executable,
                               str(HERE / "gloo_allreduce.py"), str(r), str(len(hosts)), master,
                               topo.hosts[h].ports[0].intf, ",".join(map(str, sizes)), str(iters)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r, h in enumerate(hosts)]
    outs = [p.communicate(timeout=900) for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"gloo failed: {next(o[1] for p, o in zip(procs, outs) if p.returncode)[-500:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="bigraph:2,8")
    parser.add_argument("--sizes", default="1024,4096,1048576")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated, from {', '.join(PEERS)} (default all)")
    parser.add_argument("--openmpi", default=",".join(map(str, OPENMPI_ALGORITHMS)),
                        help="OpenMPI's allreduce algorithms to run, by number: "
                             + ", ".join(f"{n} {name}" for n, name in OPENMPI_ALGORITHMS.items()) + " (default all)")
    parser.add_argument("--openmpi-idle", default="sleep",
                        help="OpenMPI's idle ranks, comma-separated to run each: sleep (sched_yield preloaded as "
                             "a sleep of --yield-sleep-us) or spin (as OpenMPI comes) (default %(default)s)")
    parser.add_argument("--yield-sleep-us", type=int, default=200,
                        help="how long an idle OpenMPI rank's sched_yield sleeps, microseconds (default %(default)s)")
    parser.add_argument("--out", default=str(RESULTS_ROOT / "bench" / "allreduce_peers.json"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    chosen = [int(n) for n in args.openmpi.split(",") if n]
    if not chosen or any(n not in OPENMPI_ALGORITHMS for n in chosen):
        parser.error(f"--openmpi takes numbers from {', '.join(map(str, OPENMPI_ALGORITHMS))} (got {args.openmpi!r})")
    if not 1 <= args.yield_sleep_us <= 100000:
        parser.error(f"--yield-sleep-us must be 1 to 100000 (got {args.yield_sleep_us})")
    idles = [i for i in args.openmpi_idle.split(",") if i]
    if not idles or any(i not in IDLE for i in idles):
        parser.error(f"--openmpi-idle takes {', '.join(IDLE)} (got {args.openmpi_idle!r})")
    peers = [p for p in args.peers.split(",") if p]
    if not peers or any(p not in PEERS for p in peers):
        parser.error(f"--peers takes names from {', '.join(PEERS)} (got {args.peers!r})")
    ensure_peers(peers)
    topo = testbed.fabric(args.topology)
    hosts = sorted(topo.hosts, key=lambda h: topo.hosts[h].index)
    times, cpu = {}, {}          # (who, size) -> seconds; who -> the CPU verdict of its run
    with tempfile.TemporaryDirectory() as tmp, testbed.emulate(topo, folder=tmp, control_class=False) as emu:
        shim = yield_sleeps(Path(tmp)) if "sleep" in idles and "openmpi" in peers else None

        def got(who, size, seconds):
            times[who, size] = seconds
            print(f"  {who} at {size} B: {seconds * 1e3:.2f} ms", flush=True)

        def watched(who, rows):
            cpu[who] = rows.result()
            print(f"  {who}: {describe(cpu[who])}", flush=True)

        for c in emu.sweep(OURS, sizes, iters=args.iters, warmup=1):
            assert c.wrong == 0, c
            who = f"testbed {c.algorithm}" + (f" ({c.chose})" if c.algorithm == "auto" else "")
            got(who, c.size, c.time_us / 1e6)
            if "busiest_core" in c.row:
                print(f"    {describe(c.row)}", flush=True)
        for idle in idles if "openmpi" in peers else ():
            for number, name in ((n, OPENMPI_ALGORITHMS[n]) for n in chosen):
                who = f"OpenMPI {name}" + (", spinning" if idle == "spin" else "")
                with emu.cpu_monitor() as watch:
                    done = openmpi(emu, hosts, sizes, args.iters, number, Path(tmp),
                                   shim if idle == "sleep" else None, args.yield_sleep_us)
                for r in done:
                    assert r["wrong"] == 0, (name, r)
                    got(who, r["size"], r["seconds"])
                watched(who, watch)
        if "gloo" in peers:
            with emu.cpu_monitor() as watch:
                done = gloo(emu, hosts, sizes, args.iters)
            for r in done:
                assert r["wrong"] == 0, r
                got("gloo", r["size"], r["seconds"])
            watched("gloo", watch)
    rows = []
    for size in sizes:
        mine = {who: t for (who, s), t in times.items() if s == size}
        auto = next(t for who, t in mine.items() if who.startswith("testbed auto"))
        peers = {who: t for who, t in mine.items() if not who.startswith("testbed")}
        fastest = min(peers, key=peers.get)
        rows.append({"size": size, "times_s": mine, "fastest_peer": fastest,
                     "auto_over_fastest_peer": round(auto / peers[fastest], 3)})
        ranked = sorted(mine.items(), key=lambda item: item[1])
        print(f"{size:8d} B  " + "  ".join(f"{who} {t * 1e3:.2f} ms" for who, t in ranked)
              + f"  | auto over the fastest peer ({fastest}): {auto / peers[fastest]:.2f}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"topology": topo.name, "ranks": len(hosts), "rate_mbit": topo.rate,
                               "iters": args.iters, "control_class": False, "openmpi_idle": idles,
                               "yield_sleep_us": args.yield_sleep_us,
                               "peers_cpu": cpu, "rows": rows,
                               "auto_over_fastest_peer_median": statistics.median(r["auto_over_fastest_peer"]
                                                                                  for r in rows)}, indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Interrupted:
        sys.exit("interrupted: the fabric and the peers' processes are removed; results so far are above")
