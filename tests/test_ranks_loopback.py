"""Real socket workers on loopback (no root): exact results, and a dead peer ends the run quickly."""
import os
import signal
import socket
import struct
import time
from types import SimpleNamespace

import pytest

from testbed.collectives.coordinator import AllreduceError, Coordinator, loopback_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.schedules import ALGORITHMS, example, rounds
from testbed.emulation.processes import free_port
from testbed.emulation.shaping import CONTROL_DSCP
from testbed.errors import TestbedError
from testbed.programs.rank import EAGER_LIMIT, SO_MAX_PACING_RATE, UNPACED, Plan, listen, starts_flow


@pytest.mark.parametrize("algorithm,ranks", [("ring", 3), ("ring", 8), ("hd", 4), ("hd", 8)])
def test_loopback_allreduce_is_exact(algorithm, ranks):
    addresses, launch = loopback_launcher(ranks)
    with Coordinator(algorithm, addresses, launch, timeout=10) as coordinator:
        for count in (1, ranks - 1, 1000, 65537):
            times, wrong = coordinator.run(count, iterations=2)
            assert wrong == 0
            assert len(times) == 2 and all(t > 0 for t in times)
    assert all(p.poll() is not None for p in coordinator.procs)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_collective_is_exact_over_sockets(algorithm):
    """Each schedule over real sockets: one-frame messages, and large ones by rendezvous (checked
    in every rank against numpy); 6 ranks where the algorithm takes any count, else 8."""
    ranks = 6 if _runs(algorithm, 6) else 8
    addresses, launch = loopback_launcher(ranks)
    with Coordinator(example(algorithm, ranks), addresses, launch, timeout=10) as coordinator:
        for count in (ranks * 4, ranks * 20000):
            _, wrong = coordinator.run(count, iterations=2)
            assert wrong == 0, count


def _runs(algorithm, ranks):
    try:
        example(algorithm, ranks).check(ranks)
        return True
    except TestbedError:
        return False


