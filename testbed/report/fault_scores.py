"""A fault localisation's score from its trials' rows: the confusion of injected against found
kinds, the shares located with their Wilson intervals, precision, recall and F1 per C4 class, the
time to the alarm that named the fault (seconds and iterations), the false alarms, what each kind
cost the collective, and what rerouting regained; the published detectors' figures beside them."""
import statistics

from testbed.report.paired import Comparison, figure, resampled, wilson

# C4's classes (Alibaba's C4, Dong et al.): a fault is in the communication or not, and it slows
# the job or stops it. A link, port or switch that stops carrying is communication, hung (until the
# fabric routes around it); a slowed link, communication, slow; a slowed rank, computation, slow; a
# stopped rank, computation, hung.
CLASSES = {"slow-link": "comm slow", "link-down": "comm hung", "flap": "comm hung", "switch-down": "comm hung",
           "port-down": "comm hung", "slow-rank": "compute slow", "hang-rank": "compute hung", "loss": "comm slow"}
FOUND_CLASSES = {"link-slow": "comm slow", "link-down": "comm hung", "switch-down": "comm hung",
                 "rank-slow": "compute slow", "rank-hung": "compute hung"}
# A fault's magnitude, by kind: a slowed link's fraction of its rate, a slowed rank's of the CPU it
# used, a hang's seconds; the bins of the detectability curve; and what counts as strong (a link at
# half its rate or less, a rank at 0.7 of its CPU or less: >= 30% slower where it computes; no
# lossy link: the done-means' score is over slowed links, ranks and the kinds without a magnitude).
MAGNITUDE = {"slow-link": ("how", "of its rate", ((0.3, 0.5), (0.5, 0.7), (0.7, 0.85), (0.85, 1.0))),
             "slow-rank": ("share_of_use", "of its CPU", ((0.4, 0.55), (0.55, 0.7), (0.7, 0.8), (0.8, 1.0))),
             "hang-rank": ("lasting_s", "s stopped", ((0.5, 1.5), (1.5, 3.0), (3.0, 60.0))),
             "loss": ("how", "of its packets dropped", ((0.01, 0.02), (0.02, 0.035), (0.035, 0.06)))}
STRONG = {"slow-link": 0.5, "slow-rank": 0.7, "loss": 0.0}
GREYHOUND_RECOVERY = "Greyhound/Falcon (ATC 2025): 1.58x throughput recovered on 256 GPUs with injected stragglers"
# what the production detectors publish, named as theirs (none of them can be rerun)
PUBLISHED = ("Minder (NSDI 2025): precision 0.904, F1 0.893, 3.6 s to react on average",
             "Greyhound/Falcon (ATC 2025): > 99% of fail-slows detected (alarm on a >= 10% shift)",
             "Holmes (NSDI 2025): 97.2% localised, within 30.3 s",
             "C4 (Alibaba): four classes as above; error-induced downtime from 31.19% to 1.16% of job time")


def f1(p, r):
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r else 0.0


def class_scores(rows):
    """{class: (precision (share, lo, hi), recall (share, lo, hi), F1)} and "overall": an alarm counts
    for its class when it named the fault's kind and place (``correct``); one on a fault-free trial,
    or naming the wrong kind or place, counts against the class it named."""
    out = {}
    for c in list(dict.fromkeys(CLASSES.values())) + ["overall"]:
        injected = [r for r in rows if r["injected"] != "none" and (c == "overall" or CLASSES.get(r["injected"]) == c)]
        named = [r for r in rows if r["found"] != "none" and (c == "overall" or FOUND_CLASSES.get(r["found"]) == c)]
        if not injected and not named:
            continue
        precision = wilson(sum(r["correct"] for r in named), len(named))
        recall = wilson(sum(r["correct"] for r in injected), len(injected))
        out[c] = (precision, recall, f1(precision[0], recall[0]))
    return out


