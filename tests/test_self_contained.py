"""The suite, the benches and the tools read nothing outside the checkout: a fresh clone passes on its own.

Two checks. A static one reads every Python file in tests/, bench/ and tools/ and works out each path
built from ``__file__`` (parents, ``.parent``, ``/``, ``os.path.join``/``dirname``, ``joinpath``); one
that lands outside the repository fails, as does a string naming the old fixture folder that sat
beside the checkout. A live one copies the checkout into an empty folder (nothing beside it) and runs
there every test module that reads the captured sysfs trees in ``tests/fixtures``.

The examples below name a made-up folder ``elsewhere`` outside the repository: the scan judges where a
path lands, not what it is called, and this file itself must not name a folder outside the checkout.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("tests", "bench", "tools")
# Built here rather than written out, so that this file does not trip its own scan.
SUSPECT_TEXT = ("/".join(("..", "shared")), "/".join(("shared", "fixtures")))


class PathsFromFile:
    """Evaluates the path expressions of one module that start at its ``__file__``; None for the rest."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.names: dict[str, str] = {}

    def value(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return str(self.file) if node.id == "__file__" else self.names.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.value(node.value)
            return None if inner is None else os.path.dirname(inner)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            if node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
                inner = self.value(node.value.value)
                if inner is None or not isinstance(node.slice.value, int):
                    return None
                for _ in range(node.slice.value + 1):
                    inner = os.path.dirname(inner)
                return inner
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            inner = self.value(node.left)
            tail = node.right.value if isinstance(node.right, ast.Constant) else None
            return None if inner is None or not isinstance(tail, str) else os.path.normpath(f"{inner}/{tail}")
        if isinstance(node, ast.Call):
            return self.call_value(node)
        return None

    def call_value(self, node: ast.Call) -> str | None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        args = [self.value(a) if i == 0 else self.text(a) for i, a in enumerate(node.args)]
        if name in {"Path", "PurePath", "PosixPath", "abspath", "realpath"} and len(args) == 1:
            return args[0]
        if name == "dirname" and len(args) == 1 and args[0] is not None:
            return os.path.dirname(args[0])
        if name in {"resolve", "absolute", "expanduser"} and isinstance(func, ast.Attribute):
            return self.value(func.value)
        if name == "join" and args and all(a is not None for a in args):
            return os.path.normpath("/".join(a for a in args if a is not None))
        if name == "joinpath" and isinstance(func, ast.Attribute):
            parts = [self.value(func.value), *(self.text(a) for a in node.args)]
            return None if None in parts else os.path.normpath("/".join(p for p in parts if p is not None))
        return None

    @staticmethod
    def text(node: ast.expr) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def outside_paths(source: str, file: Path, root: Path) -> Iterator[str]:
    """``line: what`` for each path from ``__file__`` outside ``root`` and each suspect string."""
    tree = ast.parse(source)
    paths = PathsFromFile(file)
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr | ast.Assign)]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))  # stable: an outer expression before its parts
    reported: set[int] = set()
    for node in nodes:
        if node.lineno in reported or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
            continue
        if isinstance(node, ast.Assign):  # module or function level alike: names are looked up by spelling
            found = paths.value(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name) and found is not None:
                    paths.names[target.id] = found
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(s in node.value for s in SUSPECT_TEXT):
                reported.add(node.lineno)
                yield f"{node.lineno}: {node.value[:120]!r}"
            continue
        found = paths.value(node)
        if found is not None and not Path(found).is_relative_to(root):
            reported.add(node.lineno)
            yield f"{node.lineno}: {ast.unparse(node)} is {found}"


def python_files() -> list[Path]:
    return sorted(
        p
        for folder in SCANNED
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts and "fixtures" not in p.relative_to(ROOT).parts
    )


def test_no_path_in_tests_bench_or_tools_points_outside_the_checkout() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{where}"
        for p in python_files()
        for where in outside_paths(p.read_text(encoding="utf-8"), p, ROOT)
    ]
    advice = "paths outside the repository (copy what they need into tests/fixtures):\n"
    assert found == [], advice + "\n".join(found)


@pytest.mark.parametrize(
    ("relative", "source"),
    [
        # tests/monitor/test_device_map.py until 41326a9
        ("tests/monitor/x.py", 'F = Path(__file__).resolve().parents[2] / ".." / "elsewhere" / "fixtures"\n'),
        # bench/monitor_sample.py until this file's commit
        ("bench/x.py", 'ROOT = Path(__file__).resolve().parent.parent\nP = ROOT.parent / "elsewhere"\n'),
        ("tools/x.py", 'P = os.path.join(os.path.dirname(__file__), "..", "..", "elsewhere")\n'),
        ("tests/x.py", "P = Path(__file__).parent.joinpath('..', '..')\n"),
        ("tests/x.py", f"P = {SUSPECT_TEXT[0]!r}\n"),
    ],
)
def test_the_scan_finds_a_path_outside(relative: str, source: str) -> None:
    assert list(outside_paths(source, ROOT / relative, ROOT)) != []


def test_the_scan_lets_paths_inside_pass() -> None:
    source = (
        "ROOT = Path(__file__).resolve().parents[1]\n"
        'F = ROOT / "tests" / "fixtures" / "amdgpu-sysfs"\n'
        'G = Path(__file__).resolve().parents[2] / "gui"\n'
        'L = Path(tmp) / "sys"; L.symlink_to("../../drivers/nvidia")\n'
    )
    assert list(outside_paths(source, ROOT / "tests" / "monitor" / "x.py", ROOT)) == []


def checkout_files() -> list[str]:
    """The files a clone of this working tree would hold: tracked or new, not ignored, not deleted."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:  # not a git checkout (an sdist): everything but build output
        skip = {".venv", ".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build"}
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.parts)]
    return [f for f in listed.stdout.split("\0") if f and os.path.lexists(ROOT / f)]


def fixture_users() -> list[str]:
    """Test modules that read the captured sysfs trees in tests/fixtures, directly or through
    tests/monitor/amd_trees.py. The stand-in torch (tests/fixtures/standin_torch) and the Wine set are
    left to CI, which runs the whole suite in a fresh clone with nothing beside it (.ci/run): rerunning
    the selection matrix and a Wine session here cost 45 s of CI's 15 minutes and proved nothing more."""
    uses = re.compile(r"""["']fixtures["']|\bamd_trees\b""")
    trees = re.compile(r"""amdgpu-sysfs|intel-sysfs|\bamd_trees\b|["']fixtures["'] */ *["'](amdgpu|intel)""")
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.name != Path(__file__).name
        and "wine" not in p.parts
        and uses.search(text := p.read_text(encoding="utf-8"))
        and trees.search(text)
    )


@pytest.mark.slow
def test_fixture_users_pass_in_a_copy_with_nothing_beside_it(tmp_path: Path) -> None:
    modules = fixture_users()
    assert {"tests/monitor/test_device_map.py", "tests/monitor/backends/test_intel_sysfs.py"} <= set(modules)
    clone = tmp_path / "gputray"
    for name in checkout_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name, follow_symlinks=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gputray"]  # nothing beside it
    # gputray itself comes from this checkout's install; the tests and their fixtures from the copy.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
