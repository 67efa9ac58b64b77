"""SimAI workload files read and checked without root: the example AICB-format file, scaling, and
one-line refusals of files that are not what SimAI reads."""
from pathlib import Path

import pytest

from scenarios.training_scaling import system_fabric
from testbed.collectives import workload
from testbed.collectives.placements import nccl_ring, place_jobs
from testbed.errors import TestbedError
from testbed.probes.collisions import predicted_collided_steps
from testbed.routing.plan import deterministic_routes
from testbed.runs.jobs import Job, bus_bytes, scaleup_seconds
from testbed.topology import HPN7, BiGraph

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workloads" / "moe_small.txt"
DATA = ROOT / "tests" / "data" / "workloads"


def test_the_example_file_reads_as_simai_writes_it():
    w = workload.read(EXAMPLE)
    assert w.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD" and w.parameters["ep"] == "4"
    assert len(w.layers) == 9
    assert w.collectives() == ["allgather", "reducescatter", "allreduce", "alltoall"]
    moe = w.layers[5].phases["forward"]
    assert (moe.collective, moe.group, moe.size, moe.compute_ns) == ("alltoall", "EP", 16777216, 2400000)
    sequence = w.sequence()
    assert len(sequence) == 9 + 2 * 9
    assert [p for _, _, p, _ in sequence[:9]] == ["forward"] * 9
    assert sequence[9][:2] == (8, w.layers[-1].name)      # the backward pass runs the layers in reverse
    assert w.compute_s() == pytest.approx(sum(p.compute_ns for layer in w.layers for p in layer.phases.values())
                                          / 1e9 + 9 * 100e-9)


def test_sizes_scale_to_whole_blocks_of_at_least_one_element_per_rank():
    assert workload.scaled_count(8388608, 10e6 / 400e9, 16) == 48           # 210 B: 52 elements -> 3 per rank
    assert workload.scaled_count(100, 1e-6, 8) == 8
    assert workload.scaled_count(1 << 20, 1.0, 16) == 262144