def said(share):
    """A share with its interval, (share, low, high), as the tables print it; "-" where none."""
    return "-" if share is None or share[0] is None else f"{share[0]:.2f} [{share[1]:.2f}, {share[2]:.2f}]"


def class_lines(rows):
    """Precision, recall (Wilson intervals) and F1 per C4 class and over all."""
    lines = ["per class (C4's: communication or not, slow or hung), precision and recall [95% interval], F1:"]
    scores = class_scores(rows)
    scores["strong faults"] = class_scores(strong_and_free(rows)).get("overall", (None, None, None))
    for c, (p, r, f) in scores.items():
        lines.append(f"  {c:13s} precision {said(p):18s} recall {said(r):18s} F1 {'-' if f is None else f'{f:.2f}'}")
    return lines


def strong_and_free(rows):
    """The fault-free trials and those whose fault is strong (``strong``): the done-means' score."""
    return [r for r in rows if r["injected"] == "none" or strong(r)]


def magnitude(row):
    """A faulty row's magnitude on its kind's scale (MAGNITUDE), or None (a kind without one, or an
    injected slow rank given its CPU share outright)."""
    field = MAGNITUDE.get(row["injected"], (None,))[0]
    return row.get(field) if field else None


def strong(row):
    """A fault the done-means asks to be found: any kind without a magnitude, a hang, a link at half
    its rate or less, a rank at 0.7 of its CPU or less (no lossy link: its bound is 0)."""
    m, bound = magnitude(row), STRONG.get(row["injected"])
    return m is None or bound is None or m <= bound


def detectability(rows):
    """[(label, share located, Wilson low, high)] per kind with a magnitude and per bin of it that
    has trials: the located share against magnitude (the detectability curve)."""
    out = []
    for kind, (_, unit, bins) in MAGNITUDE.items():
        for low, high in bins:
            mine = [r for r in rows if r["injected"] == kind and low <= (magnitude(r) or -1) < high]
            if mine:
                said = f"{low:g}-{high:g}" if high < 60 else f">= {low:g}"
                located = sum(r["correct"] for r in mine)
                out.append((f"{kind} {said} {unit} (n={len(mine)})", *wilson(located, len(mine))))
    return out


def detectability_lines(rows):
    """The detectability curve as text: per kind and bin, located of trials, and where it falls below
    half."""
    lines = ["detectability: located (kind and place) by magnitude [95% interval]:"]
    for label, share, lo, hi in detectability(rows):
        lines.append(f"  {label:40s} {share:.0%} [{lo:.0%}, {hi:.0%}]" + ("  below half" if share < 0.5 else ""))
    return lines if len(lines) > 1 else []


def share_line(what, k, n):
    share, lo, hi = wilson(k, n)
    return f"{what}: {k} of {n}" + (f" = {share:.0%} [95% interval {lo:.0%}, {hi:.0%}]" if n else "")


def confusion_lines(rows, kinds, found_kinds):
    """Injected kind (rows, in the order of `kinds`) against found kind (columns)."""
    injected = [k for k in kinds + ("none",) if any(r["injected"] == k for r in rows)]
    width = max(len(k) for k in found_kinds) + 1
    lines = [f"  {'injected / found':18s}" + "".join(f"{k:>{width}s}" for k in found_kinds) + "  located"]
    for kind in injected:
        mine = [r for r in rows if r["injected"] == kind]
        cells = "".join(f"{sum(r['found'] == k for r in mine):>{width}d}" for k in found_kinds)
        lines.append(f"  {kind:18s}{cells}  {sum(r['correct'] for r in mine)}/{len(mine)}")
    return lines


def cost_line(rows, kind):
    """The collective's busbw during the fault over the same trial's window before: the mean of the
    trials' ratios and its 95% percentile bootstrap interval, inside the trials' range (fabrics differ
    in busbw, so ratios, not MB/s, are pooled)."""
    ratios = [r["during_over_before"] for r in rows if r["injected"] == kind and r["during_over_before"] is not None
              and not r.get("along")]        # a trial with two faults costs what both do
    e = resampled(ratios)
    said = figure(e, 2) + (f" over {e.n} trials" if e.n != 1 else " (1 trial: no interval)")
    return f"  {kind:12s} during/before {said}" + (f" (range {min(ratios):.2f}-{max(ratios):.2f})" if ratios else "")


