"""nccl-tests' size sweeps on one fabric: build it, check it, measure its idle step latency (the
model's latency floor), then each collective's variants over the sizes, every row checked against
numpy and judged against the model (``api.Emulated.sweep``). With recursive doubling among the
allreduce variants, also the idle fabric's exchange of the smallest size (a recursive-doubling step's floor)."""
from testbed.runs.sweep import WHOLE_VECTOR


def run_sweeps(experiment, topo, collectives, sizes, warmup, iters, *, mtu, csv, heading, eager_limit=None,
               folder=None, done=None, label=None, about=None):
    """collectives: {collective: {variant: (schedule, hosts)}}. Each row goes to the experiment
    (and `csv`), with label's fields if given; `about` (default: the run's JSON) gets the datapath,
    the fabric check, the idle step latency and the idle exchange; heading(collective, emu): the line above a
    collective's table; done(collective) after it. Returns ({collective: rows}, the fabric check)."""
    about = experiment.about if about is None else about
    out = {}
    with experiment.emulate(topo, folder=folder, mtu=mtu) as emu:
        about["datapath"] = emu.datapath
        check = experiment.check(emu.check(), (label or {}).get("form"))
        about["fidelity"] = check.summary
        about["idle_step_us"] = idle = emu.idle_step_us
        experiment.say(f"  idle step latency  {idle:.0f} us per step of a 1 KiB allreduce between the farthest hosts",
                       section="checks")
        if WHOLE_VECTOR & set(collectives.get("allreduce", {})):
            small = min(sizes)
            about["idle_exchange_us"] = exchange = emu.idle_exchange_us(small)
            experiment.say(f"  idle exchange      {exchange:.0f} us for {small} B each way between the farthest hosts "
                           "(2-rank recursive doubling: the floor of its steps at that size)", section="checks")
        for collective, placed in collectives.items():
            experiment.say(heading(collective, emu), section="rows")
            sweep = emu.sweep(list(placed), sizes, warmup=warmup, iters=iters, placed=placed,
                              on_row=lambda row: experiment.row(dict(row, **(label or {})), csv=csv),
                              progress=experiment.table, eager_limit=eager_limit)
            out[collective] = [dict(c.row, **(label or {})) for c in sweep]
            if done:
                done(collective)
    return out, check