@pytest.mark.parametrize("text, message", [
    ("", "a parallelism line, a layer count"),
    ("DATA\n2\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n", "says 2 layers but 1 layer lines follow"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64\n", "a layer line has 12 fields"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 GATHER 64 1\n", "unknown collective 'GATHER'"),
    ("DATA\n1\nl -1 x NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n", "forward compute time should be a number"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n", "no layer runs a collective"),
])
def test_files_that_are_not_simai_workloads_are_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "w.txt"
    path.write_text(text)
    with pytest.raises(TestbedError, match=message) as caught:
        workload.read(path)
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_refused():
    with pytest.raises(TestbedError, match="cannot read it"):
        workload.read("/nonexistent/workload.txt")


def test_a_file_names_its_groups_and_its_gpu_count():
    gpt = workload.read(DATA / "gpt13b_tp4_16.txt")
    assert gpt.gpus == 16 and gpt.groups().describe() == "16 GPUs: tp 4 x dp 4 x pp 1"
    deepseek = workload.read(DATA / "deepseek16b_tp2_pp2_ep4_32.txt")
    groups = deepseek.groups()
    assert (groups.tp, groups.pp, groups.dp, groups.ep, groups.dp_ep) == (2, 2, 8, 4, 2)
    assert deepseek.micro_batches() == 1 * 2                             # vpp x ga
    assert deepseek.pipeline_bytes() == 262144 * 1 * 2                 # pp_comm x vpp x ga, written without a colon
    assert deepseek.groups(64).dp == 16                                # --ranks: the data-parallel size follows


def test_each_collective_runs_in_the_group_its_phase_and_suffix_name():
    deepseek = workload.read(DATA / "deepseek16b_tp2_pp2_ep4_32.txt")
    job = Job("ds", deepseek, deepseek.groups(), tuple(f"h{i}" for i in range(32)))
    phases, tail = job.phases()
    said = [(step.label, step.collective, step.kind) for step in phases]
    assert said[:3] == [("attention_layer forward", "allreduce", "TP"), ("moe_route forward", "alltoall", "EP"),
                        ("mlp_layer forward", "allreduce", "TP")]
    # activations to the next stage, one send per micro-batch (vpp 1 x ga 2), and their gradients back
    assert said[3:5] == [("pipeline forward 1/2", "pipeline_forward", "PP"),
                         ("pipeline forward 2/2", "pipeline_forward", "PP")]
    assert said[-2:] == [("pipeline backward 1/2", "pipeline_backward", "PP"),
                         ("pipeline backward 2/2", "pipeline_backward", "PP")]
    assert {s.size for s in phases if s.kind == "PP"} == {262144}      # pp_comm each
    backward = said[5:-2]
    assert ("moe_grad_norm weight_grad", "allreduce", "DP_EP") in backward
    assert ("grad_param_comm weight_grad", "reducescatter", "DP") in backward
    assert ("grad_gather weight_grad", "allgather", "DP") in backward
    assert ("moe_route input_grad", "alltoall", "EP") in backward and ("mlp_layer input_grad", "allreduce", "TP") in \
        backward
    assert phases[0].compute_s == pytest.approx(3 * 1e-9 + 300000e-9)  # the compute before the first collective
    assert [s.blocking for s in phases if s.phase == "weight_grad"] == [False] * 3   # SimAI issues these, not waits
    assert not any(s.blocking for s in phases if s.kind == "PP")     # overlapping other micro-batches' compute
    assert all(s.blocking for s in phases if s.phase != "weight_grad" and s.kind != "PP")
    assert tail == pytest.approx(6 * 100e-9)                           # the weight updates after the last


def test_a_layer_s_forward_pass_waits_for_its_gradients_whether_or_not_it_has_a_collective():
    """The replay's timeline: before the forward computation of every layer that issues a weight
    gradient's collective, a wait for that collective of the iteration before. A data-parallel
    job's only collective is its gradients' allreduce: without the wait its iterations took the
    computation alone while the allreduces piled up behind them."""
    synthetic = workload.data_parallel(8, 1 << 19, 1.7)
    job = Job("dp", synthetic, synthetic.groups(), tuple(f"h{i}" for i in range(8)))
    steps, _ = job.phases(waits=True)
    assert [(s.phase, s.collective, s.compute_s) for s in steps] == [("wait", None, 0.0), ("weight_grad", "allreduce",
                                                                                          pytest.approx(1.7))]
    assert job.phases()[0] == steps[1:]                                # the collectives alone: unchanged
    deepseek = workload.read(DATA / "deepseek16b_tp2_pp2_ep4_32.txt")
    job = Job("ds", deepseek, deepseek.groups(), tuple(f"h{i}" for i in range(32)))
    plain, tail = job.phases()
    timed, same_tail = job.phases(waits=True)
    assert [s.label for s in timed if s.phase != "wait"] == [s.label for s in plain]
    assert sum(s.compute_s for s in timed) == pytest.approx(sum(s.compute_s for s in plain)) and tail == same_tail
    waits = [(k, s) for k, s in enumerate(timed) if s.phase == "wait"]
    assert {s.layer for _, s in waits} == {s.layer for s in plain if s.phase == "weight_grad"}
    for k, wait in waits:                  # in the forward pass, after the layers before it only
        assert all(s.phase in ("wait", "forward") and s.layer < wait.layer for s in timed[:k])


def test_a_tensor_parallel_group_is_one_servers_accelerators_and_data_parallel_crosses_servers():
    gpt = workload.read(DATA / "gpt13b_tp4_16.txt")
    topo = BiGraph(2, 8)                       # 8 servers of 2: tp 4 spans two servers
    wide = BiGraph(4, 4)                       # 4 servers of 4: tp 4 is one server
    for fabric, inside in ((topo, False), (wide, True)):
        hosts = place_jobs(fabric, [16])[0]
        servers = [{fabric.hosts[hosts[r]].server for r in g} for g in gpt.groups().groups("TP")]
        assert all((len(s) == 1) == inside for s in servers)
        assert all(len({fabric.hosts[hosts[r]].server for r in g}) == 4 for g in gpt.groups().groups("DP"))
    for ranks in (16, 32):                     # training_scaling's BiGraph systems have EFLOPS' servers
        topo, _, variant, (schedule, order) = system_fabric("bigraph-hdrm", ranks, 10, 100, 0)
        hosts = place_jobs(topo, [ranks])[0]
        assert all(len({topo.hosts[hosts[r]].server for r in g}) == 1 for g in gpt.groups(ranks).groups("TP"))
        assert predicted_collided_steps(schedule, order, topo, deterministic_routes(topo)) == 0   # HDRM's own
    hpn = HPN7(2, 2, 4, 2)                     # 4 servers of 4 accelerators, one per rail
    hosts = place_jobs(hpn, [16])[0]
    rails = [{hpn.hosts[hosts[r]].rail for r in g} for g in gpt.groups().groups("DP")]
    assert rails == [{0}, {1}, {2}, {3}]       # a data-parallel group stays on its rail, as HPN places it


def test_fragmented_jobs_cross_segments_at_every_server_hop_and_meet_there():
    hpn = HPN7(2, 4, 2, 2)                     # two segments of four servers of two accelerators
    jobs = place_jobs(hpn, [8, 8], "fragmented")
    for hosts in jobs:
        ring = nccl_ring(hpn, hosts)
        servers = [hpn.hosts[h].server for h in ring]
        hops = [(a, b) for a, b in zip(ring, ring[1:] + ring[:1]) if hpn.hosts[a].server != hpn.hosts[b].server]
        assert len(set(servers)) == 4 and len(hops) == 4
        assert all(hpn.segment_of(hpn.hosts[a]) != hpn.segment_of(hpn.hosts[b]) for a, b in hops)
    spread = place_jobs(hpn, [8, 8], "spread")
    crossing = [sum(hpn.segment_of(hpn.hosts[a]) != hpn.segment_of(hpn.hosts[b])
                    for a, b in zip(ring, ring[1:] + ring[:1])) for ring in (nccl_ring(hpn, h) for h in spread)]
    assert crossing == [2, 2]                  # spread keeps half its hops inside a segment
    assert sorted(h for hosts in jobs for h in hosts) == sorted(hpn.hosts)


def test_bus_bytes_and_the_scale_up_domains_time():
    assert bus_bytes("allreduce", 4, 1000) == pytest.approx(2 * 3 / 4 * 1000 * 4)
    assert bus_bytes("alltoall", 4, 1000) == pytest.approx(3 / 4 * 1000 * 4)
    assert scaleup_seconds("allgather", 4, 450e9 * 4 / 3, 3600) == pytest.approx(1.0)   # 450 GB/s each way


@pytest.mark.parametrize("header, message", [
    ("model_parallel_NPU_group: 3 all_gpus: 16", "does not divide the job's 16 GPUs"),
    ("model_parallel_NPU_group: 2 ep: 3 all_gpus: 16", "expert parallel 3 does not divide the data-parallel size 8"),
    ("model_parallel_NPU_group: x all_gpus: 16", "model_parallel_NPU_group should be a whole number"),
])
def test_a_header_whose_groups_do_not_fit_is_refused_in_one_line(tmp_path, header, message):
    path = tmp_path / "w.txt"
    path.write_text(f"HYBRID_TRANSFORMER_FWD_IN_BCKWD {header}\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n")
    with pytest.raises(TestbedError, match=message):
        workload.read(path)


def test_a_file_without_a_gpu_count_needs_ranks(tmp_path):
    path = tmp_path / "no_gpus.txt"
    path.write_text("DATA model_parallel_NPU_group: 1 ep: 1 pp: 1\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n")
    w = workload.read(path)
    assert w.gpus is None
    with pytest.raises(TestbedError, match="names no GPU count .*: give the ranks to replay it on with --ranks"):
        w.groups()
    assert w.groups(8).gpus == 8             # given the ranks, it replays


def aicb_file(path, tp, pp, ep, gpus, ga=2, layers=4, sequence_parallel=True, checkpoints=0):
    """A workload file in the exact shape AICB's SimAI_training_workload_generator.dump_file writes:
    its header (vpp is the layer count, pp_comm a float where sequence parallelism divides it by tp,
    0 without pipeline parallelism), the layer count, then tab-separated Work_Item fields."""
    pp_comm = 2 * 1 * 4096 * 5120
    if sequence_parallel:
        pp_comm /= tp
    header = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: {pp} vpp: {layers} "
              f"ga: {ga} all_gpus: {gpus} checkpoints: {checkpoints} checkpoint_initiates: 0 "
              + (f"pp_comm: {pp_comm}" if pp != 1 else "pp_comm: 0"))
    items = [("grad_gather", 1, "NONE", 0, 1, "NONE", 0, 1, "ALLGATHER", 26214400, 100),
             ("grad_param_comm", 1, "NONE", 0, 1, "NONE", 0, 1, "REDUCESCATTER", 52428800, 100),
             ("grad_param_compute", 1, "NONE", 0, 2500000, "NONE", 0, 1, "NONE", 0, 100)]
    for _ in range(ga):
        for k in range(layers):
            items += [(f"attention_column{k}", 1750840, "ALLGATHER", 41943040, 875420, "REDUCESCATTER", 41943040,
                       875420, "NONE", 0, 100),
                      (f"mlp_row{k}", 1750840, "REDUCESCATTER", 41943040, 875420, "ALLGATHER", 41943040, 875420,
                       "NONE", 0, 100)]
    lines = [header, str(len(items))] + ["\t".join(map(str, (name, -1, *rest))) for name, *rest in items]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("tp, pp, gpus", [(4, 1, 16), (2, 2, 16), (2, 4, 32)])
