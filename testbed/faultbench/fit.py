"""A detector fitted on a train split: of the parameters its GRID offers, those that score best
there, alarm by alarm (``score``). Fitting sees the train split's labels; the test split's it
never sees, and is scored on with what fitting chose."""
import itertools

from testbed.faultbench import score


def fit(detector, train):
    """(parameters, their F1 on train): the detector class's GRID point with the best alarm-level F1
    over `train` ([(trace, labels)]), ties to fewer false alarms in fault-free time, then to the
    grid's order; ({}, None) for a detector with no grid or no train split."""
    grid = getattr(detector, "GRID", {})
    if not grid or not train:
        return {}, None
    best = None
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        found = detector(**params)
        scored = score.combined([score.score(found.detect(trace), labels) for trace, labels in train])
        f1 = score.figures(scored)["overall"].get("F1") or 0.0
        key = (f1, -sum(a["fault_free"] for a in scored["alarms"]))
        if best is None or key > best[0]:
            best = (key, params)
    return best[1], best[0][0]
