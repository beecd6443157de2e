"""Check the import contracts in pyproject's ``[tool.importlinter]`` (layers gui → cluster → scheduler →
monitor; the doors into the scheduler; no Qt below the gui) with import-linter, on the ``gputray/`` link
tree (see ``source_tree.py``). ``lint(tree)`` checks another tree (the contract tests' altered copies)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tree import ROOT, source_tree

TOOLS = Path(__file__).resolve().parent


def lint(tree: Path, *, capture: bool = False) -> subprocess.CompletedProcess[str]:
    """import-linter over the ``gputray/`` folder in ``tree``; this folder on the path for
    ``door_contract`` (the ``doors`` contract type)."""
    paths = [str(tree), str(TOOLS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    code = "from importlinter.cli import lint_imports_command as c; c()"
    cmd = [sys.executable, "-c", code, str(ROOT / "pyproject.toml"), "--no-cache"]
    return subprocess.run(cmd, cwd=tree, env=env, capture_output=capture, text=True, timeout=300)


def main() -> int:
    with source_tree() as tmp:
        return lint(tmp).returncode


if __name__ == "__main__":
    raise SystemExit(main())
