"""Collective schedules as data: for each rank and step, whom to send which elements of its buffer
to, and whom to receive which elements from (reduced into the buffer, or copied over it). No
sockets, no root. One class per algorithm, as Gloo has; each names the collective it runs
(``testbed.collectives.data`` says what that collective's buffer holds before and after).

A step may only send (``recv_from`` None) or only receive (``send_to`` None): a broadcast's root
only sends, a pipeline's last stage only receives. A rank runs its steps in order, each once its
send has gone and its receive has arrived, so ranks need not be at the same step index: a
pipelined broadcast's ranks run a step apart per hop. ``rounds`` plays a schedule the way the ranks
meet, and ``simulate`` checks one against numpy.

A schedule knows ranks, not hosts; ``placements`` says which host runs which rank.
"""
from dataclasses import dataclass

import numpy as np

from testbed.collectives.data import COLLECTIVES, ELEMENT_BYTES
from testbed.errors import TestbedError

NOTHING = (0, 0)


@dataclass(frozen=True)
class Step:
    send_to: object      # a rank, or None: this step sends nothing
    send: tuple          # (first element, end element)
    recv_from: object    # a rank, or None: this step receives nothing
    recv: tuple
    reduce: bool         # True: buf[recv] += received; False: buf[recv] = received


def send_only(to, part):
    return Step(to, part, None, NOTHING, False)


def recv_only(frm, part):
    return Step(None, NOTHING, frm, part, False)


