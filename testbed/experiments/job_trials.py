"""Trials on one running job: a fabric built once, checked, and a collective kept running back to
back under watch (``api.Emulated.watch``) while each trial does what it does to it (a fault
injected and undone, a window measured) and returns its row. A job that gives up (a stall past
the watch's limit) is started again for the trials left. With `labelled`, each watch of the job is
kept as a trace (``faultbench.trace``) with its labels beside it: traceN/ and traceN-labels.parquet
in the emulation's folder."""
from testbed.faultbench import labels as fault_labels


def run_watched(experiment, topo, routing, comm, size, trials, trial, *, draw, stall_limit, mtu, folder,
                on_row, prepare=None, labelled=None):
    """trial(emu, watch, item, ready) -> row for each item of `trials` in order; prepare(emu, watch)
    -> ready runs each time the job starts (e.g. the links its connections cross). on_row(row)
    sees each row; labelled(rows) -> label rows, where the trials' rows label a trace
    (``faultbench.labels.from_rows``). Returns the fabric check."""
    pending = list(trials)
    with experiment.emulate(topo, routing, folder=folder, mtu=mtu) as emu:
        check = experiment.check(emu.check(), getattr(topo, "name", None))
        while pending:
            with emu.watch(comm, size, draw=draw, stall_limit=stall_limit) as watch:
                ready, rows = prepare(emu, watch) if prepare else None, []
                while pending and watch.alive():
                    rows.append(trial(emu, watch, pending.pop(0), ready))
                    on_row(rows[-1])
                if labelled:
                    name = f"trace{len(list(folder.glob('trace*-labels.parquet')))}"
                    watch.save(folder / name)
                    fault_labels.write(folder / f"{name}-labels.parquet", labelled([r for each in rows for r in each]))
            if watch.error:
                print(f"  the job gave up ({watch.error}); starting it again", flush=True)
    return check
