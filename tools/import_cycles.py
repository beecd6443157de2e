"""Find import loops in the gputray packages: print each group of modules that import one another
(a strongly connected component of the module graph) and exit 1, or say there are none and exit 0.

Every import counts: at module level, inside a function (deferred only to dodge the loop) and under
``TYPE_CHECKING`` (a loop for the reader and for mypy). The graph is grimp's (import-linter's), built on
the ``gputray/`` link tree (see ``source_tree.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_tree import PACKAGES, source_tree


def import_graph() -> dict[str, set[str]]:
    """Module → the gputray modules it imports."""
    import grimp

    with source_tree() as tmp:
        sys.path.insert(0, str(tmp))
        try:
            graph = grimp.build_graph(*(f"gputray.{pkg}" for pkg in PACKAGES), cache_dir=None)
        finally:
            sys.path.remove(str(tmp))
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def loops(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself),
    each sorted, found with Tarjan's algorithm (iterative: the graph is deeper than Python's stack allows)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def main() -> int:
    found = loops(import_graph())
    for component in found:
        print(f"import loop of {len(component)} modules: " + ", ".join(component))
    if not found:
        print("no import loops")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
