"""An import-linter contract type, ``doors``: the source packages may import modules of ``behind`` only
through its ``doors`` (each door a module or a package of modules). import-linter has ``forbidden``
(name what may not be imported) but no "allow only": a forbidden list goes stale the day someone adds a
module behind the doors, while this contract covers that module from its first line.

Only direct imports count (``from gputray.scheduler.queue.store import …`` in cluster/ breaks it); what a
door imports in turn is the door's business. The bare package ``behind`` (its ``__init__``, a docstring)
is not behind itself. Registered in pyproject's ``[tool.importlinter] contract_types``; ``contracts.py``
puts this folder on the path.
"""

from __future__ import annotations

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output


@dataclass(frozen=True)
class IllegalImport:
    importer: str
    imported: str
    line_numbers: tuple[int, ...]


def through_a_door(imported: str, doors: list[str]) -> bool:
    return any(imported == door or imported.startswith(door + ".") for door in doors)


def illegal_imports(
    graph: grimp.ImportGraph, sources: list[str], behind: str, doors: list[str]
) -> list[IllegalImport]:
    """Each direct import, by a module of ``sources``, of a module of ``behind`` that is not a door's."""
    found: list[IllegalImport] = []
    for source in sources:
        importers = {source, *graph.find_descendants(source)} if source in graph.modules else set()
        for importer in sorted(importers):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if not imported.startswith(behind + ".") or through_a_door(imported, doors):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = tuple(sorted(d["line_number"] for d in details))
                found.append(IllegalImport(importer, imported, lines))
    return found


class DoorsContract(Contract):
    """Configuration: ``source_modules`` (packages), ``behind`` (a package), ``doors`` (modules or
    packages inside ``behind``: the only ones the sources may import)."""

    type_name = "doors"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    behind = fields.ModuleField()
    doors = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        behind = self.behind.name  # type: ignore[attr-defined]
        doors = [door.name for door in self.doors]  # type: ignore[attr-defined]
        missing = [door for door in doors if door not in graph.modules]
        sources = [module.name for module in self.source_modules]  # type: ignore[attr-defined]
        found = illegal_imports(graph, sources, behind, doors)
        return ContractCheck(
            kept=not found and not missing, warnings=[], metadata={"illegal": found, "missing": missing}
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for door in check.metadata["missing"]:
            output.print_error(f"- the door {door} is not a module (renamed or removed?)", bold=False)
            output.new_line()
        for bad in check.metadata["illegal"]:
            lines = ", ".join(map(str, bad.line_numbers))
            output.print_error(
                f"- {bad.importer} -> {bad.imported} (l.{lines}): not through a door", bold=False
            )
            output.new_line()
        if check.metadata["illegal"]:
            doors = ", ".join(door.name for door in self.doors)  # type: ignore[attr-defined]
            output.print_error(
                f"Import it from a door ({doors}): add its name there if it is missing.", bold=False
            )
            output.new_line()
