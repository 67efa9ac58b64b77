"""PNG figures of the scenarios' results (matplotlib, no screen needed).

matplotlib is imported when the first figure is drawn, not before: a run that is refused (or a
user who is not root) never sees its cache warnings.
"""


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def busbw_by_size(rows, path, link_mbit):
    """busbw / link rate against message size, one line per algorithm."""
    fig, ax = _pyplot().subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        mine = sorted((r["size"], r["busbw_over_link"]) for r in rows if r["algorithm"] == name)
        ax.plot([s for s, _ in mine], [b for _, b in mine], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(f"busbw / link rate ({link_mbit:g} Mbit/s)")
    ax.set_ylim(0, 1.1)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)


def flows_heatmap(panels, path):
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
    _save(fig, path)


def queue_over_time(series, path, limit):
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
    _save(fig, path)


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
