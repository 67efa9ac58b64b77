"""Two runs of one scenario with the same seed (so the same hash draws), compared row by row: the
mean difference of a figure, one run's over the other's, with its 95% interval, per group. For a
modelling option measured on and off (`--control-class`), where each run is one side.

    .venv/bin/python -m bench.paired_runs RUN_A RUN_B --file ecmp_trials.csv --key case,trial \\
        --figure busbw_over_link

RUN_A and RUN_B are results folders (or their CSV files); rows pair on --key, and the first key
column names the groups. No root, no emulation.
"""
import argparse
import csv
import sys
from pathlib import Path

from testbed.report.paired import interval


def rows(path, name):
    path = Path(path)
    path = path / name if path.is_dir() else path
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise SystemExit(f"error: {path}: {e.strerror}") from None


def paired(a, b, key, figure):
    """{group: ([(a, b)], Estimate of a - b)} over the rows of `a` and `b` that agree on `key`."""
    def by_key(table):
        found = {}
        for r in table:
            if r.get(figure) not in (None, ""):
                found[tuple(r[k] for k in key)] = float(r[figure])
        return found
    left, right = by_key(a), by_key(b)
    groups = {}
    for k in sorted(left.keys() & right.keys()):
        groups.setdefault(k[0], []).append((left[k], right[k]))
    return {g: (pairs, interval([x - y for x, y in pairs])) for g, pairs in groups.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--file", required=True, help="the CSV both runs wrote")
    parser.add_argument("--key", required=True, help="comma-separated columns that pair the rows")
    parser.add_argument("--figure", required=True, help="the column compared")
    args = parser.parse_args(argv)
    a, b = rows(args.a, args.file), rows(args.b, args.file)
    key = args.key.split(",")
    for column in key + [args.figure]:
        if a and column not in a[0]:
            raise SystemExit(f"error: {args.file} has no column {column!r}")
    found = paired(a, b, key, args.figure)
    if not found:
        raise SystemExit("error: no row of one run pairs with a row of the other on --key")
    for group, (pairs, e) in found.items():
        mean_a = sum(x for x, _ in pairs) / len(pairs)
        mean_b = sum(y for _, y in pairs) / len(pairs)
        said = f"{group}: {args.figure} {mean_a:.3f} against {mean_b:.3f}; difference {e.mean:+.3f}"
        if e.n < 2:
            print(f"{said} (one pair: no interval)")
            continue
        shown = "excludes zero" if e.lo > 0 or e.hi < 0 else "includes zero: no difference shown"
        print(f"{said} [{e.lo:+.3f}, {e.hi:+.3f}] ({e.n} pairs; the 95% interval {shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
