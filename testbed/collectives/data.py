"""What each collective's buffers hold, before and after, as nccl-tests defines the collectives:
small integers stored as float32, so that every sum is exact and a result can be compared with
numpy's to the last bit.

``count`` is the collective's size in elements, as nccl-tests counts it: the reduced buffer
(allreduce, broadcast, sendrecv), the gathered output (allgather), the input that is scattered
(reduce-scatter), or all a rank sends (alltoall, p blocks of count / p). A rank's buffer holds
``buffer_factor`` x count elements: an alltoall's or a sendrecv's input, then its output.
``expected`` gives the part of the buffer a rank checks and what numpy says it must hold.
"""
import numpy as np

DTYPE = np.float32
ELEMENT_BYTES = np.dtype(DTYPE).itemsize
UNSET = -1000      # what a rank's buffer holds where it has not received yet: no input ever is


def rank_input(rank, count):
    i = np.arange(count, dtype=np.int64)
    return (((rank * 7 + i * 13) % 97) - 48).astype(DTYPE)


def expected_sum(ranks, count):
    total = np.zeros(count, dtype=np.int64)
    for q in range(ranks):
        total += rank_input(q, count).astype(np.int64)
    return total.astype(DTYPE)


def blocks(count, ranks):
    return [((i * count) // ranks, ((i + 1) * count) // ranks) for i in range(ranks)]


class Collective:
    name = None
    buffer_factor = 1

    def busbw_factor(self, ranks):
        """nccl-tests' bus bandwidth over algorithm bandwidth: what each rank's links carry for
        every byte of the collective's size."""
        return (ranks - 1) / ranks

    def buffer(self, rank, ranks, count):
        """A rank's buffer before the collective."""
        raise NotImplementedError

    def expected(self, rank, ranks, count):
        """((first, end), values): the part of the buffer to check and what it must hold after."""
        raise NotImplementedError


class Allreduce(Collective):
    name = "allreduce"

    def busbw_factor(self, ranks):
        return 2 * (ranks - 1) / ranks

    def buffer(self, rank, ranks, count):
        return rank_input(rank, count)

    def expected(self, rank, ranks, count):
        return (0, count), expected_sum(ranks, count)


class ReduceScatter(Collective):
    name = "reducescatter"

    def buffer(self, rank, ranks, count):
        return rank_input(rank, count)

    def expected(self, rank, ranks, count):
        lo, hi = blocks(count, ranks)[rank]
        return (lo, hi), expected_sum(ranks, count)[lo:hi]


class Allgather(Collective):
    name = "allgather"

    def _gathered(self, ranks, count):
        return np.concatenate([rank_input(q, count)[lo:hi] for q, (lo, hi) in enumerate(blocks(count, ranks))])

    def buffer(self, rank, ranks, count):
        buf = np.full(count, UNSET, dtype=DTYPE)
        lo, hi = blocks(count, ranks)[rank]
        buf[lo:hi] = rank_input(rank, count)[lo:hi]
        return buf

    def expected(self, rank, ranks, count):
        return (0, count), self._gathered(ranks, count)


class Alltoall(Collective):
    name, buffer_factor = "alltoall", 2

    def buffer(self, rank, ranks, count):
        out = np.full(count, UNSET, dtype=DTYPE)
        lo, hi = blocks(count, ranks)[rank]
        out[lo:hi] = rank_input(rank, count)[lo:hi]      # a rank's block for itself stays home
        return np.concatenate([rank_input(rank, count), out])

    def expected(self, rank, ranks, count):
        lo, hi = blocks(count, ranks)[rank]
        return (count, 2 * count), np.concatenate([rank_input(q, count)[lo:hi] for q in range(ranks)])


class Broadcast(Collective):
    """From rank 0."""
    name = "broadcast"

    def busbw_factor(self, ranks):
        return 1.0

    def buffer(self, rank, ranks, count):
        return rank_input(0, count) if rank == 0 else np.full(count, UNSET, dtype=DTYPE)

    def expected(self, rank, ranks, count):
        return (0, count), rank_input(0, count)


class SendRecv(Collective):
    """Every rank sends its input to the next rank and receives the previous one's."""
    name, buffer_factor = "sendrecv", 2

    def busbw_factor(self, ranks):
        return 1.0

    def buffer(self, rank, ranks, count):
        return np.concatenate([rank_input(rank, count), np.full(count, UNSET, dtype=DTYPE)])

    def expected(self, rank, ranks, count):
        return (count, 2 * count), rank_input((rank - 1) % ranks, count)


class PipelineSend(Collective):
    """A pipeline's point-to-point pass between neighbouring stages, not a ring: forward, stage r
    sends its input to stage r + 1 (the last sends nothing, the first receives nothing), as
    activations go; backward, to stage r - 1, as their gradients come back."""
    buffer_factor = 2

    def __init__(self, name, step):
        self.name, self.step = name, step

    def busbw_factor(self, ranks):
        return 1.0

    def buffer(self, rank, ranks, count):
        return np.concatenate([rank_input(rank, count), np.full(count, UNSET, dtype=DTYPE)])

    def expected(self, rank, ranks, count):
        sender = rank - self.step
        if not 0 <= sender < ranks:
            return (count, count), np.empty(0, dtype=DTYPE)      # the stage nothing comes to checks nothing
        return (count, 2 * count), rank_input(sender, count)


COLLECTIVES = {c.name: c for c in (Allreduce(), ReduceScatter(), Allgather(), Alltoall(), Broadcast(), SendRecv(),
                                   PipelineSend("pipeline_forward", 1), PipelineSend("pipeline_backward", -1))}
