"""One PyTorch gloo rank of bench.peers: as mpi_allreduce.py, over torch.distributed's gloo backend.

    python bench/peers/gloo_allreduce.py RANK WORLD MASTER_IP INTERFACE SIZES ITERS
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

PORT = 29500


def main(rank, world, master, interface, sizes, iters):
    os.environ["GLOO_SOCKET_IFNAME"] = interface
    dist.init_process_group("gloo", init_method=f"tcp://{master}:{PORT}", rank=rank, world_size=world)
    out, expected = [], world * (world + 1) / 2
    for size in sizes:
        mine = torch.full((size // 4,), float(rank + 1))
        for _ in range(3):
            got = mine.clone()
            dist.all_reduce(got)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            got = mine.clone()
            dist.all_reduce(got)
        seconds = torch.tensor([(time.perf_counter() - start) / iters])
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        wrong = torch.tensor([int(not torch.allclose(got, torch.full_like(got, expected)))])
        dist.all_reduce(wrong)
        out.append({"size": size, "seconds": seconds.item(), "wrong": int(wrong.item())})
    if rank == 0:
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]), int(a[1]), a[2], a[3], [int(s) for s in a[4].split(",")], int(a[5]))
