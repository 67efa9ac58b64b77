"""Where a run writes: one folder per run, JSON and CSV a person can read and plot, and figures.

The folder is checked before anything is built (``check_writable``) and made only when the run
starts; every file written is remembered, so the run can name them all at its end.
"""
import csv
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from testbed.errors import Interrupted, TestbedError
from testbed.interrupts import name as signal_name

RESULTS_ROOT = Path(__file__).resolve().parents[2] / "results"


def default_path(scenario):
    return RESULTS_ROOT / f"{scenario}-{time.strftime('%Y%m%d-%H%M%S')}"


def check_writable(path):
    """Refuse a results folder that cannot be made or written, without making anything."""
    path = Path(path).absolute()
    if path.exists() and not path.is_dir():
        raise TestbedError(f"--results {path} is a file: give a folder")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise TestbedError(f"--results {path}: {parent} is not a folder: give a folder you can write")
    if str(parent).startswith(("/proc", "/sys")) or not os.access(parent, os.W_OK | os.X_OK):
        raise TestbedError(f"--results {path}: cannot write in {parent}: give a folder you can write")
    return path


class RunFolder:
    """The files of one run: rf.json("x.json", data), rf.csv("x.csv", rows), rf.figure("x.png", draw, ...)."""

    def __init__(self, path):
        self.path, self.files = Path(path), []
        self._tables = {}          # {CSV name: (its header, its rows so far)} (append)
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.date = self.started[:16].replace("T", " ")

    def create(self):
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TestbedError(f"cannot make the results folder {self.path}: {e.strerror}") from None
        return self

    def __truediv__(self, name):
        return self.path / name

    def _written(self, name):
        path = self.path / name
        if path not in self.files:
            self.files.append(path)
        return path

    def json(self, name, data):
        path = self._written(name)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    def csv(self, name, rows):
        rows = list(rows)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with open(self._written(name), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        return self.path / name

    def append(self, name, *rows):
        """More rows of a CSV table, written as soon as they are measured. Every column of every row
        has its place under the header: a row with columns the header lacks (another fabric's link
        tiers) rewrites the file with them added, the earlier rows' cells left empty."""
        path = self.path / name
        if not rows:
            return path
        header, kept = self._tables.setdefault(name, ([], []))
        first, width = not kept, len(header)
        kept.extend(rows)
        header.extend(k for k in dict.fromkeys(k for r in rows for k in r) if k not in header)
        with open(self._written(name), "w" if first or len(header) > width else "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header)
            if first or len(header) > width:
                writer.writeheader()
                writer.writerows(kept)
            else:
                writer.writerows(rows)
        return path

    @contextmanager
    def outcome(self, name, data):
        """with rf.outcome("x.json", data): the JSON file is written however the block ends, with
        "status": "complete", "interrupted by SIGTERM" or "failed: <why>", so that what was measured
        before a failure is kept and marked."""
        data["status"] = "running"
        try:
            yield data
            data["status"] = "complete"
        except Interrupted as e:
            data["status"] = f"interrupted by {signal_name(e.signum)}"
            raise
        except Exception as e:
            data["status"] = f"failed: {e}"
            raise
        finally:
            self.json(name, data)

    def figure(self, name, draw, *args, fabric, **kwargs):
        """draw(*args, path, title=..., **kwargs) from report.figures writes the PNG, titled with
        what it shows, the fabric (a name, or a few joined) and the run's date."""
        title = f"{name.rsplit('.', 1)[0].replace('_', ' ')}: {fabric} ({self.date})"
        # path by keyword: an argument meant for after it (an axis label) would otherwise become the
        # file's name, written wherever the run was started
        draw(*args, path=self._written(name), title=title, **kwargs)
        return self.path / name

    def listing(self):
        return "results: " + " ".join(str(p) for p in self.files)
