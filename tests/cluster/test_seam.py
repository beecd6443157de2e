"""No ``Any`` crosses the seam between the cluster and this machine's queue: every annotation of the
port (``scheduler/cluster_port/``: the Protocols and the records, steps and deciders they name), the
queue's side of it (``queue/cluster_side.py``), the steps the bridge sends (``tasks/lifecycle.py``)
and the cluster's link and bridge rooms is read from the source, and none names ``Any`` (nor a
``**changes`` bag of fields)."""

from __future__ import annotations

import ast
from pathlib import Path

from gputray.scheduler.tasks.states import STATES

ROOT = Path(__file__).resolve().parents[2]
SEAM = [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scheduler" / "cluster_port").glob("*.py")),
    "scheduler/queue/cluster_side.py",
    "scheduler/tasks/lifecycle.py",
    "scheduler/tasks/cluster_steps.py",
    "cluster/link.py",
]
BRIDGE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cluster").glob("bridge*.py"))


def names_any(note: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(note)
    )


def annotations_naming_any(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: annotation`` for each annotation (arguments, returns, attributes) that names
    ``Any`` (``Any``, ``typing.Any``, inside a generic)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        notes: list[ast.expr] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            notes += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        found.extend(f"{path.relative_to(root)}:{n.lineno}: {ast.unparse(n)}" for n in notes if names_any(n))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_no_any_crosses_the_cluster_seam() -> None:
    found = [hit for rel in SEAM for hit in annotations_naming_any(ROOT / rel)]
    assert found == []


def test_the_bridge_writes_steps_not_bags_of_fields() -> None:
    for rel in BRIDGE:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.args.kwarg is not None:
                raise AssertionError(f"{rel}: {node.name}(**{node.args.kwarg.arg}) takes a bag of fields")
            literal = isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant)
            if literal and node.arg == "state" and node.value.value in STATES:  # type: ignore[union-attr]
                raise AssertionError(f"{rel}:{node.lineno}: a literal state= (write a lifecycle step)")


def test_the_check_finds_an_any(tmp_path: Path) -> None:
    """The scan itself: an ``Any`` in an argument, a return, an attribute and a nested generic."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import Any\n"
        "import typing\n"
        "class Port:\n"
        "    queue: Any\n"
        "    def attach(self, queue: Any) -> None: ...\n"
        "    def rows(self) -> dict[str, typing.Any]: ...\n"
        "    def fine(self, n: int) -> list[int]: ...\n"
    )
    hits = [h.split(": ", 1)[1] for h in annotations_naming_any(sample, tmp_path)]
    assert hits == ["Any", "Any", "dict[str, typing.Any]"]
