"""PyTorch DistributedDataParallel on the emulated fabric: a small model trained on synthetic data
with the gloo backend on the CPU, as a student's first DDP job would be, started once per rank by
the testbed's launcher with torchrun's environment:

    sudo python3 run_scenario.py launch --topology bigraph:2,8 -- python3 examples/ddp_train.py --steps 50

Each rank draws its own batches; DDP averages the gradients over the fabric (gloo's allreduce), so
every rank holds the same model after each step. At the end each rank evaluates its model on one
batch all ranks share and prints the loss: equal on every rank, DDP's own check that the gradients
were averaged. Each step's time is reported to the launcher (``testbed.step``)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import testbed

FEATURES, CLASSES = 64, 10


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (default %(default)s)")
    parser.add_argument("--hidden", type=int, default=256, help="the hidden layer's width (default %(default)s)")
    parser.add_argument("--batch", type=int, default=32, help="samples per rank per step (default %(default)s)")
    args = parser.parse_args()
    dist.init_process_group("gloo")                 # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)                            # DDP broadcasts rank 0's weights anyway
    model = nn.Sequential(nn.Linear(FEATURES, args.hidden), nn.ReLU(), nn.Linear(args.hidden, CLASSES))
    ddp = DistributedDataParallel(model)
    optimiser = torch.optim.SGD(ddp.parameters(), lr=0.05)
    mine = torch.Generator().manual_seed(1000 + rank)
    for _ in range(args.steps):
        x = torch.randn(args.batch, FEATURES, generator=mine)
        y = torch.randint(0, CLASSES, (args.batch,), generator=mine)
        start = time.perf_counter()
        optimiser.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()     # the gradients' allreduce runs here
        optimiser.step()
        testbed.step(time.perf_counter() - start)
    shared = torch.Generator().manual_seed(7)
    with torch.no_grad():
        x = torch.randn(256, FEATURES, generator=shared)
        loss = nn.functional.cross_entropy(model(x), torch.randint(0, CLASSES, (256,), generator=shared)).item()
    parameters = sum(p.numel() for p in model.parameters())
    print(json.dumps({"rank": rank, "world": world, "host": os.environ.get("TESTBED_HOST"), "loss": loss,
                      "parameters": parameters, "gradient_bytes": parameters * 4, "steps": args.steps}), flush=True)
    # every rank through before any tears its process group down: one rank of 16 that left first
    # made another abort in gloo's teardown ("terminate called without an active exception")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
