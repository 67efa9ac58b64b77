"""docs/api.md against the code: every function and method it gives a signature for names every
parameter the code has, in the code's order, with the code's defaults. No root."""
import ast
import inspect
import re
from pathlib import Path

import pytest

import testbed
from testbed.api.emulated import SILENT

DOC = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
FUNCTIONS = {"testbed.fabric": testbed.fabric, "testbed.emulate": testbed.emulate,
             "testbed.plane_forms": testbed.plane_forms}
METHODS = ("check", "sweep", "allreduce", "collisions", "collectives", "communicators", "collective_for", "watch",
           "fault", "drain", "flows", "incast", "jobs", "launch", "watch_launch")


def documented(name):
    """(parameter names, {name: default}) of the doc's `name(...)`."""
    found = re.search(rf"`{re.escape(name)}\((.*?)\)(?: -> [^`]*)?`", DOC)
    assert found, f"docs/api.md gives no signature of {name}"
    tree = ast.parse(f"def f({found.group(1)}): pass").body[0].args
    names = [a.arg for a in tree.posonlyargs + tree.args + tree.kwonlyargs]
    names += [f"**{tree.kwarg.arg}"] if tree.kwarg else []
    positional = tree.posonlyargs + tree.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(tree.defaults):]], tree.defaults))
    defaults.update({a.arg: d for a, d in zip(tree.kwonlyargs, tree.kw_defaults) if d is not None})
    return names, {k: eval(compile(ast.Expression(v), "doc", "eval"), {"__builtins__": {}, "SILENT": SILENT})
                   for k, v in defaults.items()}


def in_code(func):
    names, defaults = [], {}
    for p in inspect.signature(func).parameters.values():
        if p.name == "self":
            continue
        names.append(f"**{p.name}" if p.kind == p.VAR_KEYWORD else p.name)
        if p.default is not p.empty:
            defaults[p.name] = p.default
    return names, defaults


@pytest.mark.parametrize("name", list(FUNCTIONS) + [f"Emulated.{m}" for m in METHODS])
def test_each_documented_signature_is_the_code_s(name):
    func = FUNCTIONS.get(name) or getattr(testbed.Emulated, name.split(".")[1])
    names, defaults = documented(name if name in FUNCTIONS else name.split(".")[1])
    code_names, code_defaults = in_code(func)
    assert names == code_names, f"{name}: docs/api.md names {names}, the code {code_names}"
    assert defaults == {k: v for k, v in code_defaults.items() if k in defaults}, name
    assert set(defaults) == set(code_defaults), f"{name}: defaults documented {set(defaults)}, in code " \
                                                f"{set(code_defaults)}"
