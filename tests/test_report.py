"""The figures are written as PNG from result rows (no root, no emulation)."""
from testbed.report import figures as plots

PNG = b"\x89PNG\r\n\x1a\n"


def test_figures_are_png(tmp_path):
    rows = [{"algorithm": a, "size": s, "busbw_over_link": b}
            for a, b in (("ring", 0.9), ("hdrm", 0.7)) for s in (1024, 4096)]
    plots.busbw_by_size(rows, tmp_path / "busbw.png", 10)
    cells = [{"step": 0, "link": "tb1:5", "flows": 2}, {"step": 1, "link": "tb2:5", "flows": 1}]
    plots.flows_heatmap([("clos", cells, 2), ("bigraph", cells[1:], 2)], tmp_path / "heat.png")
    series = [{"fanin": k, "round": 0, "kind": "qdisc", "time": t / 100, "packets": k * t}
              for k in (2, 8) for t in range(10)]
    plots.queue_over_time(series, tmp_path / "queue.png", 100)
    for name in ("busbw.png", "heat.png", "queue.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
