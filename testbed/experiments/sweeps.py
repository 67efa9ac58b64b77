"""nccl-tests' size sweeps on one fabric: build it, check it, measure its idle step latency (the
model's latency floor), then each collective's variants over the sizes, every row checked against
numpy and judged against the model (``api.Emulated.sweep``)."""


def run_sweeps(experiment, topo, collectives, sizes, warmup, iters, *, mtu, about, csv, heading,
               eager_limit=None, folder=None, done=None, label=None):
    """collectives: {collective: {variant: (schedule, hosts)}}; about: the run's JSON, which gets
    the datapath, the fabric check, the idle step latency and every row (also written to `csv` as
    it is measured, with label's fields if given); heading(collective, emu): the line printed above
    a collective's table; done(collective) after it. Returns ({collective: rows}, the fabric check)."""
    out = {}
    about.setdefault("rows", [])

    def keep(row):
        row.update(label or {})
        about["rows"].append(row)
        experiment.results.append(csv, row)

    with experiment.emulate(topo, folder=folder, mtu=mtu) as emu:
        about["datapath"] = emu.datapath
        check = emu.check()
        about["fidelity"] = check.summary
        print("\n" + "\n".join(check.lines))
        about["idle_step_us"] = idle = emu.idle_step_us
        print(f"  idle step latency  {idle:.0f} us per step of a 1 KiB allreduce between the farthest hosts")
        for collective, placed in collectives.items():
            print(heading(collective, emu))
            sweep = emu.sweep(list(placed), sizes, warmup=warmup, iters=iters, placed=placed, on_row=keep,
                              progress=print, eager_limit=eager_limit)
            out[collective] = [c.row for c in sweep]
            if done:
                done(collective)
    return out, check
