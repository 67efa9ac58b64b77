"""The figures are written as PNG from result rows (no root, no emulation)."""
import pytest

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


def test_report_tells_the_run_on_its_own(tmp_path):
    from types import SimpleNamespace

    from testbed.report import markdown
    from testbed.report.folder import RunFolder
    from testbed.topology import BiGraph

    folder = RunFolder(tmp_path).create()
    folder.csv("allreduce.csv", [{"algorithm": "hdrm", "size": s, "busbw_over_link": 0.9} for s in range(40)])
    (tmp_path / "sub").mkdir()
    row = {"algorithm": "hdrm", "size": 1024, "busbw_over_link": 0.9}
    plots.busbw_by_size([row], tmp_path / "sub" / "busbw.png", 10)
    plan = SimpleNamespace(fabrics=[BiGraph(2, 8)], mtu=9000)
    printed = "  hdrm  1024 ... ok\nfabric check PASS\nemulator was not the bottleneck (ovs-vswitchd 0.2 cores)\n"
    printed = "# algorithm  size  busbw/link  emulator\n" + printed
    path = markdown.write(folder, "bigraph_allreduce", "run_scenario.py bigraph_allreduce --iters 3", "complete",
                          plan, {"iters": 3, "machines": None}, "user", "3.1", printed)
    text = path.read_text()
    assert text.startswith("# bigraph_allreduce: complete")
    assert "rerun it with `sudo python3 run_scenario.py bigraph_allreduce --iters 3`" in text and "`--iters 3`" in text
    assert "--machines" not in text and "- # algorithm" not in text       # no option it lacked, no table header
    assert "BiGraph(m=2, n=8" in text and "MTU 9000" in text and "userspace" in text and "open vswitch 3.1" in text
    assert "- emulator was not the bottleneck" in text and "- fabric check PASS" in text
    assert "| algorithm | size | busbw_over_link |" in text and "(10 more rows in `allreduce.csv`)" in text
    assert "![sub/busbw.png](sub/busbw.png)" in text


def test_a_split_run_reports_its_slots(tmp_path):
    from types import SimpleNamespace

    from testbed.report import markdown
    from testbed.report.folder import RunFolder
    from testbed.topology import BiGraph

    folder = RunFolder(tmp_path).create()
    plan = SimpleNamespace(fabrics=[BiGraph(2, 8)], mtu=9000)
    text = markdown.write(folder, "fabric_check", "run_scenario.py fabric_check --slots 2", "complete", plan,
                          {"slots": 2},
                          "user", "3.1", "").read_text()
    assert "split into 2 slot(s) (switches+hosts: 4+8, 4+8), 8 link(s) cut of 16" in text
    assert "underlay of MTU 9050" in text


def test_rows_the_verdict_flagged_are_drawn_hollow_and_every_figure_has_its_title(tmp_path, monkeypatch):
    from testbed.report.folder import RunFolder
    drawn = {}
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, title="": drawn.update(fig=fig, title=title) or
                        save(fig, path, title))
    ok = {"emulator_bottleneck": False}
    rows = [{"algorithm": "hdrm", "size": 1024, "busbw_over_link": 0.3, "emulator_bottleneck": True},
            {"algorithm": "hdrm", "size": 4096, "busbw_over_link": 0.6, **ok},
            {"algorithm": "ring", "size": 1024, "busbw_over_link": 0.1, **ok, "congestion": True}]
    folder = RunFolder(tmp_path).create()
    folder.figure("busbw.png", plots.busbw_by_size, rows, link_mbit=10, fabric="BiGraph(2,8)")
    assert drawn["title"].startswith("busbw: BiGraph(2,8) (") and folder.date in drawn["title"]
    ax = drawn["fig"].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1].startswith("flagged by the verdict") and labels[:2] == ["hdrm", "ring"]
    hollow = [line for line in ax.lines if line.get_markerfacecolor() == "white" and len(line.get_xdata())]
    assert sorted(x for line in hollow for x in line.get_xdata()) == [1024, 1024]     # hdrm's BOTTLENECK, ring's LOSS
    assert (tmp_path / "busbw.png").read_bytes().startswith(PNG)
    plots.busbw_by_size(rows[1:2], tmp_path / "clean.png", 10)
    assert "flagged by the verdict" not in [t.get_text() for t in drawn["fig"].axes[0].get_legend().get_texts()]


def test_a_figure_is_written_into_the_run_s_folder_and_nowhere_else(tmp_path, monkeypatch):
    """An argument meant for after the path (an axis label) is refused, not taken for the file's
    name: fabric_check and fault_localisation once wrote their figures where the run started."""
    from testbed.report.folder import RunFolder
    monkeypatch.chdir(tmp_path)
    folder = RunFolder(tmp_path / "run").create()
    items = [("longest path", 0.99, None, None)]
    with pytest.raises(TypeError):
        folder.figure("flows.png", plots.intervals, items, "goodput over the link", fabric="f")
    folder.figure("flows.png", plots.intervals, items, xlabel="goodput over the link", fabric="f")
    assert (tmp_path / "run" / "flows.png").read_bytes().startswith(PNG)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_every_column_the_core_rows_write_is_explained_in_the_results_page():
    """docs/results.md names each column a collective's row, its verdict and a paired summary write."""
    from pathlib import Path

    from testbed.collectives.metrics import result_row
    from testbed.emulation.cpu import CpuMonitor
    from testbed.fidelity.verdict import judge
    from testbed.report.paired import Comparison
    page = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()
    with CpuMonitor("user") as cpu:
        pass
    row = result_row("hdrm", 1024, [0.01, 0.02], 0, 16, 10.0, ports=2)
    columns = set(row) | set(judge(row, cpu.result(), (0.01, True), 3)) | \
        set(Comparison("x", ("a", "b"), [(1.0, 2.0), (1.0, 3.0)]).row())
    missing = sorted(c for c in columns if f"`{c}`" not in page and not (c.endswith(("_lo", "_hi")) or c in "ab"))
    assert missing == [], missing


def test_rows_with_columns_of_their_own_keep_every_cell_under_its_header(tmp_path):
    """load_balancing appends Clos rows, then HPN7 rows with other link tiers: every value stays
    in its column (the file was written positionally under the first row's header)."""
    import csv

    from testbed.report.folder import RunFolder
    folder = RunFolder(tmp_path).create()
    folder.append("t.csv", {"fabric": "clos", "leaf->spine": 1.5, "trial": 0})
    folder.append("t.csv", {"fabric": "clos", "leaf->spine": 1.2, "trial": 1})
    folder.append("t.csv", {"fabric": "hpn7", "tor->agg": 2.0, "trial": 0}, {"fabric": "hpn7", "trial": 1})
    folder.append("t.csv", {"fabric": "clos", "trial": 2})
    rows = list(csv.DictReader((tmp_path / "t.csv").read_text().splitlines()))
    assert [r["fabric"] for r in rows] == ["clos", "clos", "hpn7", "hpn7", "clos"]
    assert [r["trial"] for r in rows] == ["0", "1", "0", "1", "2"]
    assert rows[2]["tor->agg"] == "2.0" and rows[0]["tor->agg"] == "" and rows[2]["leaf->spine"] == ""
    assert all(None not in r for r in rows)
