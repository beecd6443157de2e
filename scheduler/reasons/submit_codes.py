"""Why files or a task cannot be submitted, as data: made where the submit check refuses
(``tasks/recipes.py``), carried by the refusal (``SubmitError.said``) and worded per language by the
reason catalogues (``reasons/en/submit.py``, ``reasons/ja/submit.py``): the command line's lines in
English, the tray's message box in the language it shows. File names, program names and a recipe's
own words (its install hint, the recipes' labels) are data, kept as written."""

from __future__ import annotations

from gputray.scheduler.reasons.base import Code


class ProgramMissing(Code, frozen=True):
    """The task's program is not installed or not on PATH; ``hint``: where to get it, as the recipe says
    it (``hint_ja``: the same in Japanese, when the recipe says it so)."""

    task: str
    tool: str
    hint: str | None = None
    hint_ja: str | None = None


class NoRecipeFor(Code, frozen=True):
    """No recipe handles this kind of file; ``known``: the recipes' labels; ``task_file``: the file is a
    TOML file (most likely a task file given as a FILE), named here."""

    file: str
    known: str
    task_file: str | None = None


class NoRecipeNamed(Code, frozen=True):
    name: str
    known: str


class ScriptMissing(Code, frozen=True):
    task: str
    script: str


class InputMissing(Code, frozen=True):
    task: str
    file: str


class FolderMissing(Code, frozen=True):
    task: str
    folder: str


class FileMissing(Code, frozen=True):
    path: str


class IsAFolder(Code, frozen=True):
    path: str


Leaf = (
    ProgramMissing
    | NoRecipeFor
    | NoRecipeNamed
    | ScriptMissing
    | InputMissing
    | FolderMissing
    | FileMissing
    | IsAFolder
)


class FileNoRecipe(Code, frozen=True):
    """One line of ``CannotQueue``: no recipe handles this file."""

    path: str


class FileNeedsProgram(Code, frozen=True):
    """One line of ``CannotQueue``: the file's recipe needs a program that is missing."""

    path: str
    tool: str


class FileRefused(Code, frozen=True):
    """One line of ``CannotQueue``: another problem; ``said``: why, as a code (None: ``text``, English
    only: a task file's problem); ``named``: its words start with the file already."""

    path: str
    text: str
    said: Leaf | None = None
    named: bool = False


class GetProgram(Code, frozen=True):
    """After ``CannotQueue``'s lines: where to get a missing program (once per program)."""

    tool: str
    hint: str
    hint_ja: str | None = None


class RecipesKnown(Code, frozen=True):
    """After ``CannotQueue``'s lines: the recipes there are."""

    known: str


FileLine = FileNoRecipe | FileNeedsProgram | FileRefused
Help = GetProgram | RecipesKnown


class CannotQueue(Code, frozen=True):
    """Some of ``total`` files cannot be queued, so none was: one line per file, then what would help."""

    total: int
    lines: tuple[FileLine, ...]
    helps: tuple[Help, ...] = ()


SubmitSaid = Leaf | CannotQueue | FileNoRecipe | FileNeedsProgram | FileRefused | GetProgram | RecipesKnown


def submit_codes() -> tuple[type[Code], ...]:
    """Every kind of submit refusal (what each language must render)."""
    return tuple(SubmitSaid.__args__)
