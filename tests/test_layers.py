"""The package's layers: each stage of testbed/ imports only from the stages below it, so no import
runs back up the pipeline and there is no circle between stages (the order is testbed/__init__'s).
The test walks every module's imports, those inside functions included. No root."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "testbed"
# Bottom to top. errors and interrupts sit under everything; programs run inside emulated hosts and
# use the collectives' schedules; pytest_plugin is the API's door for pytest.
LAYERS = ["errors", "interrupts", "topology", "routing", "emulation", "machines", "collectives", "programs",
          "probes", "fidelity", "report", "faultbench", "runs", "api", "experiments", "pytest_plugin"]


def stage(module):
    """testbed.a.b -> a; a module of testbed/ itself -> its name; anything else -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "testbed" and len(parts) > 1 else None


def edges():
    """(from stage, to stage, file, imported module) for every import of another stage."""
    found = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).parts
        source = rel[0][:-3] if len(rel) == 1 else rel[0]
        if source == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module] + ([f"{node.module}.{a.name}" for a in node.names]
                                           if node.module == "testbed" else [])
            else:
                continue
            for module in modules:
                target = stage(module)
                if target and target != source:
                    found.append((source, target, str(path.relative_to(ROOT.parent)), module))
    return found


def test_every_stage_is_in_the_order():
    stages = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
              if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert stages == set(LAYERS), stages ^ set(LAYERS)


def test_no_import_runs_back_up_the_pipeline():
    upward = [f"{file} imports {module} ({source} -> {target})" for source, target, file, module in edges()
              if LAYERS.index(target) > LAYERS.index(source)]
    assert upward == [], "\n".join(upward)


def test_no_circle_between_stages():
    graph = {}
    for source, target, _, _ in edges():
        graph.setdefault(source, set()).add(target)

    def reaches(start, goal, seen=()):
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, (*seen, nxt)))
                   for nxt in graph.get(start, ()))
    circles = [s for s in graph if reaches(s, s)]
    assert circles == [], circles


def test_no_two_modules_share_a_name():
    names = {}
    for path in ROOT.rglob("*.py"):
        if path.stem not in ("__init__", "__main__"):
            names.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}


def test_the_layout_page_names_every_module():
    """docs/layout.md names every module of the package, the controller and the scenarios."""
    layout = (ROOT.parent / "docs" / "layout.md").read_text()
    modules = [p for folder in ("testbed", "controllers", "scenarios") for p in (ROOT.parent / folder).rglob("*.py")
               if p.stem != "__init__"]
    missing = [str(p.relative_to(ROOT.parent)) for p in modules
               if f"`{p.stem}`" not in layout and f"{p.name}`" not in layout]
    assert missing == [], missing


def test_scenarios_import_only_the_api_and_the_engine():
    """A scenario names what it builds through ``testbed.api`` and how it is run and reported
    through ``testbed.experiments``; the stages below are theirs to reach."""
    below = []
    for path in (ROOT.parent / "scenarios").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [f"{node.module}.{a.name}" if node.module == "testbed" else node.module for a in node.names]
            else:
                continue
            below += [f"{path.name} imports {m}" for m in modules
                      if stage(m) and stage(m) not in ("api", "experiments")]
    assert below == [], "\n".join(below)
