"""Where a run writes: one folder per run, JSON and CSV a person can read and plot."""
import csv
import json
import time
from pathlib import Path

RESULTS_ROOT = Path(__file__).resolve().parent.parent / "results"


def run_folder(scenario, explicit=None):
    folder = Path(explicit) if explicit else RESULTS_ROOT / f"{scenario}-{time.strftime('%Y%m%d-%H%M%S')}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_json(path, data):
    Path(path).write_text(json.dumps(data, indent=2) + "\n")
    return path


def write_csv(path, rows):
    rows = list(rows)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    return path
