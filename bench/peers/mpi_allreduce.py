"""One OpenMPI rank (mpi4py) of bench.peers: for each size, 3 untimed allreduces, then `iters` back to
back after a barrier; rank 0 prints [{size, seconds (the slowest rank's mean), wrong}] as JSON, each
result checked against the sum every rank expects.

    mpirun ... python bench/peers/mpi_allreduce.py SIZES ITERS
"""
import json
import sys
import time

import numpy as np
from mpi4py import MPI


def main(sizes, iters):
    comm, out = MPI.COMM_WORLD, []
    for size in sizes:
        mine = np.full(size // 4, comm.rank + 1, dtype=np.float32)
        got = np.empty_like(mine)
        for _ in range(3):
            comm.Allreduce(mine, got, op=MPI.SUM)
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(iters):
            comm.Allreduce(mine, got, op=MPI.SUM)
        seconds = comm.gather((time.perf_counter() - start) / iters, root=0)
        wrong = comm.gather(int(not np.allclose(got, comm.size * (comm.size + 1) / 2)), root=0)
        if comm.rank == 0:
            out.append({"size": size, "seconds": max(seconds), "wrong": sum(wrong)})
    if comm.rank == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1].split(",")], int(sys.argv[2]))
