"""ruff and mypy --strict stay clean: style rules are part of the build, not a suggestion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
