"""Bad input is refused before anything is built, in one line naming the fix."""
import contextlib
import io
import os
import signal
import subprocess
import sys

import pytest

import run_scenario
from scenarios import SCENARIOS
from testbed import interrupts
from testbed.emulation import capacity, preflight
from testbed.emulation.processes import PROJECT
from testbed.emulation.settings import RunSettings
from testbed.errors import TestbedError
from testbed.topology import BiGraph


def test_rate_beyond_emulator_capacity_is_refused_with_fix():
    with pytest.raises(TestbedError, match=r"use --rate .* or less or --mtu 9000"):
        capacity.check_rate(BiGraph(2, 8, rate=50), mtu=1500)
    capacity.check_rate(BiGraph(2, 8, rate=5), mtu=1500)
    capacity.check_rate(BiGraph(2, 8, rate=10), mtu=9000)
    with pytest.raises(TestbedError, match=r"kernel datapath here .* use --rate 5 or less"):
        capacity.check_rate(BiGraph(2, 8, rate=1000), mtu=1500, datapath="kernel")   # until it is calibrated


def test_mtu_range():
    with pytest.raises(TestbedError, match="--mtu"):
        capacity.check_mtu(100)
    capacity.check_mtu(1500)


def test_not_root_is_refused(monkeypatch):
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    with pytest.raises(TestbedError, match="needs root: run it with sudo"):
        preflight.require_root()


def test_messages_are_one_line():
    for call in (lambda: BiGraph(2, 7), lambda: capacity.check_rate(BiGraph(4, 8, rate=30), 1500)):
        with pytest.raises(TestbedError) as err:
            call()
        assert "\n" not in str(err.value)


def refused(args, tmp_path):
    """Run run_scenario.py's main with args in this process (a process per case cost 1.5 s of
    imports, 3 of the fast part's 5 minutes): it must refuse in one line, exit 2, and write
    nothing. test_the_command_refuses_as_main_does checks that the command itself does the same."""
    folder = tmp_path / "results"
    argv = [*args, *([] if "--results" in args else ["--results", str(folder)])]
    out, err = (io.TextIOWrapper(io.BytesIO(), write_through=True) for _ in range(2))
    handlers = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}    # main leaves them ignored
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_scenario.main(argv)
    except SystemExit as e:             # argparse's own refusals
        code = e.code
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    said, told = (stream.buffer.getvalue().decode() for stream in (out, err))
    assert code == 2, (code, said, told)
    assert said == "" and told.startswith("error: ") and told.count("\n") == 1, told
    assert not folder.exists()
    return told


def refused_by_the_command(args, tmp_path, as_user=None):
    """The same as refused, through `python3 run_scenario.py` in its own process."""
    folder = tmp_path / "results"
    command = [sys.executable, "run_scenario.py", *args]
    if "--results" not in args:
        command += ["--results", str(folder)]
    if as_user:
        command = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups", *command]
    run = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run
    assert run.stdout == "" and run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr
    assert not folder.exists()
    return run.stderr


