"""The nccl-tests-style table: one row per (algorithm, size), printed as it is measured."""
from testbed.fidelity.verdict import flag

COLUMNS = [("algorithm", "11s"), ("size", "9d"), ("count", "8d"), ("time_us", "11.1f"), ("median_us", "11.1f"),
           ("p99_us", "11.1f"), ("algbw_MBps", "10.3f"), ("busbw_MBps", "10.3f"), ("busbw_over_link", "10.2f"),
           ("wrong", "7d")]
HEADINGS = ["algorithm", "size(B)", "count", "time(us)", "median(us)", "p99(us)", "algbw(MB/s)", "busbw(MB/s)",
            "busbw/link", "#wrong"]


def header():
    widths = [int(fmt.rstrip("sdf").split(".")[0]) for _, fmt in COLUMNS]
    return ("# " + " ".join(f"{h:>{w}}" if i else f"{h:<{w}}" for i, (h, w) in enumerate(zip(HEADINGS, widths)))
            + "  emulator")


def row(result):
    """A row as nccl-tests prints it; auto's row says what it chose."""
    cells = [f"{result[key]:{fmt}}" if fmt.endswith("s") else f"{result[key]:>{fmt}}" for key, fmt in COLUMNS]
    chose = f"  chose {result['chose']}" if result.get("chose") else ""
    return "  " + " ".join(cells) + f"  {flag(result):10s}{chose}"