def false_alarm_line(rows):
    """False alarms (incidents raised with no fault, or before a trial's fault) per hour of the
    monitoring without a fault (a faulty trial's before its injection)."""
    count = sum(r["false_alarms"] for r in rows)
    healthy = sum(r["healthy_s"] for r in rows)
    windows = sum(r.get("healthy_windows", 0) for r in rows)
    rate = (f" = {count / healthy * 3600:.1f} per hour" if healthy else "") + \
        (f", {10 * count / windows:.2f} per 10 windows" if windows else "")
    return f"false alarms (incidents): {count} in {healthy / 60:.1f} min of monitoring without a fault{rate}"


def together_line(rows):
    """How the trials with two faults at once fared, or '' where there were none."""
    two = {}
    for r in rows:
        if r.get("along"):
            two.setdefault((r["fabric"], r["trial"]), []).append(r["correct"])
    if not two:
        return ""
    both, one = sum(all(c) for c in two.values()), sum(sum(c) == 1 for c in two.values())
    return (f"two faults at once: {len(two)} trials, both located in {both}, one in {one}, neither in "
            f"{len(two) - both - one} (each fault is a row above: located where any alarm after the injection "
            "named it)")


def undecided_line(rows):
    """The windows the monitor left undecided (a queue grew too briefly to tell a slow link from
    congestion: neither an alarm nor the baseline), or '' for rows that do not say."""
    said = [r for r in rows if "undecided_windows" in r]
    if not said:
        return ""
    count, windows = sum(r["undecided_windows"] for r in said), sum(r["windows"] for r in said)
    return (f"undecided windows (a queue grew too briefly to tell a slow link from congestion): {count} of "
            f"{windows} ({count / max(windows, 1):.0%})")


def drift_line(rows):
    """False alarms over the fault-free stretches with a second job starting and stopping, or ''."""
    drift = [r for r in rows if r.get("drift_s")]
    if not drift:
        return ""
    count, windows = sum(r["false_alarms"] for r in drift), sum(r["healthy_windows"] for r in drift)
    kinds = sorted({a["kind"] for r in drift for a in r["alarms"] if a["new"]})
    return (f"with a second job starting and stopping ({sum(r['second_job_s'] for r in drift) / 60:.1f} of "
            f"{sum(r['healthy_s'] for r in drift) / 60:.1f} min on): {count} false alarms in {windows} windows = "
            f"{10 * count / max(windows, 1):.2f} per 10 windows" + (f" ({', '.join(kinds)})" if kinds else ""))


def straggler_line(rows):
    """False alarms over the fault-free trials of a job with a straggler from its start, or ''."""
    free = [r for r in rows if r.get("straggler") and r["injected"] == "none"]
    if not free:
        return ""
    count, windows = sum(r["false_alarms"] for r in free), sum(r["healthy_windows"] for r in free)
    alarmed = [r for r in free if r["found"] != "none"]
    named = sum(r["found_where"] == r["straggler"].split(" at ")[0] for r in alarmed)
    return (f"with a straggler slow from the job's start (no fault): {len(alarmed)} of {len(free)} fault-free "
            f"trials alarmed ({named} naming the straggler), {count} false alarms in {windows} windows = "
            f"{10 * count / max(windows, 1):.2f} per 10 windows")


