"""Why files or a task cannot be submitted, as data: made where the submit check refuses
(``tasks/recipes.py``), carried by the refusal (``SubmitError.said``) and worded per language by the
reason catalogues (``reasons/en/submit.py``, ``reasons/ja/submit.py``): the command line's lines in
English, the tray's message box in the language it shows. File names, program names and a recipe's
own words (its install hint, the recipes' labels) are data, kept as written. A recipes file that cannot
be used (``tasks/recipes.read_recipes_file``) says what is wrong in it with the ``Recipe…`` codes: its
path, the recipe, the key; an OS or TOML parser error rides in ``error``, shown as written."""

from __future__ import annotations

from typing import Literal

from gputray.scheduler.reasons.base import Code
from gputray.scheduler.reasons.taskfile_codes import TaskInvalid, TaskProblem


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
    """One line of ``CannotQueue``: another problem; ``said``: why, as a code (a missing file, the task
    a recipe makes of the file, ``TaskInvalid`` …; None: ``text``, as written); ``named``: its words
    start with the file already."""

    path: str
    text: str
    said: Leaf | TaskInvalid | None = None
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


# -- a recipes file that cannot be used (the shipped one, or recipes.toml in the config folder) ---------


class RecipesUnreadable(Code, frozen=True):
    """The file cannot be read; ``error``: the OS's words."""

    path: str
    error: str


class RecipesNotUtf8(Code, frozen=True):
    path: str


class RecipesNotToml(Code, frozen=True):
    """Not valid TOML; ``error``: the TOML parser's words (where and what)."""

    path: str
    error: str


class RecipesNotArray(Code, frozen=True):
    """``recipe`` is not an array of tables (``[[recipe]]``)."""

    path: str


class RecipeNotTable(Code, frozen=True):
    """The ``number``-th ``[[recipe]]`` entry is not a table."""

    path: str
    number: int


class RecipeUnnamed(Code, frozen=True):
    """The ``number``-th recipe has no ``name``, or not a string."""

    path: str
    number: int


class RecipeBadKey(Code, frozen=True):
    """A recipe's own key (``patterns``, ``vram_per_file_byte``, ``description_ja`` …) holds the wrong
    kind of value; ``wants``: what it takes."""

    path: str
    recipe: str
    key: str
    wants: Literal["patterns", "number", "text"]


class RecipeUnknownKey(Code, frozen=True):
    """A key that is neither a recipe's own nor a task key; ``suggestion``: the known key it is closest
    to."""

    path: str
    recipe: str
    key: str
    suggestion: str | None = None


class RecipeBadTask(Code, frozen=True):
    """The recipe's task keys make no task (a value out of range, an unknown placeholder …); ``problem``:
    what the task check found, at its key (``taskfile_codes``)."""

    path: str
    recipe: str
    problem: TaskProblem


RecipesSaid = (
    RecipesUnreadable | RecipesNotUtf8 | RecipesNotToml | RecipesNotArray | RecipeNotTable | RecipeUnnamed
    | RecipeBadKey | RecipeUnknownKey | RecipeBadTask
)  # fmt: skip

SubmitSaid = (
    Leaf
    | CannotQueue
    | FileNoRecipe
    | FileNeedsProgram
    | FileRefused
    | GetProgram
    | RecipesKnown
    | RecipesSaid
)


def submit_codes() -> tuple[type[Code], ...]:
    """Every kind of submit refusal (what each language must render)."""
    return tuple(SubmitSaid.__args__)
