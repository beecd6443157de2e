"""Check the import contracts in pyproject's ``[tool.importlinter]`` (layers gui → scheduler → monitor;
no Qt below the gui) with import-linter, on the ``gputray/`` link tree (see ``source_tree.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tree import ROOT, source_tree


def main() -> int:
    with source_tree() as tmp:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp), os.environ.get("PYTHONPATH", "")])}
        code = "from importlinter.cli import lint_imports_command as c; c()"
        cmd = [sys.executable, "-c", code, str(ROOT / "pyproject.toml"), "--no-cache"]
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


if __name__ == "__main__":
    raise SystemExit(main())