def summary_lines(rows, kinds, found_kinds):
    """The score of trials whose faults were drawn from `kinds` and found as `found_kinds`."""
    faulty = [r for r in rows if r["injected"] != "none"]
    free = [r for r in rows if r["injected"] == "none"]
    lines = ["confusion (trials):"] + confusion_lines(rows, kinds, found_kinds)
    lines.append(share_line("located correctly (kind and place)", sum(r["correct"] for r in faulty), len(faulty)))
    hard = [r for r in faulty if strong(r)]
    lines.append(share_line("located, strong faults (links at <= 0.5 of their rate, ranks at <= 0.7 of their CPU, "
                            "every other kind)", sum(r["correct"] for r in hard), len(hard)))
    lines.append(share_line("kind right", sum(r["kind_correct"] for r in faulty), len(faulty)))
    lines.append(share_line("fault-free trials with an alarm", sum(r["found"] != "none" for r in free), len(free)))
    lines.append(false_alarm_line(rows))
    lines += [line for line in (drift_line(rows), straggler_line(rows), together_line(rows), undecided_line(rows))
              if line]
    lines += class_lines(rows)
    lines += detectability_lines(faulty)
    lines.append("time from injection to the alarm that named it, per kind: median s (range, trials), median "
                 "iterations of the job before the fault:")
    for kind in kinds:
        mine = [r for r in faulty if r["injected"] == kind and r["detect_s"] is not None]
        times = sorted(r["detect_s"] for r in mine)
        iterations = [r["detect_s"] / r["iteration_s_before"] for r in mine if r.get("iteration_s_before")]
        if times:
            lines.append(f"  {kind:12s} {statistics.median(times):5.2f} ({times[0]:.2f}-{times[-1]:.2f}, {len(times)})"
                         + (f"  {statistics.median(iterations):5.1f} iterations" if iterations else ""))
    lines.append("cost: busbw during the fault over the trial's window before it, per kind (mean [95% bootstrap "
                 "interval]):")
    for kind in kinds:
        if any(r["injected"] == kind and not r.get("along") for r in faulty):
            lines.append(cost_line(rows, kind))
    if free:
        lines.append(cost_line(rows, "none") + " (no fault: the window-to-window noise)")
    reacted = [r for r in rows if r.get("busbw_after_react_MBps") is not None]
    if any("react_s" in r for r in rows):
        lines.append(f"reaction: {len(reacted)} trial(s) drained a link the detector named slow "
                     f"({sum(r['injected'] == 'slow-link' and r['correct'] for r in reacted)} of them the slowed link)")
        if reacted:
            regained = Comparison("busbw under the fault", ("until the reaction", "after it"),
                                  [(r["busbw_until_react_MBps"], r["busbw_after_react_MBps"]) for r in reacted], 3)
            lines.append(f"  {regained.line()}")
            shares = [r["busbw_after_react_MBps"] / r["busbw_before_MBps"] for r in reacted if r["busbw_before_MBps"]]
            lines.append("  after it, of the window before the fault: " + ", ".join(f"{s:.2f}" for s in shares))
            timed = [r for r in reacted if r["detect_s"] is not None and r["react_s"] is not None]
            if timed:
                alarm = statistics.median(r["detect_s"] for r in timed)
                reroute = statistics.median(r["react_s"] - r["detect_s"] for r in timed)
                lines.append(f"  fault to alarm median {alarm:.2f} s, alarm to reroute median {reroute:.2f} s "
                             f"({len(timed)} trial(s) whose alarm named the slowed link)")
            lines.append(f"  {GREYHOUND_RECOVERY} (theirs, beside the regained ratio above)")
    lines.append("published, on production jobs (theirs, not rerun here):")
    lines += [f"  {p}" for p in PUBLISHED]
    return lines


def design_lines(designs, rows):
    """Each design comparison ({design: (its two forms' labels)}): busbw during the fault over
    before it, one form against the other, paired by trial (a difference: a fault that stops the
    job leaves 0)."""
    lines = []
    for design, labels in designs.items():
        value = {(r["trial"], r["run"]): r["during_over_before"] for r in rows if r["design"] == design}
        trials = sorted({t for t, _ in value})
        fault = next(r["injected"] for r in rows if r["design"] == design)
        compared = Comparison(f"{design}: busbw during a {fault} over before", labels,
                              [(value.get((t, labels[0])), value.get((t, labels[1]))) for t in trials], 2,
                              by="difference", bounded=True)
        lines.append(compared.line())
    return (["what the design does about it (during/before, mean [95% interval]):"] +
            [f"  {line}" for line in lines]) if lines else []


