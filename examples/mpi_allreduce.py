"""An MPI program on the emulated fabric (mpi4py over Open MPI), started by the testbed's launcher
with mpirun:

    sudo python3 run_scenario.py launch --mpi --topology bigraph:2,8 -- python3 examples/mpi_allreduce.py

Each rank allreduces a vector of its own numbers, checks the sum against numpy's, and reports each
step's time to the launcher (``testbed.step``); the last line of each rank is its result as JSON."""
import argparse
import json
import time

import numpy as np
from mpi4py import MPI

import testbed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="allreduces (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 << 10, help="bytes per allreduce (default %(default)s)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    count = max(1, args.bytes // 4)
    mine = np.arange(count, dtype=np.float32) % 1000 + rank
    expected = np.sum([np.arange(count, dtype=np.float32) % 1000 + r for r in range(size)], axis=0)
    got, wrong = np.empty_like(mine), 0
    for _ in range(args.steps):
        comm.Barrier()
        start = time.perf_counter()
        comm.Allreduce(mine, got, op=MPI.SUM)
        testbed.step(time.perf_counter() - start)
        wrong += int(not np.array_equal(got, expected))
    print(json.dumps({"rank": rank, "world": size, "wrong": wrong, "bytes": count * 4, "steps": args.steps}),
          flush=True)


if __name__ == "__main__":
    main()
