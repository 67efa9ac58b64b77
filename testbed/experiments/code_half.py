"""The code half of a run's fingerprint: a hash of each source file that decides a scenario's
figures, so that a page whose run was measured by code that has changed since says so ("measured
with older code") and names the files.

A scenario declares its files in ``CODE`` (paths from the repository's top: the modules that
measure, judge and score its runs, and the BPF programs its ports and hosts load); its own module
is always in its code half. What every emulated run rests on (the ranks' protocol and the ports'
shaping, ``EMULATION``) a scenario lists by that name. Files that decide only the runs given an
option are in ``CODE_WITH`` ({option's dest: files}): such a run's code half has them, the others'
not, so an edit to them marks only the blocks of runs that used them. A file is hashed by what it does, not how it
is written: a Python module by its syntax tree less docstrings (and, in a scenario's module, less
its ``CLAIMS``, ``SMOKE`` and ``CODE``, which judge, exercise and list rather than measure), a C
source less its comments and spacing. So a comment or a docstring changes no hash, and a claim
re-worded or re-bounded leaves every kept run's figures as they were.
"""
import ast
import hashlib
import re
import subprocess
from pathlib import Path

from testbed.errors import TestbedError

ROOT = Path(__file__).resolve().parents[2]
# what every emulated run's timings rest on: how a rank moves its bytes, how a port queues them
EMULATION = ("testbed/programs/rank.py", "testbed/emulation/shaping.py", "testbed/emulation/network.py")
NOT_MEASURING = {"CLAIMS", "SMOKE", "CODE", "CODE_WITH"}      # a scenario module's names that judge, exercise or list
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def scenario_file(module):
    return Path(module.__file__).resolve().relative_to(ROOT).as_posix()


def files(module, args=None):
    """The files a scenario's code half hashes: its own module first, then what it declares, then
    what it declares for the options `args` (a run's parsed options) sets."""
    given = [path for option, paths in getattr(module, "CODE_WITH", {}).items()
             if args is not None and getattr(args, option, None) for path in paths]
    return [scenario_file(module), *dict.fromkeys([*getattr(module, "CODE", ()), *given])]


def python_text(text):
    """A module's syntax tree, less docstrings and a scenario's judging names, as text."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    tree.body = [n for n in tree.body if not (isinstance(n, ast.Assign) and
                                              {getattr(t, "id", None) for t in n.targets} & NOT_MEASURING)]
    return ast.dump(tree)


def c_text(text):
    return " ".join(C_COMMENT.sub(" ", text).split())


def hash_text(path, text):
    what = python_text(text) if path.endswith(".py") else c_text(text)
    return hashlib.sha256(what.encode()).hexdigest()[:16]


def of(module, args=None):
    """{file: hash} of a scenario's code half in this tree (for a run of options `args`)."""
    found = {}
    for path in files(module, args):
        try:
            found[path] = hash_text(path, (ROOT / path).read_text())
        except OSError:
            raise TestbedError(f"{module.__name__} lists {path} in its CODE, which is not in the tree: "
                               "correct its CODE") from None
    return found


def at_commit(module, commit):
    """{file: hash} of a scenario's code half as a commit held it (None for a file it lacked): the
    code half of a run kept before records carried one, from the commit the record names."""
    found = {}
    for path in files(module):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True)
        found[path] = hash_text(path, shown.stdout) if shown.returncode == 0 else None
    return found


def changed(kept, now):
    """The files whose hash differs between a record's code half and this tree's, named."""
    return sorted(path for path in set(kept) | set(now) if kept.get(path) != now.get(path))


def missing(kept):
    """The files a record's code half names that are not in this tree."""
    return sorted(path for path in kept if not (ROOT / path).is_file())
