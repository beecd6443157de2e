"""ruff and mypy --strict stay clean: style rules are part of the build, not a suggestion."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint_is_clean() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "typecheck.py")], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_monitor_and_scheduler_never_import_qt() -> None:
    code = (
        "import sys, pkgutil, importlib, gputray.monitor, gputray.scheduler\n"
        "for pkg in (gputray.monitor, gputray.scheduler):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.startswith(('PySide6', 'PyQt', 'torch', 'gputray.gui')))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_import_contracts_hold() -> None:
    """pyproject's [tool.importlinter] contracts: gui → scheduler → monitor, and no Qt below the gui.
    import-linter reads the import graph, so ``from gputray import scheduler`` in monitor/ is caught too."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "contracts.py")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


def tools_module(name: str) -> Any:
    """A module of tools/ (not a package: put on the path for the import)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "tools"))


@pytest.mark.parametrize(
    ("package", "past_the_door"),
    [
        ("cluster", "gputray.scheduler.queue.store"),  # the queue's store: only QueuePort writes it
        ("cluster", "gputray.scheduler.tasks.records"),  # the task model: through cluster_port.records
        ("gui", "gputray.scheduler.queue.placement"),  # a pure decider: the port's, not the tray's
        ("gui", "gputray.scheduler.protocol"),  # the requests: through client.requests
    ],
)
def test_a_door_contract_breaks_on_an_import_past_its_doors(
    tmp_path: Path, package: str, past_the_door: str
) -> None:
    """The doors contracts (cluster → the port and the client face; gui → the client face) on a copy of
    the tree with one module that imports past the doors: broken, naming the import."""
    tree = tmp_path / "gputray"
    tree.mkdir()
    for pkg in package_folders():
        if pkg == package:
            shutil.copytree(ROOT / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.symlink(ROOT / pkg, tree / pkg)
    module, _, name = past_the_door.rpartition(".")
    (tree / package / "past_the_door.py").write_text(f"from {module} import {name}\n", encoding="utf-8")
    result = tools_module("contracts").lint(tmp_path, capture=True)
    assert result.returncode != 0, result.stdout
    assert f"gputray.{package}.past_the_door -> {past_the_door} (l.1)" in result.stdout, result.stdout
    assert "1 broken" in result.stdout, result.stdout


def test_the_doors_let_through_only_the_doors() -> None:
    """``door_contract.illegal_imports`` on a small graph: a door and the modules inside it pass, the
    bare package behind passes, anything else behind is named with its line; indirect imports (through
    a door) and imports outside ``behind`` are not its business."""
    door_contract = tools_module("door_contract")
    graph = grimp.ImportGraph()
    for module in ("app", "app.ui", "app.ui.inner", "core", "core.face", "core.face.names", "core.store"):
        graph.add_module(module)
    edges = [
        ("app.ui", "core.face", 3),  # the door itself
        ("app.ui", "core.face.names", 4),  # a module of the door
        ("app.ui", "core", 5),  # the bare package
        ("app.ui.inner", "core.store", 7),  # past the door
        ("app.ui", "other", 8),  # not behind
        ("core.face", "core.store", 2),  # the door's own import: indirect for app
    ]
    for importer, imported, line in edges:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents="import")
    found = door_contract.illegal_imports(graph, ["app"], "core", ["core.face"])
    assert [(f.importer, f.imported, f.line_numbers) for f in found] == [("app.ui.inner", "core.store", (7,))]
    assert door_contract.illegal_imports(graph, ["app"], "core", ["core.face", "core.store"]) == []


def test_no_import_loops() -> None:
    """No module of gui/, cluster/, scheduler/, monitor/ or resources/ imports itself through others:
    each package reads bottom-up. tools/import_cycles.py names the modules of every loop it finds."""
    finder = ROOT / "tools" / "import_cycles.py"
    result = subprocess.run([sys.executable, str(finder)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "no import loops", result.stdout


def test_import_loops_are_found() -> None:
    """The loop finder finds loops (of two modules, of three, of one) and leaves a plain chain alone."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from import_cycles import loops
    finally:
        sys.path.remove(str(ROOT / "tools"))
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"g"}, "g": set()}
    assert loops(graph) == [["a", "b", "c"], ["d", "e"]]
    assert loops({"self": {"self"}}) == [["self"]]


MAX_MODULE_LINES = 700  # issue 20: small modules with one job; a bigger one is split along a seam


def modules_over(folder: Path, max_lines: int) -> list[str]:
    """Each ``.py`` under ``folder`` longer than ``max_lines`` lines, as ``path: N lines``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > max_lines:
            found.append(f"{path.relative_to(folder)}: {count} lines")
    return found


def package_folders() -> list[str]:
    """The folders installed as ``gputray.<folder>`` (pyproject's package-dir): the whole package."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return sorted(tomllib.load(f)["tool"]["setuptools"]["package-dir"].values())


def test_no_module_of_the_package_is_over_700_lines() -> None:
    """Every folder of the package, monitor/ and resources/ included: a folder added to pyproject's
    package-dir is covered the day it is added."""
    folders = package_folders()
    assert {"gui", "monitor", "scheduler", "cluster", "resources"} <= set(folders)
    assert [f"{pkg}/{line}" for pkg in folders for line in modules_over(ROOT / pkg, MAX_MODULE_LINES)] == []


def test_a_module_over_the_limit_is_named(tmp_path: Path) -> None:
    (tmp_path / "queue").mkdir()
    (tmp_path / "queue" / "big.py").write_text("x = 1\n" * 701, encoding="utf-8")
    (tmp_path / "small.py").write_text("x = 1\n" * 700, encoding="utf-8")
    assert modules_over(tmp_path, MAX_MODULE_LINES) == ["queue/big.py: 701 lines"]
