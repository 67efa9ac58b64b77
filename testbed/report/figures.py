"""PNG figures of the scenarios' results (matplotlib, no screen needed).

Every figure is drawn as draw(..., path, title=...) and carries its title (``RunFolder.figure``
gives the fabric and the run's date), so that a figure lifted out of its folder still says what it
shows. A row the verdict flagged (the emulator's CPU, drops, above the link: ``fidelity.verdict``)
is drawn hollow, with a legend entry saying so: it is not a measurement of the emulated network.

matplotlib is imported when the first figure is drawn, not before: a run that is refused (or a
user who is not root) never sees its cache warnings.
"""
from testbed.fidelity.verdict import flag


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def flagged(row):
    """Whether the verdict flagged the row (its points are drawn hollow)."""
    return "emulator_bottleneck" in row and flag(row) != "ok"


def _log2_lines(rows, path, series, x, y, xlabel, ylabel, top, reference=None, title=""):
    """One line of (row[x], row[y]) per series(row), x on a log-2 axis, y from 0 to top; points of
    rows the verdict flagged hollow."""
    fig, ax = _pyplot().subplots(figsize=(7, 4.5))
    hollow = False
    for name in dict.fromkeys(series(r) for r in rows):
        mine = sorted((r[x], r[y], flagged(r)) for r in rows if series(r) == name)
        line, = ax.plot([a for a, _, _ in mine], [b for _, b, _ in mine], marker="o", label=name)
        bad = [(a, b) for a, b, f in mine if f]
        if bad:
            hollow = True
            ax.plot([a for a, _ in bad], [b for _, b in bad], linestyle="none", marker="o", markersize=9,
                    markerfacecolor="white", markeredgecolor=line.get_color())
    if hollow:
        ax.plot([], [], linestyle="none", marker="o", markerfacecolor="white", markeredgecolor="black",
                label="flagged by the verdict (BOTTLENECK, LOSS or ABOVE-LINK)")
    if reference is not None:
        ax.axhline(reference, color="grey", linewidth=0.5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path, title)


def busbw_by_size(rows, path, link_mbit, series=lambda row: row["algorithm"], title=""):
    """busbw / link rate against message size, one line per algorithm (or per series(row))."""
    _log2_lines(rows, path, series, "size", "busbw_over_link", "message size (bytes)",
                f"busbw / link rate ({link_mbit:g} Mbit/s)", 1.1, title=title)


def flows_heatmap(panels, path, title=""):
    """Flows per directed switch-to-switch link (rows) and step (columns); panels is
    [(title, [{"step", "link", "flows"}], steps)]."""
    fig, axes = _pyplot().subplots(1, len(panels), figsize=(5 * len(panels), 6), squeeze=False)
    for ax, (title, cells, steps) in zip(axes[0], panels):
        links = sorted({c["link"] for c in cells})
        grid = [[0] * steps for _ in links]
        for c in cells:
            grid[links.index(c["link"])][c["step"]] = c["flows"]
        image = ax.imshow(grid, aspect="auto", cmap="Reds", vmin=0, vmax=max(3, max(map(max, grid), default=0)))
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_xticks(range(steps))
        ax.set_yticks(range(len(links)))
        ax.set_yticklabels(links, fontsize=6)
        fig.colorbar(image, ax=ax, label="flows on the link")
    _save(fig, path, title)


def queue_over_time(series, path, limit, title=""):
    """Queue depth (packets) at the bottleneck against time, one line per fan-in (first round)."""
    fig, ax = _pyplot().subplots(figsize=(8, 4.5))
    for k in dict.fromkeys(s["fanin"] for s in series):
        mine = [s for s in series if s["fanin"] == k and s["round"] == 0 and s["kind"] == "qdisc"]
        if mine:
            t0 = mine[0]["time"]
            ax.plot([s["time"] - t0 for s in mine], [s["packets"] for s in mine], label=f"fan-in {k}")
    ax.axhline(limit, color="grey", linestyle="--", label=f"limit {limit}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (packets)")
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path, title)


def _save(fig, path, title=""):
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)


def load_per_link(links, tiers, path, title=""):
    """Bytes per directed link over its tier's mean, links sorted busiest first, for each tier
    (rows) and workload (columns), planes=1 against planes=2; trial 0. links: rows with planes,
    workload, trial, tier, bytes."""
    plt = _pyplot()
    workloads = list(dict.fromkeys(r["workload"] for r in links))
    fig, axes = plt.subplots(len(tiers), len(workloads), figsize=(5 * len(workloads), 2.6 * len(tiers)),
                             squeeze=False)
    for col, workload in enumerate(workloads):
        for row, tier in enumerate(tiers):
            ax = axes[row][col]
            for planes, colour in ((1, "tab:red"), (2, "tab:blue")):
                loads = sorted((r["bytes"] for r in links if r["workload"] == workload and r["tier"] == tier
                                and r["planes"] == planes and r["trial"] == 0), reverse=True)
                if loads and sum(loads):
                    mean = sum(loads) / len(loads)
                    ax.step(range(len(loads)), [b / mean for b in loads], where="mid", color=colour,
                            label=f"{'single' if planes == 1 else 'dual'} plane")
            ax.axhline(1, color="grey", linewidth=0.5)
            ax.set_title(f"{workload}: {tier}", fontsize=9)
            ax.set_ylabel("bytes / tier mean", fontsize=8)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.legend(fontsize=8)
        axes[-1][col].set_xlabel("links, busiest first")
    _save(fig, path, title)


