"""One scorer for every detector, alarm by alarm over the whole trace (``detectors.Alarm`` against
``labels``): an alarm is **right** when a fault was active at its time (from its start to GRACE_S
after its end) and the alarm names that fault's kind and place; any other alarm in a trial is a
**false alarm**, whether a fault was active or not; alarms before the first trial (the monitor's
baseline filling) are left out and counted. A fault is **found** when a right alarm names it,
**noticed** when any alarm comes while it is active (a detector that tells when but not what).
Precision is over alarms, recall over faults, each with its 95% Wilson interval, per C4 class and
over all; filters such as "strong" apply to recall only. False alarms per hour are over the
trials' fault-free time (outside every fault and its grace), of the false alarms raised in it."""
import statistics

from testbed.report.fault_scores import CLASSES, FOUND_CLASSES, STRONG, f1
from testbed.report.paired import wilson

GRACE_S = 2.0       # a fault's effects outlast it (TCP's retransmission timer, queues draining)


def place_of(kind, place):
    """A place as a set, so that a link's two ends match in either order."""
    return frozenset(place.split("-", 1)) if kind in ("link-slow", "link-down") else frozenset((place,))


def is_strong(label):
    """A fault the benchmark asks to be found: every kind without a magnitude, a hang, a link at
    half its rate or less, a rank at 0.7 of its CPU or less (``report.fault_scores.strong``)."""
    bound = STRONG.get(label["kind"])
    return label["magnitude"] is None or bound is None or label["magnitude"] <= bound


def judge(alarms, labels, grace=GRACE_S):
    """[(alarm, verdict, the label it names or None)]: verdict "right", "false" or "outside"."""
    faults = [f for f in labels if f["kind"] != "none"]
    trials = {(f["trial_start"], f["trial_end"]) for f in labels}
    out = []
    for alarm in alarms:
        if not any(a < alarm.time <= b + grace for a, b in trials):
            out.append((alarm, "outside", None))
            continue
        named = next((f for f in faults if f["start"] <= alarm.time <= f["end"] + grace
                      and alarm.kind == f["expected_kind"]
                      and place_of(alarm.kind, alarm.place) == place_of(f["expected_kind"], f["expected_place"])), None)
        out.append((alarm, "right" if named else "false", named))
    return out


def fault_free_s(labels, grace=GRACE_S):
    """Seconds of the trials outside every fault and its grace."""
    total = 0.0
    for span in {(f["trial_start"], f["trial_end"]) for f in labels}:
        busy = sorted((max(span[0], f["start"]), min(span[1], f["end"] + grace)) for f in labels
                      if f["kind"] != "none" and (f["trial_start"], f["trial_end"]) == span)
        total += span[1] - span[0] - sum(max(0.0, b - a) for a, b in busy)
    return total


def score(alarms, labels, iteration_ends=(), grace=GRACE_S):
    """The detector's score on one trace or several (alarms and labels of the same traces; times
    of different traces must not be compared, so score each and add with ``combined``)."""
    judged = judge(alarms, labels, grace)
    faults = [f for f in labels if f["kind"] != "none"]
    found = {}
    for alarm, verdict, f in judged:
        if verdict == "right":
            found.setdefault(id(f), alarm)
    noticed = {id(f) for f in faults for alarm, verdict, _ in judged
               if verdict != "outside" and f["start"] <= alarm.time <= f["end"] + grace}
    ends = sorted(iteration_ends)
    rows = [{"class": CLASSES.get(f["kind"], "other"), "strong": is_strong(f), "found": id(f) in found,
             "noticed": id(f) in noticed,
             "detect_s": found[id(f)].time - f["start"] if id(f) in found else None,
             "detect_iterations": sum(f["start"] < e <= found[id(f)].time for e in ends) if id(f) in found else None}
            for f in faults]
    alarm_rows = [{"class": FOUND_CLASSES.get(a.kind, "unplaced"), "right": v == "right",
                   "fault_free": not any(f["start"] <= a.time <= f["end"] + grace for f in faults)}
                  for a, v, _ in judged if v != "outside"]
    return {"faults": rows, "alarms": alarm_rows, "outside": sum(v == "outside" for _, v, _ in judged),
            "fault_free_s": fault_free_s(labels, grace)}


def combined(scores):
    """Several traces' scores as one."""
    return {"faults": [r for s in scores for r in s["faults"]], "alarms": [a for s in scores for a in s["alarms"]],
            "outside": sum(s["outside"] for s in scores), "fault_free_s": sum(s["fault_free_s"] for s in scores)}


def figures(s):
    """{row: {figure: value}}: per C4 class and "overall", precision and recall (share, low, high)
    and F1, recall on strong faults, the share noticed; overall, false alarms per hour of
    fault-free time and the median time to detect (seconds and iterations)."""
    out = {}
    for c in list(dict.fromkeys(CLASSES.values())) + ["overall"]:
        faults = [f for f in s["faults"] if c in ("overall", f["class"])]
        alarms = [a for a in s["alarms"] if c in ("overall", a["class"])]
        if not faults and not alarms:
            continue
        precision = wilson(sum(a["right"] for a in alarms), len(alarms))
        recall = wilson(sum(f["found"] for f in faults), len(faults))
        strong = [f for f in faults if f["strong"]]
        out[c] = {"precision": precision, "recall": recall, "F1": f1(precision[0], recall[0]),
                  "recall, strong": wilson(sum(f["found"] for f in strong), len(strong)),
                  "noticed": wilson(sum(f["noticed"] for f in faults), len(faults)),
                  "faults": len(faults), "alarms": len(alarms)}
    hours = s["fault_free_s"] / 3600
    false = sum(a["fault_free"] for a in s["alarms"])     # every alarm outside a fault is a false one
    detect = [f for f in s["faults"] if f["found"]]
    out.setdefault("overall", {}).update(
        {"false alarms per hour": false / hours if hours else None, "fault-free hours": hours,
         "detect_s": statistics.median(f["detect_s"] for f in detect) if detect else None,
         "detect_iterations": statistics.median(f["detect_iterations"] for f in detect) if detect else None,
         "outside": s["outside"]})
    return out
