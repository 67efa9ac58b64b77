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
from testbed.collectives.schedules import ALGORITHMS
from testbed.emulation.programs import free_port
from testbed.programs.rank import EAGER_LIMIT, SO_MAX_PACING_RATE, UNPACED, Plan, starts_flow


@pytest.mark.parametrize("algorithm,ranks", [("ring", 3), ("ring", 8), ("hd", 4), ("hd", 8)])
def test_loopback_allreduce_is_exact(algorithm, ranks):
    addresses, launch = loopback_launcher(ranks)
    with Coordinator(algorithm, addresses, launch, timeout=10) as coordinator:
        for count in (1, ranks - 1, 1000, 65537):
            times, wrong = coordinator.run(count, iterations=2)
            assert wrong == 0
            assert len(times) == 2 and all(t > 0 for t in times)
    assert all(p.poll() is not None for p in coordinator.procs)


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
    """A sender that waits for a clear-to-send its receiver never sends would hang the step."""
    for ranks in (2, 4, 8, 16):
        plans = [ALGORITHMS[algorithm]().steps(r, ranks, 1024) for r in range(ranks)]
        for r, steps in enumerate(plans):
            for i, step in enumerate(steps):
                peer = plans[step.send_to]
                assert peer[i].recv_from == r
                assert starts_flow(steps, i, "send_to") == starts_flow(peer, i, "recv_from"), (r, i)


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
        rank = SimpleNamespace(schedule=ALGORITHMS[algorithm](), rank=r, ranks=ranks, inc=inc, out=out, pair=pair,
                               eager_limit=EAGER_LIMIT, pacing=pacing, paced=paced)
        for n in (256, count):                          # 1 KiB and 256 KiB allreduces
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
                [(sock, _)] = plan.sends[i]
                [(arriving, _)] = plan.receives[i]
                assert sock is (pair if plan.one_frame else out)[step.send_to][0]
                assert arriving is (pair if plan.one_frame else inc)[step.recv_from][0]
                rate = struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8))[0]
                assert rate == (pacing if sends_large else UNPACED)
            for [sock] in inc.values():
                if sock not in sending:     # carries only clear-to-send bytes
                    assert struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8))[0] == UNPACED
        for sock in paced:
            sock.close()