def test_a_file_as_aicb_writes_it_replays_at_pp_1_2_and_4(tmp_path, tp, pp, gpus):
    path = aicb_file(tmp_path / f"aicb_pp{pp}.txt", tp, pp, 1, gpus)
    w = workload.read(path)
    groups = w.groups()
    assert (groups.tp, groups.pp, groups.dp) == (tp, pp, gpus // (tp * pp))
    assert w.pipeline_bytes() == (2 * 4096 * 5120 // tp * 4 * 2 if pp > 1 else 0)   # pp_comm (a float) x vpp x ga
    steps, _ = Job("aicb", w, groups, tuple(f"h{i}" for i in range(gpus))).phases()
    kinds = [s.kind for s in steps]
    # both ways, one send per micro-batch (AICB writes vpp as the layer count, 4 here, and ga 2), not a ring
    assert ("PP" in kinds) == (pp > 1) and kinds.count("PP") == (2 * 4 * 2 if pp > 1 else 0)
    assert {s.kind for s in steps if s.phase == "weight_grad"} == {"DP"}


def test_activation_recomputation_is_refused_in_one_line(tmp_path):
    path = aicb_file(tmp_path / "recompute.txt", 2, 2, 1, 16, checkpoints=2)
    with pytest.raises(TestbedError, match="activation recomputation .* is not replayed") as e:
        workload.read(path)
    assert "\n" not in str(e.value)


def test_a_header_number_written_as_a_fraction_is_refused(tmp_path):
    path = aicb_file(tmp_path / "half.txt", 2, 2, 1, 16)
    path.write_text(path.read_text().replace("pp_comm: 20971520.0", "pp_comm: 20971520.5"))
    with pytest.raises(TestbedError, match="pp_comm should be a whole number"):
        workload.read(path)


def test_simai_s_end_to_end_summary_is_read_in_seconds():
    """bench.simai_side_by_side reads the summary SimAI's analytical mode writes last into
    EndToEnd.csv (Layer.cc: column names, then 'value (share%)' cells, in microseconds)."""
    from bench.simai_side_by_side import summary, table
    text = ("layer_name,run,fwd compute,wg compute\nattention,run,100,200\n"
            "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, Expose_PP_comm, "
            "bubble time, total comp, total exposed comm, Total time\n"
            "gpt-, 1500 (15.00%), 0 (0.00%), 2500 (25.00%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 6000 (60.00%), "
            "4000 (40.00%), 10000\n")
    got = summary(text)
    assert got == {"DP": 0.0015, "DP_EP": 0.0, "TP": 0.0025, "EP": 0.0, "PP": 0.0, "bubble": 0.0, "iteration": 0.01}
    rows = table(got, {"TP": 0.005, "DP": 0.0, "EP": 0.0, "DP_EP": 0.0, "PP": 0.0, "bubble": 0.0, "iteration": 0.0125})
    # no computation row: both sides take the file's compute times as written
    assert [(r[0], r[3]) for r in rows] == [("TP", 2.0), ("DP", 0.0), ("iteration", 1.25)]


def test_a_replay_at_one_rank_count_claims_no_scaling():
    """Against N0 itself every linear ratio is 1: a run at one rank count has no ratio to check a
    scaling claim on (it reads NOT MEASURED), a run that scaled has one per system."""
    from scenarios.training_scaling import CLAIMS, headline
    from testbed.experiments.claims import check_claims
    row = lambda system, ranks, ratio: {"system": system, "ranks": ranks, "linear_ratio": ratio, "iteration_s": 0.1}
    alone = headline([row("bigraph-hdrm", 32, 1.0), row("single-nic-hd", 32, 1.0)], 32)
    assert not any("linear ratio" in k for k in alone)
    assert {c["verdict"] for c in check_claims(CLAIMS, alone)} == {"NOT MEASURED"}
    scaled = headline([row("bigraph-hdrm", 4, 1.0), row("bigraph-hdrm", 32, 0.9), row("single-nic-hd", 32, 0.3)], 4)
    assert scaled["bigraph-hdrm linear ratio at 32"] == 0.9
    assert {c["verdict"] for c in check_claims(CLAIMS, scaled)} == {"holds"}


def test_simai_is_found_with_the_checkout_its_ratio_tables_are_read_from(tmp_path):
    """SimAI_analytical opens astra-sim-alibabacloud/inputs/ratio/*.csv from its working folder: the
    bench finds the checkout above the binary, or refuses in one line."""
    from bench.simai_side_by_side import RATIOS, simai_binary
    built = tmp_path / "SimAI" / "astra-sim-alibabacloud" / "build" / "SimAI_analytical"
    built.parent.mkdir(parents=True)
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    (tmp_path / "SimAI" / "bin").mkdir()
    (tmp_path / "SimAI" / "bin" / "SimAI_analytical").symlink_to(built)
    with pytest.raises(TestbedError, match="no astra-sim-alibabacloud/inputs/ratio above"):
        simai_binary(tmp_path / "SimAI")
    (tmp_path / "SimAI" / RATIOS).mkdir(parents=True)
    assert simai_binary(tmp_path / "SimAI") == (built, tmp_path / "SimAI")
    with pytest.raises(TestbedError, match="no SimAI_analytical there"):
        simai_binary(tmp_path)


def test_a_file_whose_tp_does_not_divide_a_server_is_refused_and_a_split_group_is_said():
    gpt = workload.read(DATA / "gpt13b_tp4_16.txt")                  # tp 4
    narrow = BiGraph(2, 8)                                           # servers of 2 accelerators
    job = Job("gpt", gpt, gpt.groups(), tuple(place_jobs(narrow, [16])[0]))
    with pytest.raises(TestbedError, match=r"tensor parallel 4 does not divide .*servers of 2 accelerators: use"):
        job.check(narrow)
    wide = BiGraph(4, 4)                                             # servers of 4
    packed = tuple(place_jobs(wide, [16])[0])
    Job("gpt", gpt, gpt.groups(), packed).check(wide)
    assert Job("gpt", gpt, gpt.groups(), packed).split_note(wide) == ""
    shifted = packed[2:] + packed[:2]                                # every TP group straddles two servers
    job = Job("gpt", gpt, gpt.groups(), shifted)
    job.check(wide)                                                  # allowed ...
    assert len(job.split_groups(wide)) == 4
    assert job.split_note(wide).startswith("4 of 4 tensor-parallel groups span servers")    # ... and said
    # servers whose accelerators share one host (single-nic-hd): a server's width is its ranks there
    single = BiGraph(1, 4)
    shared = tuple(h for h in sorted(single.hosts) for _ in range(4))
    assert Job("gpt", gpt, gpt.groups(), shared).server_width(single) == 4


def test_a_pipeline_stage_s_time_leaves_the_embedding_layer_and_the_update_out_as_simai_s():
    phases = lambda ns: {name: workload.Phase(ns, None, "", 0) for name in workload.PHASES}
    w = workload.Workload("x", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", {"pp": "2", "ga": "4", "vpp": "2"},
                          [workload.Layer("embedding_layer", phases(5_000_000), 1_000_000),
                           workload.Layer("attention_layer", phases(2_000_000), 1_000_000)])
    assert w.stage_compute_s() == pytest.approx(3 * 0.002)        # the attention layer's three phases alone
    assert w.compute_s() == pytest.approx(3 * 0.005 + 3 * 0.002 + 2 * 0.001)
    assert w.micro_batches() == 8
