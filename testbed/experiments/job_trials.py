"""Trials on one running job: a fabric built once, checked, and a collective kept running back to
back under watch (``api.Emulated.watch``) while each trial does what it does to it (a fault
injected and undone, a window measured) and returns its row. A job that gives up (a stall past
the watch's limit) is started again for the trials left."""


def run_watched(experiment, topo, routing, comm, size, trials, trial, *, draw, stall_limit, mtu, folder,
                on_row, prepare=None):
    """trial(emu, watch, item, ready) -> row for each item of `trials` in order; prepare(emu, watch)
    -> ready runs each time the job starts (e.g. the links its connections cross). on_row(row)
    sees each row. Returns the fabric check."""
    pending = list(trials)
    with experiment.emulate(topo, routing, folder=folder, mtu=mtu) as emu:
        check = experiment.check(emu.check(), getattr(topo, "name", None))
        while pending:
            with emu.watch(comm, size, draw=draw, stall_limit=stall_limit) as watch:
                ready = prepare(emu, watch) if prepare else None
                while pending and watch.alive():
                    on_row(trial(emu, watch, pending.pop(0), ready))
            if watch.error:
                print(f"  the job gave up ({watch.error}); starting it again", flush=True)
    return check