def queues_by_form(series, path, title=""):
    """Largest backlog over the sampled ports against time, one panel per workload, single against
    dual plane. series: {(planes, workload): {port: [(time, packets, bytes, drops, sent)]}}."""
    plt = _pyplot()
    workloads = list(dict.fromkeys(w for _, w in series))
    fig, axes = plt.subplots(1, len(workloads), figsize=(6 * len(workloads), 4), squeeze=False)
    for ax, workload in zip(axes[0], workloads):
        for planes, colour in ((1, "tab:red"), (2, "tab:blue")):
            ports = series.get((planes, workload))
            if not ports:
                continue
            times = sorted({t for samples in ports.values() for t, *_ in samples})
            t0, at = times[0] if times else 0, {}
            for samples in ports.values():
                for t, _, size, *_ in samples:
                    at[t] = max(at.get(t, 0), size)
            ax.plot([t - t0 for t in times], [at[t] / 1e3 for t in times], color=colour, linewidth=0.8,
                    label=f"{'single' if planes == 1 else 'dual'} plane")
        ax.set_title(f"{workload}: largest queue at a ToR port facing a NIC", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("backlog (KB)")
        ax.grid(alpha=0.3)
        ax.legend()
    _save(fig, path, title)


def failure_timeline(timelines, windows, path, title=""):
    """busbw/link of each iteration against the time it ended, one panel per fabric, failure
    windows shaded. timelines: {fabric: [{"end_s", "busbw_over_link"}]}; windows: {name: (from, to)}."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(timelines), 1, figsize=(9, 2.8 * len(timelines)), squeeze=False, sharex=True)
    for ax, (fabric, rows) in zip(axes[:, 0], timelines.items()):
        ax.plot([r["end_s"] for r in rows], [r["busbw_over_link"] for r in rows], marker=".", linewidth=0.8)
        for k, (name, (a, b)) in enumerate(windows.items()):
            ax.axvspan(a, b, color=("tab:red", "tab:orange")[k % 2], alpha=0.2, label=name)
        ax.set_title(fabric, fontsize=9)
        ax.set_ylabel("busbw / link")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[-1, 0].set_xlabel("time (s), iterations at their end")
    _save(fig, path, title)


def busbw_by_case(rows, path, title=""):
    """Mean busbw over the NIC's capacity per case, single against dual plane. rows: with case,
    planes, busbw_over_nic."""
    plt = _pyplot()
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (planes, colour) in enumerate(((1, "tab:red"), (2, "tab:blue"))):
        means = []
        for case in cases:
            mine = [r["busbw_over_nic"] for r in rows if r["case"] == case and r["planes"] == planes]
            means.append(sum(mine) / len(mine) if mine else 0)
        ax.bar([i + 0.38 * k for i in range(len(cases))], means, width=0.38, color=colour,
               label=f"{'single' if planes == 1 else 'dual'} plane")
    ax.set_xticks([i + 0.19 for i in range(len(cases))])
    ax.set_xticklabels(cases)
    ax.set_ylabel("busbw / NIC capacity (2 ports)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    _save(fig, path, title)


def linear_ratio(rows, base_ranks, path, title=""):
    """The linear-scaling ratio against rank count, one line per system. rows: system, ranks,
    linear_ratio."""
    _log2_lines(rows, path, lambda r: r["system"], "ranks", "linear_ratio", "ranks (N)",
                f"throughput(N) / ((N/{base_ranks}) x throughput({base_ranks}))", 1.15, reference=1.0, title=title)


def job_iterations(rows, path, title=""):
    """Each job's iteration times against when they started, one line per series(row) (a scheme's
    run of a job). rows: with series, starts and times (monotonic seconds)."""
    fig, ax = _pyplot().subplots(figsize=(9, 4.5))
    t0 = min((r["starts"][0] for r in rows if r.get("starts")), default=0.0)
    for r in rows:
        if r.get("starts"):
            ax.plot([s - t0 for s in r["starts"]], r["times"], marker="o", label=r["series"])
    ax.set_xlabel("time (s) since the first iteration of the trial")
    ax.set_ylabel("iteration (s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    _save(fig, path, title)


def intervals(items, path, xlabel, reference=None, title=""):
    """One row per (label, mean, low, high): the mean as a point and its interval as a bar (low and
    high None: no interval), with a vertical line at `reference` (0 for gains, a pass threshold)."""
    fig, ax = _pyplot().subplots(figsize=(8, max(2.5, 0.35 * len(items) + 1.2)))
    for y, (_, mean, low, high) in enumerate(items):
        if mean is None:
            continue
        if low is not None and high is not None:
            ax.plot([low, high], [y, y], color="tab:blue", linewidth=2)
        ax.plot([mean], [y], marker="o", color="tab:blue")
    if reference is not None:
        ax.axvline(reference, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels([label for label, *_ in items], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3, axis="x")
    _save(fig, path, title)


def gains(compared, path, title=""):
    """Paired gains with their 95% intervals: compared is [(group, label, report.paired.Comparison)]."""
    items = [(f"{group}: {label}", c.gain.mean, c.gain.lo, c.gain.hi) for group, label, c in compared]
    clean = [(label, None if m != m else m, None if lo != lo else lo, None if hi != hi else hi)
             for label, m, lo, hi in items]                   # NaN (no interval) drawn as none
    unit = "ratio - 1" if all(c.by == "ratio" for _, _, c in compared) else "gain (ratio - 1, or difference)"
    intervals(clean, path, f"gain over the baseline ({unit}), mean and 95% interval", reference=0.0, title=title)
