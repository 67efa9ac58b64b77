"""The data every rank reduces: small integers stored as float32, so that every sum is exact and a
result can be compared with numpy's sum to the last bit."""
import numpy as np

DTYPE = np.float32
ELEMENT_BYTES = np.dtype(DTYPE).itemsize


def rank_input(rank, count):
    i = np.arange(count, dtype=np.int64)
    return (((rank * 7 + i * 13) % 97) - 48).astype(DTYPE)


def expected_sum(ranks, count):
    total = np.zeros(count, dtype=np.int64)
    for q in range(ranks):
        total += rank_input(q, count).astype(np.int64)
    return total.astype(DTYPE)
