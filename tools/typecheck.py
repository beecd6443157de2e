"""Run mypy (strict, per pyproject) on the gputray packages, or on the files given.

The folders are installed as ``gputray.<folder>`` through setuptools' package-dir mapping, which mypy
cannot follow, so this links them into a temporary ``gputray/`` tree and checks that tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gui", "monitor", "scheduler", "cluster", "resources")
SKIP = {"probe.py"}  # scripts run by other interpreters (Python envs without gputray)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="gputray-mypy-") as tmp:
        tree = Path(tmp) / "gputray"
        tree.mkdir()
        for pkg in PACKAGES:
            os.symlink(ROOT / pkg, tree / pkg)
        if argv:
            targets = []
            for arg in argv:
                rel = Path(arg).resolve().relative_to(ROOT)
                targets.append(str(tree / rel))
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
        return subprocess.run(cmd, cwd=tmp, env={**os.environ, "MYPYPATH": tmp}).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
