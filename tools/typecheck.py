"""Run mypy (strict, per pyproject) on the gputray packages, or on the files given.

The folders are installed as ``gputray.<folder>`` through setuptools' package-dir mapping, which mypy
cannot follow, so this checks a temporary ``gputray/`` link tree (see ``source_tree.py`` for why not
setuptools' strict editable mode).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tree import PACKAGES, ROOT, source_tree

SKIP = {"probe.py"}  # scripts run by other interpreters (Python envs without gputray)


def main(argv: list[str]) -> int:
    with source_tree() as tmp:
        tree = tmp / "gputray"
        if argv:
            targets = [str(tree / Path(arg).resolve().relative_to(ROOT)) for arg in argv]
        else:
            targets = [
                str(p)
                for pkg in PACKAGES
                for p in sorted((tree / pkg).rglob("*.py"))
                if p.name not in SKIP and "__pycache__" not in p.parts
            ]
        cmd = [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *targets,
        ]
        return subprocess.run(cmd, cwd=tmp, env={**os.environ, "MYPYPATH": str(tmp)}).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