def test_dead_peer_ends_run_with_clear_error_in_bounded_time():
    addresses, launch = loopback_launcher(4)
    with Coordinator("ring", addresses, launch, timeout=3) as coordinator:
        coordinator.run(1000, iterations=1)
        os.kill(coordinator.procs[2].pid, signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(AllreduceError, match="rank"):
            coordinator.run(100000, iterations=1, timeout=20)
        assert time.monotonic() - start < 10
    assert all(p.poll() is not None for p in coordinator.procs)


@pytest.mark.parametrize("eager_limit", [None, 0])
def test_striped_streams_are_exact(eager_limit):
    """eager_limit 0: every message waits for the receiver's clear-to-send on each stream."""
    addresses, launch = loopback_launcher(4)
    with Coordinator("hd", addresses, launch, timeout=10, streams=3, eager_limit=eager_limit) as coordinator:
        for count in (1, 2, 1001, 65537):
            assert coordinator.run(count, iterations=2)[1] == 0


@pytest.mark.parametrize("algorithm", ["ring", "hd"])
def test_rendezvous_allreduce_is_exact(algorithm):
    addresses, launch = loopback_launcher(8)
    with Coordinator(algorithm, addresses, launch, timeout=10, eager_limit=0) as coordinator:
        for count in (1, 7, 1000, 65537):
            assert coordinator.run(count, iterations=2)[1] == 0


def test_paced_connections_hold_the_pacing_rate():
    """2 ranks, Ring: each sends 2 x 256 KiB; paced at 2 MB/s that takes at least ~0.26 s, where
    loopback alone takes milliseconds. Achieved against configured rate, measured in this run."""
    pacing, count = 2e6, 128 * 1024          # elements: 512 KiB of float32, half per Ring step
    _, launch = loopback_launcher(2)
    # Ranks pace only towards peers on another host, that is another address: 127.0.0.1 and .2.
    addresses = [(f"127.0.0.{r + 1}", free_port()) for r in range(2)]
    with Coordinator("ring", addresses, launch, timeout=10, pacing=pacing) as coordinator:
        times, wrong = coordinator.run(count, iterations=1)
    assert wrong == 0
    sent_per_rank = 4 * count                 # 2 steps of half the buffer each
    assert sent_per_rank / times[0] <= 1.2 * pacing, times


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_both_ends_agree_which_messages_wait_for_clear_to_send(algorithm):
    """A sender that waits for a clear-to-send its receiver never sends would hang the step: every
    message, matched as the ranks meet (``rounds``), starts a flow at both of its ends or at neither."""
    for ranks in (2, 4, 8, 16):
        schedule = example(algorithm, ranks)
        plans = [schedule.steps(r, ranks, 1024) for r in range(ranks)]
        for moved in rounds(schedule, ranks, 1024):
            for r, d, i, j in moved:
                assert plans[d][j].recv_from == r
                assert starts_flow(plans[r], i, "send_to") == starts_flow(plans[d], j, "recv_from"), (r, d, i, j)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_plan_paces_acks_and_rendezvous_only_above_the_eager_limit(algorithm):
    """One-frame messages go unpaced and eagerly, both ways on the lower rank's connection of a pair;
    larger ones go on the sender's own connection, paced, ACKed after every read, and wait for a
    clear-to-send where they start a flow."""
    ranks, count, pacing = 8, 64 * 1024, 10 ** 6        # 256 KiB: steps from 16 KiB up to 128 KiB
    for r in range(ranks):
        out = {p: [socket.socket()] for p in range(ranks) if p != r}
        inc = {p: [socket.socket()] for p in range(ranks) if p != r}
        pair = {p: out[p] if r < p else inc[p] for p in out}
        paced = [s for [s] in (*out.values(), *inc.values())]
        schedule = example(algorithm, ranks)
        rank = SimpleNamespace(schedule=schedule, rank=r, ranks=ranks, inc=inc, out=out, pair=pair,
                               eager_limit=EAGER_LIMIT, pacing=pacing, paced=paced)
        for n in (256, count):                          # 1 KiB and 256 KiB collectives
            plan = Plan(rank, n)
            assert plan.one_frame == (n == 256)
            sending = {sock for parts in plan.sends for sock, part in parts}
            for i, step in enumerate(plan.steps):
                large = ELEMENT_BYTES * (step.recv[1] - step.recv[0]) > EAGER_LIMIT
                assert plan.sizes[i] == ELEMENT_BYTES * (step.recv[1] - step.recv[0])
                assert plan.quickack[i] == int(large)
                assert plan.clear_to_send[i] == (large and starts_flow(plan.steps, i, "recv_from"))
                sends_large = ELEMENT_BYTES * (step.send[1] - step.send[0]) > EAGER_LIMIT
                assert plan.rendezvous[i] == (sends_large and starts_flow(plan.steps, i, "send_to"))
                if step.recv_from is None:
                    assert plan.receives[i] == [] and not plan.clear_to_send[i]
                else:
                    [(arriving, _)] = plan.receives[i]
                    assert arriving is (pair if plan.one_frame else inc)[step.recv_from][0]
                if step.send_to is None:
                    assert plan.sends[i] == [] and not plan.rendezvous[i]
                    continue
                [(sock, _)] = plan.sends[i]
                assert sock is (pair if plan.one_frame else out)[step.send_to][0]
                rate = struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8))[0]
                assert rate == (pacing if sends_large else UNPACED)
            for [sock] in inc.values():
                if sock not in sending:     # carries only clear-to-send bytes
                    assert struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8))[0] == UNPACED
        for sock in paced:
            sock.close()


@pytest.mark.parametrize("control", [CONTROL_DSCP, None])
def test_receiving_connections_take_the_control_class_from_the_listener(control):
    """Its clear-to-sends and ACKs carry the control class from the first packet on, and the
    connections the rank opens keep the default."""
    listener = listen(("127.0.0.1", 0), 1, control)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    try:
        assert accepted.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == (control or 0) << 2
        assert client.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 0
    finally:
        for sock in (accepted, client, listener):
            sock.close()