def emulator_lines(rows, wrong):
    """Whether the emulator was the bottleneck in any trial, and #wrong over every allreduce."""
    bound = [f"{r['fabric']} trial {r['trial']}" for r in rows if r["emulator_bottleneck"]]
    return ["emulator: " + (f"WAS the bottleneck (CPU saturated) in {', '.join(bound)}" if bound else
                            "was not the bottleneck (busiest core at most "
                            f"{max((r['busiest_core'] for r in rows), default=0):.0%} busy)"),
            f"#wrong: {wrong} (every allreduce checked against numpy)"]


def trial_line(row):
    """A trial's row as it is printed: what was injected where, what was found, and its cost."""
    said = (f"found {row['found']} {row['found_where']} ({row['confidence']:.2f})"
            + (f" after {row['detect_s']:.2f} s" if row["detect_s"] is not None else ""))
    how = f" {row['how']:g}" if row["how"] else ""
    return (f"  {row['fabric']:30s} trial {row['trial']:2d} {row['injected']:11s} {row['where'] + how:26s} "
            f"{said:54s} {'RIGHT' if row['correct'] else 'WRONG'}  busbw {row['during_over_before'] or 0:.2f} "
            f"of before{'  BOTTLENECK' if row['emulator_bottleneck'] else ''}"
            + (f"  second job on {row['second_job_s']:g} s" if row.get("second_job_s") is not None else "")
            + (f"  with {row['along']}" if row.get("along") else "")
            + ("  not on the job's paths" if row.get("off_paths") and f"{row['injected']} {row['where']}"
               in row["off_paths"] else ""))


def headline(rows):
    """The figures a run's record keeps: the share of faults located (kind and place), of strong
    ones over all and per C4 class, and of fault-free trials with a false alarm, each with its
    Wilson interval (``FIGURE low``, ``FIGURE
    high``), which a claim on it is judged by."""
    faulty = [r for r in rows if r["injected"] != "none"]
    free = [r for r in rows if r["injected"] == "none"]
    healthy = sum(r["healthy_s"] for r in rows)
    hard = [r for r in faulty if strong(r)]
    shares = {"located (kind and place)": wilson(sum(r["correct"] for r in faulty), len(faulty)),
              "located, strong faults": wilson(sum(r["correct"] for r in hard), len(hard)),
              "fault-free trials with an alarm": wilson(sum(r["found"] != "none" for r in free), len(free))}
    for c in dict.fromkeys(CLASSES.values()):          # per C4 class: a claim per mechanism of the detector
        mine = [r for r in hard if CLASSES[r["injected"]] == c]
        if mine:
            shares[f"located, strong {c}"] = wilson(sum(r["correct"] for r in mine), len(mine))
    figures = {}
    for name, (share, low, high) in shares.items():
        figures[name] = share
        if share is not None:
            figures[f"{name} low"], figures[f"{name} high"] = round(low, 3), round(high, 3)
    return {**figures,
            "F1": class_scores(rows).get("overall", (None, None, None))[2],
            "F1, strong faults": class_scores(strong_and_free(rows)).get("overall", (None, None, None))[2],
            "false alarms per hour": round(sum(r["false_alarms"] for r in rows) / healthy * 3600, 2) if healthy
            else None}


def located_by_kind(rows, kinds):
    """[(label, share located, Wilson low, high)] per injected kind, for a figure."""
    faulty = [r for r in rows if r["injected"] != "none"]
    return [(f"{k} located", *wilson(sum(r["correct"] for r in faulty if r["injected"] == k),
                                     sum(r["injected"] == k for r in faulty)))
            for k in kinds if any(r["injected"] == k for r in faulty)]
