"""Recipes: files → tasks. ``*.py`` → a torch job, images → Real-ESRGAN ×4, videos → an ffmpeg Vulkan
upscale, ``*.gguf`` → llama-bench. Shipped in ``resources/recipes.toml``; a ``recipes.toml`` in the
user's config folder adds recipes or replaces shipped ones of the same name.

Placeholders stay in the spec; they are filled per argv element when the task is launched (the Vulkan
index is only known once a device is chosen). Missing programs are reported at submit time.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import os
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputray.resources import resource_path
from gputray.scheduler.paths import app_paths
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.reasons import submit_codes as u
from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.tasks.records import TaskPatch, TaskSpec
from gputray.scheduler.tasks.taskfile import (
    GUESSES,
    TASK_KEYS,
    TaskFileError,
    patch_from_table,
    spec_from_patch,
    spec_from_table,
)

_META_KEYS = {
    "name",
    "description",
    "description_ja",
    "patterns",
    "install_hint",
    "install_hint_ja",
    "vram_per_file_byte",
}
_JA_KEYS = ("description_ja", "install_hint_ja")


class SubmitError(Refusal, ValueError):
    """A task cannot be submitted; the message says why in words a person can act on. ``said``: why, as
    a code the tray words in its language (None: words as written)."""

    def __init__(self, said: u.SubmitSaid | t.TaskInvalid | str) -> None:
        if isinstance(said, str):
            super().__init__(said)
            self.said: u.SubmitSaid | t.TaskInvalid | None = None
            return
        from gputray.scheduler.reasons.render import render

        super().__init__(render(said))
        self.said = said


class ToolNotFound(SubmitError):
    def __init__(self, tool: str, hint: str | None, task: str, hint_ja: str | None = None) -> None:
        self.tool = tool
        self.hint = hint
        self.hint_ja = hint_ja
        super().__init__(u.ProgramMissing(task=task, tool=tool, hint=hint or None, hint_ja=hint_ja))


class RecipeError(SubmitError):
    pass


class NoRecipe(RecipeError):
    def __init__(self, file: Path, known: str) -> None:
        self.known = known
        task_file = file.name if file.suffix.lower() == ".toml" else None  # most likely a task file as FILE
        if task_file is not None:
            self.known = f"{known}. A TOML task file is queued with `gputray submit --task {task_file}`"
        super().__init__(u.NoRecipeFor(file=file.name, known=known, task_file=task_file))


class SubmitProblems(SubmitError):
    """Several submitted files cannot be queued: one line per file, then what would help (once)."""

    def __init__(self, total: int, lines: Sequence[u.FileLine], helps: Sequence[u.Help] = ()) -> None:
        from gputray.scheduler.reasons.render import render

        self.lines = tuple(render(line) for line in lines)
        super().__init__(u.CannotQueue(total=total, lines=tuple(lines), helps=tuple(helps)))


@dataclass(frozen=True)
class Recipe:
    name: str
    patterns: tuple[str, ...]
    template: Mapping[str, Any] = field(default_factory=dict)  # task-file keys
    description: str = ""
    install_hint: str | None = None
    vram_per_file_byte: float | None = None
    source: str = ""
    # the same words in Japanese (``description_ja``, ``install_hint_ja``): the tray shows them in
    # Japanese; the command line, and a recipe without them, in English
    description_ja: str = ""
    install_hint_ja: str | None = None

    def described(self, language: str) -> str:
        """Its description in ``language`` ("en", "ja"), in English where it has none in that language."""
        return self.description_ja if language == "ja" and self.description_ja else self.description

    def hint(self, language: str) -> str | None:
        """Where to get its program, in ``language`` where the recipe says it so, else in English."""
        return self.install_hint_ja if language == "ja" and self.install_hint_ja else self.install_hint

    def matches(self, path: Path) -> bool:
        name = path.name.lower()
        return any(fnmatch.fnmatchcase(name, p.lower()) for p in self.patterns)

    def label(self) -> str:
        return f"{self.name} ({', '.join(self.patterns)})"


def _parse(data: Mapping[str, Any], source: str) -> list[Recipe]:
    raw = data.get("recipe", [])
    if not isinstance(raw, list):
        raise RecipeError(u.RecipesNotArray(path=source))
    out = []
    for i, table in enumerate(raw, start=1):
        if not isinstance(table, dict):
            raise RecipeError(u.RecipeNotTable(path=source, number=i))
        name = table.get("name")
        if not isinstance(name, str) or not name:
            raise RecipeError(u.RecipeUnnamed(path=source, number=i))
        patterns = table.get("patterns", [])
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise RecipeError(u.RecipeBadKey(path=source, recipe=name, key="patterns", wants="patterns"))
        factor = table.get("vram_per_file_byte")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int | float)):
            raise RecipeError(
                u.RecipeBadKey(path=source, recipe=name, key="vram_per_file_byte", wants="number")
            )
        for key in _JA_KEYS:
            if not isinstance(table.get(key, ""), str):
                raise RecipeError(u.RecipeBadKey(path=source, recipe=name, key=key, wants="text"))
        template = {k: v for k, v in table.items() if k not in _META_KEYS}
        for key in template:
            if key not in TASK_KEYS:
                raise RecipeError(
                    u.RecipeUnknownKey(path=source, recipe=name, key=key, suggestion=_closest(key))
                )
        # Validate the template now with a stand-in file, so a broken recipe is reported on load (its
        # problem, at its key, goes into RecipeBadTask, which names the file and the recipe itself).
        try:
            probe = {**template, "files": ["x"], "recipe": name}
            if probe.get("kind") == "torch":
                probe.setdefault("script", "x.py")
            spec_from_table(probe, source=source)
        except TaskFileError as exc:
            raise RecipeError(u.RecipeBadTask(path=source, recipe=name, problem=exc.said.what)) from None
        out.append(
            Recipe(
                name=name,
                patterns=tuple(patterns),
                template=template,
                description=str(table.get("description", "")),
                install_hint=table.get("install_hint"),
                vram_per_file_byte=None if factor is None else float(factor),
                source=source,
                description_ja=str(table.get("description_ja", "")),
                install_hint_ja=table.get("install_hint_ja") or None,
            )
        )
    return out


def _closest(key: str) -> str | None:
    """The known key (a recipe's own or a task key) a mistyped ``key`` most likely meant."""
    if key in GUESSES:
        return GUESSES[key]
    found = difflib.get_close_matches(key, sorted(TASK_KEYS | _META_KEYS), n=1)
    return found[0] if found else None


def read_recipes_file(path: Path) -> list[Recipe]:
    """The recipes in ``path``; RecipeError (with a ``Recipes…`` code) names what is wrong in it."""
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8-sig"))  # a BOM (Notepad) is no statement
    except OSError as exc:
        raise RecipeError(u.RecipesUnreadable(path=str(path), error=str(exc.strerror or exc))) from None
    except UnicodeDecodeError:
        raise RecipeError(u.RecipesNotUtf8(path=str(path))) from None
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(u.RecipesNotToml(path=str(path), error=str(exc))) from None
    return _parse(data, str(path))


def load_recipes() -> list[Recipe]:
    """Shipped recipes, then the user's (same name replaces, new names come first so they win matches).

    The user's are ``recipes.toml`` in the config folder (``app_paths().config_dir``).
    """
    shipped = read_recipes_file(resource_path("recipes.toml"))
    user_file = app_paths().config_dir / "recipes.toml"
    if not user_file.exists():
        return shipped
    user = read_recipes_file(user_file)
    names = {r.name for r in user}
    return user + [r for r in shipped if r.name not in names]


def find_recipe(recipes: Sequence[Recipe], file: Path, name: str | None = None) -> Recipe:
    if name is not None:
        for recipe in recipes:
            if recipe.name == name:
                return recipe
        known = ", ".join(r.name for r in recipes)
        raise RecipeError(u.NoRecipeNamed(name=name, known=known))
    for recipe in recipes:
        if recipe.matches(file):
            return recipe
    raise NoRecipe(file, "; ".join(r.label() for r in recipes))


def check_runnable(spec: TaskSpec, *, hint: str | None = None, hint_ja: str | None = None) -> None:
    """Submit-time checks: the program exists (shutil.which), the script and input files exist."""
    program = spec.program
    if program is not None:
        as_path = Path(program).expanduser()
        if as_path.parent != Path(".") or program.startswith("."):  # a path, not a name on PATH
            if not as_path.is_absolute() and spec.cwd:
                as_path = Path(spec.cwd) / as_path
            found = as_path.is_file() and os.access(as_path, os.X_OK)
        else:  # on the PATH the job will get: the submitter's when it came with the task
            search = spec.base_env.get("PATH", os.defpath) if spec.base_env is not None else None
            found = shutil.which(program, path=search) is not None
        if not found:
            raise ToolNotFound(program, hint, spec.name, hint_ja)
    if spec.kind == "torch" and spec.script is not None:
        script = Path(spec.script)
        if spec.cwd and not script.is_absolute():
            script = Path(spec.cwd) / script
        if not script.is_file():
            raise SubmitError(u.ScriptMissing(task=spec.name, script=spec.script))
    for f in spec.files:
        if not Path(f).exists():
            raise SubmitError(u.InputMissing(task=spec.name, file=f))
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise SubmitError(u.FolderMissing(task=spec.name, folder=spec.cwd))


def spec_for_file(recipe: Recipe, file: Path, overrides: TaskPatch | None = None) -> TaskSpec:
    """One task for one file: the recipe's template (task-file keys) for ``file``, ``overrides`` laid
    over it (``--env`` adds to the recipe's variables)."""
    file = Path(file).expanduser().resolve()
    data: dict[str, Any] = dict(recipe.template)
    data["recipe"] = recipe.name
    data["files"] = [str(file)]
    if data.get("kind", "command") == "torch":
        data.setdefault("script", str(file))
        data.setdefault("cwd", str(file.parent))
        data.setdefault("name", file.name)
    else:
        data.setdefault("name", f"{recipe.name}: {file.name}")
    if recipe.vram_per_file_byte and "vram" not in data and "vram_bytes" not in data:
        with contextlib.suppress(OSError):
            data["vram"] = int(file.stat().st_size * recipe.vram_per_file_byte)
    where = t.RecipeFor(recipe=recipe.name, file=file.name)
    try:
        patch = patch_from_table(data, source=where)
        return spec_from_patch(patch.then(overrides) if overrides else patch, source=where)
    except TaskFileError as exc:
        raise RecipeError(exc.said) from None


def specs_for_files(
    files: Sequence[Path],
    *,
    recipe: str | None = None,
    overrides: TaskPatch | None = None,
) -> list[TaskSpec]:
    """Specs for dropped/submitted files; all are checked before any is returned (all or nothing).

    Every file is checked, so one error names every problem (SubmitProblems, one line per file);
    a single file's problem is raised as it is (ToolNotFound, NoRecipe …).
    """
    recipes = load_recipes()
    if recipe is not None:
        find_recipe(recipes, Path(), recipe)  # an unknown --recipe is one problem, not one per file
    specs = []
    problems: list[tuple[Path, SubmitError]] = []
    for file in files:
        path = Path(file)
        try:
            specs.append(_spec_checked(path, recipes, recipe, overrides))
        except SubmitError as exc:
            problems.append((path, exc))
    if len(problems) == 1 and len(files) == 1:
        raise problems[0][1]
    if problems:
        lines: list[u.FileLine] = []
        helps: dict[u.Help, None] = {}  # ordered, each hint once
        for path, err in problems:
            line, hint = _problem_line(path, err)
            lines.append(line)
            if hint:
                helps[hint] = None
        raise SubmitProblems(len(files), lines, list(helps))
    return specs


def _spec_checked(
    path: Path,
    recipes: Sequence[Recipe],
    recipe: str | None,
    overrides: TaskPatch | None,
) -> TaskSpec:
    if not path.exists():
        raise SubmitError(u.FileMissing(path=str(path)))
    if path.is_dir():
        raise SubmitError(u.IsAFolder(path=str(path)))
    chosen = find_recipe(recipes, path, recipe)
    spec = spec_for_file(chosen, path, overrides)
    check_runnable(spec, hint=chosen.install_hint, hint_ja=chosen.install_hint_ja)
    return spec


def _problem_line(path: Path, exc: SubmitError) -> tuple[u.FileLine, u.Help | None]:
    """One file's line of SubmitProblems, starting with the file, and a hint to print once after all."""
    if isinstance(exc, NoRecipe):
        return u.FileNoRecipe(path=str(path)), u.RecipesKnown(known=exc.known)
    if isinstance(exc, ToolNotFound):
        hint = u.GetProgram(tool=exc.tool, hint=exc.hint, hint_ja=exc.hint_ja) if exc.hint else None
        return u.FileNeedsProgram(path=str(path), tool=exc.tool), hint
    text = str(exc)
    leaf = exc.said if isinstance(exc.said, u.Leaf | t.TaskInvalid) else None
    return u.FileRefused(path=str(path), text=text, said=leaf, named=text.startswith(str(path))), None