BAD = [  # (options, what the one line must say); every scenario's options, built from a user's tries
    (["--algorithms", ","], "--algorithms is empty"),
    (["--algorithms"], "expected one argument"),
    (["--algorithms", "hdrm,tree"], "unknown tree"),
    (["--iters", "0", "--min-bytes", "1048576", "--algorithms", "hdrm"], "--iters must be at least 1"),
    (["--iters", "-3"], "--iters must be at least 1"),
    (["--warmup", "-1"], "--warmup must be at least 0"),
    (["--rate", "1e-9", "--max-bytes", "1024", "--algorithms", "hdrm"], "--rate must be at least 1 Mbit/s"),
    (["--rate", "nan"], "--rate must be at least 1 Mbit/s"),
    (["--rate", "inf"], "--rate must be at least 1 Mbit/s"),
    (["--rate", "ten"], "invalid float value"),
    (["--min-bytes", "1099511627776", "--max-bytes", "1099511627776"], "GiB of memory"),
    (["--max-bytes", "1073741824"], "use --max-bytes"),
    (["--min-bytes", "8", "--max-bytes", "2"], "sizes need 4 <= --min-bytes"),
    (["--factor", "1"], "--factor >= 2"),
    (["--eager-limit", "-1"], "--eager-limit must be at least 0 bytes"),
    (["--queue", "100000000"], "use --queue"),
    (["--queue", "0"], "queue (packets) must be a positive whole number"),
    (["--mtu", "100"], "--mtu must be between"),
    (["--topology", "bigraph:2,7"], "even switch count"),
    (["--topology", "torus:3"], "unknown topology"),
    (["--topology", "bigraph:5,8", "--algorithms", "hdrm"], r"HDRM needs m <= c*n/2"),
    (["--topology", "bigraph:3,4", "--algorithms", "hd"], "power-of-two rank count"),
    (["--rate", "50", "--mtu", "1500"], "use --rate 5 or less or --mtu 9000"),
    (["fabric_check", "--duration", "0"], "--duration must be at least 1 s"),
    (["fabric_check", "--duration", "-5"], "--duration must be at least 1 s"),
    (["fabric_check", "--duration", "100000"], "--duration must be at most"),
    (["fabric_check", "--topology", "leafspine:1,1,1"], "needs at least 2"),
    (["fabric_check", "--topology", "hpn7:1,1,1"], "should read hpn7:S,H,R,A"),
    (["incast", "--fanin", "a,b"], "--fanin should be whole numbers"),
    (["incast", "--fanin", ","], "--fanin needs one or more positive"),
    (["incast", "--fanin", "0"], "--fanin needs one or more positive"),
    (["incast", "--fanin", "40"], "use --fanin up to 18"),
    (["incast", "--bytes", "1099511627776", "--fanin", "2", "--rounds", "1"], "use --bytes"),
    (["incast", "--rounds", "0"], "--rounds must be at least 1"),
    (["incast", "--probe-interval", "0"], "--probe-interval must be between"),
    (["ecmp_collisions", "--clos", "leafspine:2,2,2"], "same host count"),
    (["ecmp_collisions", "--trials", "1"], "--trials must be at least 2 (an interval needs two)"),
    (["ecmp_collisions", "--collective", "alltoall", "--bytes", "1000"], "whole number of 16-element blocks"),
    (["ecmp_collisions", "--collective", "gather"], "invalid choice: 'gather'"),
    (["collectives", "--algorithms", "alltoall=ring"], "unknown ring: use one or more of pairwise, xor"),
    (["collectives", "--algorithms", "gather=ring"], "write COLLECTIVE=A,B"),
    (["collectives", "--collectives", "alltoall", "--algorithms", "allgather=ring"], "add it there"),
    (["collectives", "--algorithms", "alltoall=xor", "--algorithms", "alltoall=topo"], "gives alltoall twice"),
    (["collectives", "--topology", "bigraph:3,4", "--collectives", "allgather", "--algorithms", "allgather=rd"],
     "power-of-two rank count (got 12): use 8 or 16 ranks"),
    (["collectives", "--topology", "leafspine:4,4,4", "--collectives", "allgather"], "BiGraph only"),
    (["collectives", "--collectives", "gather"], "unknown gather"),
    (["training_scaling", "--workload", "/nonexistent.txt"], "cannot read it"),
    (["hpn7_planes", "--workloads", "allreduce,gather"], "--workloads: unknown gather"),
    (["hpn7_planes", "--workloads", "alltoall", "--bytes", "1000"], "whole number of 8-element blocks"),
    (["training_scaling", "--workload", "README.md"], "README.md:2: the layer count should be a number"),
    (["training_scaling", "--workload", "examples/workloads/moe_small.txt", "--workload-gbit", "0"],
     "--workload-gbit must be positive"),
    (["hpn7_planes", "--trials", "1"], "--trials must be at least 2 (an interval needs two)"),
    (["hpn7_planes", "--uplink-capacity", "0"], "--uplink-capacity must be between 0.1 and 4"),
    (["hpn7_planes", "--bond", "spray"], "invalid choice: 'spray'"),
    (["hpn7_planes", "--topology", "bigraph:2,4"], "needs a dual-ToR HPN7 fabric"),
    (["hpn7_planes", "--streams", "0"], "--streams must be between 1 and 16"),
    (["hpn7_rails", "--uplink-ratio", "4"], "give an A that 4 divides (got 2)"),
    (["hpn7_planes", "--uplink-ratio", "3"], "invalid choice: 3"),
    (["ecmp_collisions", "--clos", "leafspine:4,3,4", "--uplink-ratio", "2"], "a spine count that 2 divides"),
    (["ecmp_collisions", "--routing", "planned"], "invalid choice: 'planned'"),
    (["training_scaling", "--routing", "random"], "invalid choice: 'random'"),
    (["dual_tor_failover", "--streams", "17"], "--streams must be between 1 and 16"),
    (["hpn7_rails", "--topology", "hpn7:2,3,2,2"], "an even number (2 or more) of servers"),
    (["hpn7_rails", "--trials", "0"], "--trials must be at least 2"),
    (["hpn7_at_scale", "--gpus", "24"], "use multiples of 16 up to 2048"),
    (["hpn7_at_scale", "--draws", "1"], "--draws must be between 2 and 10000"),
    (["hpn7_at_scale", "--topology", "bigraph:2,8"], "models HPN7 fabrics"),
    (["ecmp_collisions", "--bytes", "2"], "--bytes must be at least 64"),
    (["no_such_scenario"], "unknown scenario 'no_such_scenario'"),
    (["faultbench", "--score", "/nonexistent"], "--score /nonexistent: no traces there"),
    (["faultbench", "--score", "/nonexistent", "--seed", "3", "--topology", "bigraph:2,8"],
     "leave out --seed, --topology"),
    (["faultbench", "--detector", "rules,oracle"], "--detector: unknown oracle"),
    (["faultbench", "--trials", "0", "--fault-free", "0", "--drift", "0"], "the test split has no trials"),
    (["faultbench", "--train-drift", "30"], "--train-drift must be 0 or 60 to 3600 s"),
    (["faultbench", "--train-trials", "-1"], "--train-trials must be at least 0"),
    (["incast", "--machines", "tests/data/machines_two.toml"], "incast does not run across machines yet"),
    (["fabric_check", "--machines", "/nonexistent.toml"], "cannot read it"),
    (["fabric_check", "--machines", "README.md"], "is not TOML"),
    (["fabric_check", "--machines", "tests/data/machines_two.toml", "--slots", "2"], "drop --slots"),
    (["fabric_check", "--machines", "tests/data/machines_two.toml", "--cpu-placement", "pinned"],
     "with --machines use none"),
    (["fabric_check", "--machines", "tests/data/machines_two.toml", "--cli"], "drop --machines"),
    (["fabric_check", "--slots", "0"], "--slots must be 1 or more"),
    (["fabric_check", "--slots", "-1"], "--slots must be 1 or more"),
    (["fabric_check", "--topology", "leafspine:1,1,4", "--slots", "2"], "which no shortest path between hosts"),
    (["hpn7_at_scale", "--slots", "2"], "unrecognized arguments: --slots 2"),
    (["hpn7_at_scale", "--cli"], "unrecognized arguments: --cli"),
    (["training_scaling", "--workload", "tests/data/workloads/terabytes.txt"], "GiB of memory"),
    (["bigraph_allreduce", "--algorithms", "auto", "--min-bytes", "8", "--max-bytes", "8"],
     "auto on 16 ranks needs one element per rank or more"),
    (["multi_job", "--topology", "bigraph:4,8", "--job", "tests/data/workloads/terabytes.txt", "--job",
      "allreduce:8:1048576:1"], "GiB of memory"),
    (["training_scaling", "--workload", "tests/data/workloads/deepseek16b_tp2_pp2_ep4_32.txt", "--ranks", "8",
      "--systems", "bigraph-ring"],
     "expert parallel 4 does not divide the data-parallel size 2"),
    (["training_scaling", "--workload", "examples/workloads/moe_small.txt", "--ranks", "4096"], "offer"),
    (["multi_job", "--job", "allreduce:x", "--job", "allreduce:8:1048576:1"], "write allreduce:RANKS:BYTES:COMPUTE_MS"),
    (["multi_job", "--job", "allreduce:8:1048576:100"], "needs two jobs or more"),
    (["multi_job", "--job", "allreduce:16:1048576:1", "--job", "allreduce:16:1048576:1"], "the jobs need 32"),
    (["multi_job", "--schemes", "fast"], "--schemes: unknown fast"),
    (["multi_job", "--placement", "nowhere.json"], "use one of packed, spread, fragmented, random"),
    (["multi_job", "--trials", "1"], "--trials must be at least 2"),
    (["multi_job", "--priority", "fair"], "invalid choice: 'fair'"),
    (["fault_localisation", "--kinds", "meteor"], "--kinds: unknown meteor"),
    (["fault_localisation", "--kinds", ""], "--kinds is empty"),
    (["fault_localisation", "--straggler", "0.2"], "--straggler must be 0 or 0.4 to 1"),
    (["fault_localisation", "--straggler", "1"], "--straggler must be 0 or 0.4 to 1"),
    (["fault_localisation", "--inject", "slow-link:U0-X9:0.3", "--topology", "bigraph:2,8"], "no host or switch 'X9'"),
    (["fault_localisation", "--inject", "slow-link:U0-L1:3", "--topology", "bigraph:2,8"],
     "the fraction must be between 0.01 and 1"),
    (["fault_localisation", "--inject", "hang-rank:99", "--topology", "bigraph:2,8"], "the job's ranks are 0 to 15"),
    (["fault_localisation", "--inject", "port-down:h0:1", "--topology", "bigraph:2,8"], "port-down takes HOST:PORT"),
    (["fault_localisation", "--inject", "slow-link:U0-L1:0.3@soon"], "after @ give seconds (8, 8s) or an iteration"),
    (["fault_localisation", "--trials", "0", "--fault-free", "0", "--designs", "none"], "no trials"),
    (["fault_localisation", "--inject", "slow-link:U0-L1:0.3+link-down:L1-U0", "--topology", "bigraph:2,8"],
     "the two faults take the same place on BiGraph"),
    (["fault_localisation", "--inject", "switch-down:U0+loss:U0-L1:0.02", "--topology", "bigraph:2,8"],
     "the two faults take the same place"),
    (["fault_localisation", "--inject", "hang-rank:3+slow-rank:3:0.01", "--topology", "bigraph:2,8"],
     "the two faults take the same place"),
    (["fault_localisation", "--inject", "hang-rank:1+hang-rank:2+hang-rank:3"], "at most two faults at once"),
    (["fault_localisation", "--trials", "2", "--two-at-once", "3"], "--two-at-once must be 0 to --trials (2)"),
    (["fault_localisation", "--designs", "bogus"], "--designs: unknown bogus"),
    (["fault_localisation", "--stall-limit", "6"], "--stall-limit must outlast a fault by 5 s or more"),
    (["fault_localisation", "--hang-for", "9"], "--hang-for must be between 0.5 s and --fault-for"),
    (["fault_localisation", "--topology", "bigraph:2,7"], "BiGraph needs an even switch count"),
    (["load_balancing", "--schemes", "magic"], "--schemes: unknown magic"),
    (["load_balancing", "--stream-counts", "1,32"], "at most 16 connections per peer"),
    (["load_balancing", "--stream-counts", ""], "--stream-counts needs one or more positive whole numbers"),
    (["load_balancing", "--allocated", "1.5"], "--allocated must be between 0 and 1"),
    (["load_balancing", "--topology", "leafspine:4,3,4", "--also", "none"],
     "uplinks-2x divides the spines by 2: give a spine count that 2 divides"),
    (["load_balancing", "--topology", "leafspine:3,4,4", "--also", "none"], "HD needs a power-of-two host count"),
    (["load_balancing", "--collectives", "gossip"], "--collectives: unknown gossip"),
    (["load_balancing", "--trials", "1"], "--trials must be at least 2"),
    (["load_balancing", "--workload", "nowhere.txt"], "nowhere.txt"),
    (["fault_localisation", "--topology", "bigraph:1,2", "--second-job"], "the second job needs 4 hosts"),
    (["bigraph_allreduce", "--ecn", "0"], "--ecn must be a positive number of bytes"),
    (["incast", "--ecn", "99999999"], "--ecn 99999999 is at or above the FIFO's limit"),
    (["ecmp_collisions", "--compare-ecn", "0"], "--compare-ecn"),
    (["congestion", "--phantom", "0.3"], "--phantom must be 0 (no HULL) or between 0.5 and 1"),
    (["ecmp_collisions", "--compare-ecn", "99999999"], "--compare-ecn 99999999 is at or above the FIFO's limit"),
    (["ecmp_collisions", "--compare-cc", "cubic"], "give --compare-ecn K"),
    (["multi_job", "--compare-ecn", "30000", "--compare-cc", "bbr"], "BBR does not act on marks"),
    (["multi_job", "--compare-ecn", "30000", "--ecn", "30000"], "drop --ecn and --cc"),
    (["launch", "--", "no-such-program", "--steps", "5"], "no-such-program: no such command on PATH"),
    (["launch", "--", "python3", "examples/no_such_script.py"], "examples/no_such_script.py: no such file"),
    (["launch", "--topology", "bigraph:2,4", "--ranks", "9"], "--ranks 9: BiGraph"),
    (["launch", "--ranks", "0"], "--ranks"),
    (["launch", "--timeout", "0"], "--timeout must be more than 0 s"),
    (["launch", "--react"], "--react routes around a fault the monitor names: give --inject"),
    (["launch", "--inject", "link-down:U0-L0@5", "--compare", "leafspine:4,2,4"], "--inject runs once"),
    (["launch", "--inject", "link-down:U0-L0@5", "--trials", "3"], "--inject runs once"),
    (["launch", "--inject", "hang-rank:2@5", "--mpi"], "under --mpi, mpirun starts the ranks"),
    (["launch", "--inject", "hang-rank:16@5"], "the job's ranks are 0 to 15"),
    (["launch", "--inject", "link-down:U0-L0@5it"], "in seconds"),
    (["launch", "--inject", "link-down:U0-U1@5"], "no link between U0 and U1"),
    (["launch", "--inject", "link-down:U0-L0@5", "--fault-for", "0"], "--fault-for"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_option_is_refused_in_one_line_before_anything_is_built(args, message, tmp_path):
    assert message in refused(args, tmp_path)


@pytest.mark.parametrize("args", [["--rate", "nan"], ["--algorithms"], ["incast", "--fanin", "40"],
                                  ["nonesuch"]], ids=" ".join)
def test_the_command_refuses_as_main_does(args, tmp_path):
    """What main says in this process is what the command prints and exits with: an argparse
    refusal, a scenario's, an unknown scenario."""
    assert refused_by_the_command(args, tmp_path) == refused(args, tmp_path)


as_root = pytest.mark.skipif(os.geteuid() != 0, reason="checked after the root check: needs root")


@as_root
@pytest.mark.parametrize("results,message", [
    ("/etc/hostname", "is a file"), ("/etc/hostname/sub", "is not a folder"),
    ("/proc/results", "cannot write in /proc"),
])
def test_unusable_results_folder_is_refused(results, message, tmp_path):
    assert message in refused(["fabric_check", "--results", results], tmp_path)


@as_root
def test_a_user_who_is_not_root_is_told_to_use_sudo(tmp_path):
    assert "needs root: run it with sudo" in refused_by_the_command(["fabric_check"], tmp_path, as_user=65534)


def test_any_python3_runs_the_scenarios_through_the_projects_venv(tmp_path):
    """`sudo python3 run_scenario.py` as the card says: Debian's python3 goes on in .venv; where
    setup.sh has not made one, one line and exit 2."""
    system = "/usr/bin/python3"
    if not os.path.exists(system) or not (PROJECT / ".venv" / "bin" / "python").exists():
        pytest.skip("needs Debian's python3 and the venv setup.sh makes")
    listed = subprocess.run([system, "run_scenario.py", "--list"], cwd=PROJECT, capture_output=True, text=True,
                            timeout=120)
    assert listed.returncode == 0 and "bigraph_allreduce" in listed.stdout, listed.stderr
    (tmp_path / "run_scenario.py").write_text((PROJECT / "run_scenario.py").read_text())
    bare = subprocess.run([system, "run_scenario.py", "--list"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1 and "sudo ./setup.sh" in bare.stderr


def numeric_options():
    """(scenario, option) for every int or float option of every scenario."""
    subs = next(a for a in run_scenario.parser()._actions if a.dest == "scenario").choices
    return [(name, a.option_strings[0]) for name, sub in subs.items() for a in sub._actions
            if a.type in (int, float) and a.option_strings and not a.choices]     # argparse refuses a non-choice


@pytest.mark.parametrize("name, option", numeric_options())
def test_every_numeric_option_refuses_a_negative_value_in_one_line(name, option):
    args = run_scenario.parser().parse_args([name, option, "-1"])
    with pytest.raises(TestbedError) as e:
        RunSettings(slots=args.slots, cpu_placement=args.cpu_placement, ecn=args.ecn)   # the run's settings, first
        SCENARIOS[name].prepare(args)
    assert "\n" not in str(e.value) and option.lstrip("-").split("-")[0] in str(e.value)


def test_a_tensor_parallel_group_replays_inside_one_server_or_its_system_is_left_out():
    """A tp-8 file on 8 GPUs replays on HPN 7.0's servers of 8 on 8 rails (one server, its group on
    the scale-up domain); the systems whose servers hold 4 are left out with the reason, and refused
    where named. A tp-4 file keeps EFLOPS' servers on BiGraph at 8 ranks as at 16, so a --ranks
    sweep does not move its groups onto the fabric between N0 and N."""
    from scenarios import training_scaling
    parse = run_scenario.parser().parse_args
    tp8 = ["training_scaling", "--workload", "tests/data/workloads/tp8_allreduce_8.txt"]
    plan = training_scaling.prepare(parse(tp8))
    assert [(p[0], p[2].name) for p in plan.points] == [("hpn7-ring", "HPN7(S=1, H=1, R=8, A=2, planes=2)")]
    assert not plan.jobs["hpn7-ring", 8].split_groups(plan.points[0][2])
    assert set(plan._left_out) == {"bigraph-hdrm", "bigraph-ring", "clos-ecmp-hd", "single-nic-hd"}
    assert all("servers of 4 accelerators" in why for why in plan._left_out.values())
    with pytest.raises(TestbedError, match="servers of 4 accelerators.*leave it out of --systems"):
        training_scaling.prepare(parse(tp8 + ["--systems", "clos-ecmp-hd"]))
    gpt = training_scaling.prepare(parse(["training_scaling", "--workload", "tests/data/workloads/gpt13b_tp4_16.txt",
                                          "--ranks", "8,16", "--systems", "bigraph-hdrm"]))
    assert all(not job.split_groups(topo) for (_, n), job in gpt.jobs.items()
               for s, m, topo, *_ in gpt.points if m == n)


def test_training_scaling_leaves_out_the_default_systems_this_machine_cannot_run_and_says_why(monkeypatch):
    """A replay runs the systems that fit (a 32-rank HPN 7.0 offers 64 NIC ports' worth), names the
    ones it left out, and refuses a system named in --systems that does not fit."""
    from scenarios import training_scaling
    monkeypatch.setattr(training_scaling, "capacity", lambda mtu, datapath: 400)
    monkeypatch.setattr(training_scaling, "check_ranks", lambda *a: None)     # 32 ranks fit
    parse = run_scenario.parser().parse_args
    deepseek = ["training_scaling", "--workload", "tests/data/workloads/deepseek16b_tp2_pp2_ep4_32.txt"]
    plan = training_scaling.prepare(parse(deepseek))
    assert {p[0] for p in plan.points} == {"bigraph-hdrm", "bigraph-ring", "clos-ecmp-hd", "single-nic-hd"}
    assert "640 Mbit/s" in plan._left_out["hpn7-ring"]
    with pytest.raises(TestbedError, match="leave it out of --systems"):
        training_scaling.prepare(parse(deepseek + ["--systems", "hpn7-ring,clos-ecmp-hd"]))
    gpt = training_scaling.prepare(parse(["training_scaling", "--workload", "tests/data/workloads/gpt13b_tp4_16.txt"]))
    assert "hpn7-ring" in {p[0] for p in gpt.points} and not gpt._left_out
    small = training_scaling.prepare(parse(["training_scaling", "--ranks", "4,8", "--systems", "clos-ecmp-hd"]))
    assert not small._left_out
    from testbed.experiments.fingerprint import fingerprint
    assert "_left_out" not in fingerprint(plan)["parts"]       # what was left out says; it does nothing