def chunk_bounds(count, parts):
    """Boundaries of `parts` nearly equal chunks of `count` elements (as numpy.array_split)."""
    return [(i * count) // parts for i in range(parts + 1)]


def _at_least_two(ranks, what):
    if ranks < 2:
        raise TestbedError(f"{what} needs at least 2 ranks (got {ranks})")


def _power_of_two(ranks, what):
    if ranks < 2 or ranks & (ranks - 1):
        lower = 1 << (ranks.bit_length() - 1)
        raise TestbedError(f"{what} needs a power-of-two rank count (got {ranks}): "
                           f"use {max(2, lower)} or {lower * 2} ranks")


class Schedule:
    name = collective = None
    exact_blocks = False    # the collective's blocks must be count / ranks elements each

    def check(self, ranks):
        _at_least_two(ranks, self.name)

    def check_count(self, ranks, count):
        """Refuse a count this schedule cannot split; the fix names the nearest sizes that work."""
        if self.exact_blocks and count % ranks:
            down, up = count // ranks * ranks, -(-count // ranks) * ranks
            raise TestbedError(f"{self.name} on {ranks} ranks needs a size of a whole number of {ranks}-element "
                               f"blocks (got {count * ELEMENT_BYTES} B): use {max(down, ranks) * ELEMENT_BYTES} "
                               f"or {up * ELEMENT_BYTES} B")

    def args(self):
        """What a rank needs besides the name to build this schedule (ALGORITHMS[name](**args))."""
        return {}

    def steps(self, rank, ranks, count):
        raise NotImplementedError


# allreduce

class Ring(Schedule):
    """Reduce-scatter then allgather around the ring 0 -> 1 -> ... -> p-1 -> 0: 2(p-1) steps."""
    name, collective = "ring", "allreduce"

    def uniform_step(self, rank, ranks, count):
        """(steps, peer, elements): every step sends one chunk (at most this many elements) to
        the next rank, so a model can take one step for all of them."""
        return 2 * (ranks - 1), (rank + 1) % ranks, -(-count // ranks)

    def check(self, ranks):
        _at_least_two(ranks, "allreduce")

    def steps(self, rank, ranks, count):
        return ring_reduce_scatter(rank, ranks, count, 1) + ring_allgather(rank, ranks, count, 1)


def ring_reduce_scatter(rank, ranks, count, owned):
    """p-1 ring steps after which rank r holds the sum of chunk r + owned."""
    bounds = chunk_bounds(count, ranks)
    chunk = lambda i: (bounds[i % ranks], bounds[i % ranks + 1])
    nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
    return [Step(nxt, chunk(rank + owned - 1 - s), prv, chunk(rank + owned - 2 - s), True) for s in range(ranks - 1)]


def ring_allgather(rank, ranks, count, owned):
    """p-1 ring steps that spread chunk r + owned of every rank r to all."""
    bounds = chunk_bounds(count, ranks)
    chunk = lambda i: (bounds[i % ranks], bounds[i % ranks + 1])
    nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
    return [Step(nxt, chunk(rank + owned - s), prv, chunk(rank + owned - s - 1), False) for s in range(ranks - 1)]


class HalvingDoubling(Schedule):
    """Rabenseifner (as Thakur, Rabenseifner and Gropp 2005 describe it): recursive-halving
    reduce-scatter, whose first exchange is with the rank p/2 away (rank ^ p/2, then ^ p/4, ... ^ 1)
    and halves the data each step, then recursive-doubling allgather in the reverse order:
    2 log2(p) steps. p must be a power of two."""
    name, collective = "hd", "allreduce"

    def check(self, ranks):
        _power_of_two(ranks, "halving-doubling")

    def steps(self, rank, ranks, count):
        halving = recursive_halving(rank, ranks, count)
        return halving + [Step(s.recv_from, s.recv, s.send_to, s.send, False) for s in reversed(halving)]


class RecursiveDoublingAllreduce(Schedule):
    """log2(p) exchanges of the whole vector with HD's partners in HD's order (rank ^ p/2, ^ p/4 ...
    ^ 1), each adding the partner's vector: half HD's steps, each moving all n elements where HD's
    move n/2 ... n/p and back. The choice where a step's latency outweighs its bytes (small
    messages), as MPI libraries and NCCL switch algorithms by size; each step's pairs are one of
    HD's, so EFLOPS' rank mapping keeps them on distinct links as it does HD's."""
    name, collective = "rd", "allreduce"

    def check(self, ranks):
        _power_of_two(ranks, "recursive doubling")

    def steps(self, rank, ranks, count):
        out, mask = [], ranks >> 1
        while mask:
            out.append(Step(rank ^ mask, (0, count), rank ^ mask, (0, count), True))
            mask >>= 1
        return out


class BySize(Schedule):
    """Several allreduce schedules on one placement, one of them chosen for each size (``choose``:
    the sweep asks the model of the fabric which is fastest), as MPI's decision functions and
    NCCL's tuner choose by size. Not a schedule a rank runs: its ranks hold every choice on the
    same connections and run the chosen one."""
    name, collective = "auto", "allreduce"

    def __init__(self, choices):
        self.choices = dict(choices)          # {variant name: schedule}

    def check(self, ranks):
        for schedule in self.choices.values():
            schedule.check(ranks)

    def check_count(self, ranks, count):
        if count < ranks:       # HD's blocks would be empty: its time, and the choice, mean nothing
            raise TestbedError(f"auto on {ranks} ranks needs one element per rank or more (got {count * ELEMENT_BYTES}"
                               f" B): use {ranks * ELEMENT_BYTES} B or more")
        for schedule in self.choices.values():
            schedule.check_count(ranks, count)

    def steps(self, rank, ranks, count):
        raise TypeError("auto chooses a schedule per size: run one of its choices")


def recursive_halving(rank, ranks, count):
    """log2(p) exchanges with rank ^ p/2, ^ p/4 ... ^ 1, each reducing half of what is left; rank r
    ends holding the sum of chunk r (of p equal chunks, when p divides count)."""
    lo, hi, out = 0, count, []
    mask = ranks >> 1
    while mask:
        partner = rank ^ mask
        mid = lo + (hi - lo) // 2
        mine, theirs = ((lo, mid), (mid, hi)) if rank & mask == 0 else ((mid, hi), (lo, mid))
        out.append(Step(partner, theirs, partner, mine, True))
        lo, hi = mine
        mask >>= 1
    return out


# reduce-scatter and allgather: rank r ends with (reduce-scatter) or starts from (allgather) chunk r

class RingReduceScatter(Schedule):
    """The first half of Ring allreduce, shifted so that rank r ends with chunk r: p-1 steps."""
    name, collective = "ring_reducescatter", "reducescatter"

    def uniform_step(self, rank, ranks, count):
        return ranks - 1, (rank + 1) % ranks, -(-count // ranks)

    def steps(self, rank, ranks, count):
        return ring_reduce_scatter(rank, ranks, count, 0)


class RecursiveHalving(Schedule):
    """The first half of halving-doubling: log2(p) steps, the first with the rank p/2 away, so that
    EFLOPS' rank mapping keeps every step's flows on distinct links as for HDRM."""
    name, collective, exact_blocks = "rh_reducescatter", "reducescatter", True

    def check(self, ranks):
        _power_of_two(ranks, "recursive halving")

    def steps(self, rank, ranks, count):
        return recursive_halving(rank, ranks, count)


class RingAllgather(Schedule):
    """The second half of Ring allreduce, from rank r's chunk r: p-1 steps."""
    name, collective = "ring_allgather", "allgather"

    def uniform_step(self, rank, ranks, count):
        return ranks - 1, (rank + 1) % ranks, -(-count // ranks)

    def steps(self, rank, ranks, count):
        return ring_allgather(rank, ranks, count, 0)


class RecursiveDoubling(Schedule):
    """The second half of halving-doubling: log2(p) steps, with rank ^ 1, ^ 2 ... ^ p/2, each
    doubling what a rank holds."""
    name, collective, exact_blocks = "rd_allgather", "allgather", True

    def check(self, ranks):
        _power_of_two(ranks, "recursive doubling")

    def steps(self, rank, ranks, count):
        return [Step(s.recv_from, s.recv, s.send_to, s.send, False)
                for s in reversed(recursive_halving(rank, ranks, count))]


# alltoall: the buffer holds the input (p blocks, block j for rank j) then the output (block j
# from rank j); a rank's own block is in place from the start

def _alltoall_step(rank, to, frm, ranks, count):
    b = chunk_bounds(count, ranks)
    return Step(to, (b[to], b[to + 1]), frm, (count + b[frm], count + b[frm + 1]), False)


class PairwiseAlltoall(Schedule):
    """p-1 steps; in step k rank i sends its block for i+k and receives from i-k (mod p): any p."""
    name, collective, exact_blocks = "pairwise_alltoall", "alltoall", True

    def steps(self, rank, ranks, count):
        return [_alltoall_step(rank, (rank + k) % ranks, (rank - k) % ranks, ranks, count) for k in range(1, ranks)]


class XorAlltoall(Schedule):
    """p-1 steps; in step k rank i exchanges with i xor k: partners pair off, p a power of two."""
    name, collective, exact_blocks = "xor_alltoall", "alltoall", True

    def check(self, ranks):
        _power_of_two(ranks, "xor alltoall")

    def steps(self, rank, ranks, count):
        return [_alltoall_step(rank, rank ^ k, rank ^ k, ranks, count) for k in range(1, ranks)]


class RoundsAlltoall(Schedule):
    """Alltoall in given rounds: rounds[k][i] is the rank i sends to in round k (None: none), each
    round a partial permutation and every pair once over all rounds (``placements.alltoall_rounds``
    chooses them so that a round's flows share no link: ranks - 1 perfect rounds where they exist)."""
    name, collective, exact_blocks = "rounds_alltoall", "alltoall", True

    def __init__(self, rounds=()):
        self.rounds = [list(r) for r in rounds]

    def args(self):
        return {"rounds": self.rounds}

    def check(self, ranks):
        _at_least_two(ranks, "alltoall")
        pairs = [(i, d) for r in self.rounds for i, d in enumerate(r) if d is not None]
        want = {(i, d) for i in range(ranks) for d in range(ranks) if i != d}
        if any(len(r) != ranks for r in self.rounds) or sorted(pairs) != sorted(want):
            raise TestbedError(f"alltoall rounds must send every pair of {ranks} ranks once")
        for r in self.rounds:
            if len({d for d in r if d is not None}) != sum(d is not None for d in r):
                raise TestbedError("an alltoall round must send to each rank at most once")

    def steps(self, rank, ranks, count):
        out = []
        for r in self.rounds:
            to, frm = r[rank], next((i for i, d in enumerate(r) if d == rank), None)
            if to is None and frm is None:
                continue
            step = _alltoall_step(rank, to if to is not None else rank, frm if frm is not None else rank, ranks, count)
            out.append(Step(to, step.send if to is not None else NOTHING, frm,
                            step.recv if frm is not None else NOTHING, False))
        return out


# broadcast from rank 0

class PipelinedRingBroadcast(Schedule):
    """Rank 0's buffer along the chain 0 -> 1 -> ... -> p-1 in `pieces` parts (default p): a rank
    forwards part k while it receives part k+1, so the time is (pieces + p - 2) parts' transfers."""
    name, collective = "ring_broadcast", "broadcast"

    def __init__(self, pieces=None):
        self.pieces = pieces

    def args(self):
        return {"pieces": self.pieces}

    def steps(self, rank, ranks, count):
        pieces = min(self.pieces or ranks, max(count, 1))
        b = chunk_bounds(count, pieces)
        part = lambda k: (b[k], b[k + 1])
        nxt = rank + 1 if rank + 1 < ranks else None
        if rank == 0:
            return [send_only(nxt, part(k)) for k in range(pieces)]
        out = [Step(nxt if k and nxt else None, part(k - 1) if k and nxt else NOTHING, rank - 1, part(k), False)
               for k in range(pieces)]
        return out + ([send_only(nxt, part(pieces - 1))] if nxt else [])


class BinomialTreeBroadcast(Schedule):
    """Rank 0's buffer down a binomial tree: in round j every rank r < 2^j that has it sends the
    whole buffer to r + 2^j; ceil(log2 p) rounds, any p."""
    name, collective = "tree_broadcast", "broadcast"

    def steps(self, rank, ranks, count):
        out, first = [], rank.bit_length()         # rank r > 0 receives in round bit_length(r) - 1
        if rank:
            out.append(recv_only(rank - (1 << (first - 1)), (0, count)))
        j = first
        while rank + (1 << j) < ranks:
            out.append(send_only(rank + (1 << j), (0, count)))
            j += 1
        return out


# send/recv: every rank sends its buffer to the next and receives the previous one's, at once (as
# nccl-tests' sendrecv); on 2 ranks, the two directions between a pair of hosts

class SendRecv(Schedule):
    name, collective = "sendrecv", "sendrecv"

    def uniform_step(self, rank, ranks, count):
        return 1, (rank + 1) % ranks, count

    def steps(self, rank, ranks, count):
        return [Step((rank + 1) % ranks, (0, count), (rank - 1) % ranks, (count, 2 * count), False)]


# a pipeline's pass between neighbouring stages: a chain, forward (activations) or backward (their
# gradients), each stage's one step at once

class PipelineForward(Schedule):
    name, collective, step = "pipeline_forward", "pipeline_forward", 1

    def steps(self, rank, ranks, count):
        to, frm = rank + self.step, rank - self.step
        send_to = to if 0 <= to < ranks else None
        recv_from = frm if 0 <= frm < ranks else None
        return [Step(send_to, (0, count) if send_to is not None else NOTHING, recv_from,
                     (count, 2 * count) if recv_from is not None else NOTHING, False)]


class PipelineBackward(PipelineForward):
    name, collective, step = "pipeline_backward", "pipeline_backward", -1


ALGORITHMS = {cls.name: cls for cls in (Ring, HalvingDoubling, RecursiveDoublingAllreduce, RingReduceScatter,
                                        RecursiveHalving, RingAllgather, RecursiveDoubling, PairwiseAlltoall,
                                        XorAlltoall, RoundsAlltoall, PipelinedRingBroadcast, BinomialTreeBroadcast,
                                        SendRecv, PipelineForward, PipelineBackward)}


class Deadlock(AssertionError):
    pass


def rounds(schedule, ranks, count):
    """The schedule played as the ranks meet: in each round every transfer whose sender and
    receiver are both at its step moves, then every rank whose step is done goes on. Returns per
    round [(sender, receiver, sender's step, receiver's step)]; Deadlock when ranks wait on each
    other forever (a send is taken only by the step that receives it, as a rendezvous would)."""
    plans = [schedule.steps(r, ranks, count) for r in range(ranks)]
    at, sent, got = [0] * ranks, [False] * ranks, [False] * ranks
    out = []
    while any(at[r] < len(plans[r]) for r in range(ranks)):
        moved = []
        for r in range(ranks):
            if at[r] >= len(plans[r]) or sent[r] or plans[r][at[r]].send_to is None:
                continue
            d = plans[r][at[r]].send_to
            if at[d] < len(plans[d]) and plans[d][at[d]].recv_from == r and not got[d]:
                moved.append((r, d, at[r], at[d]))
        if not moved:
            raise Deadlock(f"{schedule.name} on {ranks} ranks: ranks wait on each other at steps {at}")
        for r, d, _, _ in moved:
            sent[r], got[d] = True, True
        for r in range(ranks):
            if at[r] < len(plans[r]):
                s = plans[r][at[r]]
                if (s.send_to is None or sent[r]) and (s.recv_from is None or got[r]):
                    at[r], sent[r], got[r] = at[r] + 1, False, False
        out.append(moved)
    return out


def simulate(schedule, buffers):
    """Run a schedule in memory as ``rounds`` plays it, each step's message taken from the buffer
    as the step starts; returns the buffers."""
    ranks, count = len(buffers), schedule_count(schedule, buffers)
    bufs = [np.array(x, copy=True) for x in buffers]
    plans = [schedule.steps(r, ranks, count) for r in range(ranks)]
    for moved in rounds(schedule, ranks, count):
        data = {(r, d): bufs[r][slice(*plans[r][i].send)].copy() for r, d, i, _ in moved}
        for r, d, _, j in moved:
            step = plans[d][j]
            assert len(data[r, d]) == step.recv[1] - step.recv[0]
            if step.reduce:
                bufs[d][slice(*step.recv)] += data[r, d]
            else:
                bufs[d][slice(*step.recv)] = data[r, d]
    return bufs


def schedule_count(schedule, buffers):
    return len(buffers[0]) // COLLECTIVES[schedule.collective].buffer_factor


def step_pairs(schedule, ranks, count=None):
    """For each round, the (sender, receiver) rank pairs that move data at once."""
    return [[(r, d) for r, d, _, _ in moved] for moved in rounds(schedule, ranks, count or ranks * 4)]


def example(name, ranks):
    """A schedule of this name for `ranks` ranks, with arguments where it needs them (an alltoall
    in rounds gets the pairwise exchange's): for tests and for the rank's own checks."""
    if name == RoundsAlltoall.name:
        return RoundsAlltoall([[(i + k) % ranks for i in range(ranks)] for k in range(1, ranks)])
    return ALGORITHMS[name]()
