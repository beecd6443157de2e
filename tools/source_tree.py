"""A temporary ``gputray/`` tree of symlinks to the package folders, for tools that cannot follow
setuptools' package-dir mapping (mypy, import-linter's grimp).

Why not ``pip install -e . --config-settings editable_mode=strict``? It does give tools a real
``gputray/`` tree, but a module added after the install is missing from it until the next install:
with several people adding modules every day, "ModuleNotFoundError until you reinstall" costs more
than this 20-line link tree.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gui", "monitor", "scheduler", "resources")


@contextlib.contextmanager
def source_tree() -> Iterator[Path]:
    """Yield a folder holding ``gputray/<pkg>`` → ``ROOT/<pkg>`` links; put it first on the path."""
    with tempfile.TemporaryDirectory(prefix="gputray-tree-") as tmp:
        tree = Path(tmp) / "gputray"
        tree.mkdir()
        for pkg in PACKAGES:
            os.symlink(ROOT / pkg, tree / pkg)
        yield Path(tmp)
