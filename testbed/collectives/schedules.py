"""Allreduce schedules as data: for each rank and step, whom to send which elements to, and whom to
receive which elements from (reduced into the buffer, or copied over it). No sockets, no root.

A schedule knows ranks, not hosts; ``placements`` says which host runs which rank.
"""
from dataclasses import dataclass

import numpy as np

from testbed.errors import TestbedError


@dataclass(frozen=True)
class Step:
    send_to: int
    send: tuple          # (first element, end element)
    recv_from: int
    recv: tuple
    reduce: bool         # True: buf[recv] += received; False: buf[recv] = received


def chunk_bounds(count, parts):
    """Boundaries of `parts` nearly equal chunks of `count` elements (as numpy.array_split)."""
    return [(i * count) // parts for i in range(parts + 1)]


class Ring:
    """Reduce-scatter then allgather around the ring 0 -> 1 -> ... -> p-1 -> 0: 2(p-1) steps."""
    name = "ring"

    def uniform_step(self, rank, ranks, count):
        """(steps, peer, elements): every step sends one chunk (at most this many elements) to
        the next rank, so a model can take one step for all of them."""
        return 2 * (ranks - 1), (rank + 1) % ranks, -(-count // ranks)

    def check(self, ranks):
        if ranks < 2:
            raise TestbedError(f"allreduce needs at least 2 ranks (got {ranks})")

    def steps(self, rank, ranks, count):
        bounds = chunk_bounds(count, ranks)
        chunk = lambda i: (bounds[i % ranks], bounds[i % ranks + 1])
        nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
        out = [Step(nxt, chunk(rank - s), prv, chunk(rank - s - 1), True) for s in range(ranks - 1)]
        out += [Step(nxt, chunk(rank + 1 - s), prv, chunk(rank - s), False) for s in range(ranks - 1)]
        return out


class HalvingDoubling:
    """Rabenseifner (as Thakur, Rabenseifner and Gropp 2005 describe it): recursive-halving
    reduce-scatter, whose first exchange is with the rank p/2 away (rank ^ p/2, then ^ p/4, ... ^ 1)
    and halves the data each step, then recursive-doubling allgather in the reverse order:
    2 log2(p) steps. p must be a power of two."""
    name = "hd"

    def check(self, ranks):
        if ranks < 2 or ranks & (ranks - 1):
            lower = 1 << (ranks.bit_length() - 1)
            raise TestbedError(f"halving-doubling needs a power-of-two rank count (got {ranks}): "
                               f"use {max(2, lower)} or {lower * 2} ranks")

    def steps(self, rank, ranks, count):
        lo, hi, out, kept = 0, count, [], []
        mask = ranks >> 1
        while mask:
            partner = rank ^ mask
            mid = lo + (hi - lo) // 2
            mine, theirs = ((lo, mid), (mid, hi)) if rank & mask == 0 else ((mid, hi), (lo, mid))
            out.append(Step(partner, theirs, partner, mine, True))
            kept.append((partner, mine, theirs))
            lo, hi = mine
            mask >>= 1
        for partner, mine, theirs in reversed(kept):
            out.append(Step(partner, mine, partner, theirs, False))
        return out


ALGORITHMS = {cls.name: cls for cls in (Ring, HalvingDoubling)}


def simulate(schedule, inputs):
    """Run a schedule in memory, step by step with every rank sending at once; returns the buffers."""
    ranks = len(inputs)
    bufs = [np.array(x, copy=True) for x in inputs]
    plans = [schedule.steps(r, ranks, len(inputs[0])) for r in range(ranks)]
    for i in range(len(plans[0])):
        sent = {(r, plans[r][i].send_to): bufs[r][slice(*plans[r][i].send)].copy() for r in range(ranks)}
        for r in range(ranks):
            step = plans[r][i]
            data = sent[step.recv_from, r]
            assert len(data) == step.recv[1] - step.recv[0]
            if step.reduce:
                bufs[r][slice(*step.recv)] += data
            else:
                bufs[r][slice(*step.recv)] = data
    return bufs


def step_pairs(schedule, ranks, count=None):
    """For each step, the (sender, receiver) rank pairs that move data at once."""
    count = count or ranks * 4
    plans = [schedule.steps(r, ranks, count) for r in range(ranks)]
    return [[(r, plans[r][i].send_to) for r in range(ranks)] for i in range(len(plans[0]))]
