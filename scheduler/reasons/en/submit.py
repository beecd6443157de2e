"""English words for the submit check's refusals (``reasons/submit_codes.py``), as the command line has
always said them."""

from __future__ import annotations

from gputray.scheduler.reasons import submit_codes as u
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(u.ProgramMissing)
def _program_missing(r: u.ProgramMissing, s: Say) -> str:
    more = f" Get it: {r.hint}." if r.hint else ""
    return f"{r.task}: the program '{r.tool}' is not installed or not on PATH.{more}"


@says(u.NoRecipeFor)
def _no_recipe_for(r: u.NoRecipeFor, s: Say) -> str:
    known = r.known
    if r.task_file is not None:
        known = f"{known}. A TOML task file is queued with `gputray submit --task {r.task_file}`"
    return f"{r.file}: no recipe handles this kind of file. Recipes: {known}"


@says(u.NoRecipeNamed)
def _no_recipe_named(r: u.NoRecipeNamed, s: Say) -> str:
    return f"no recipe named '{r.name}'; known recipes: {r.known}"


@says(u.ScriptMissing)
def _script_missing(r: u.ScriptMissing, s: Say) -> str:
    return f"{r.task}: the script {r.script} does not exist"


@says(u.InputMissing)
def _input_missing(r: u.InputMissing, s: Say) -> str:
    return f"{r.task}: the input file {r.file} does not exist"


@says(u.FolderMissing)
def _folder_missing(r: u.FolderMissing, s: Say) -> str:
    return f"{r.task}: the working folder {r.folder} does not exist"


@says(u.FileMissing)
def _file_missing(r: u.FileMissing, s: Say) -> str:
    return f"{r.path}: no such file"


@says(u.IsAFolder)
def _is_a_folder(r: u.IsAFolder, s: Say) -> str:
    return f"{r.path}: is a folder; give the files in it (one job per file)"


@says(u.FileNoRecipe)
def _file_no_recipe(r: u.FileNoRecipe, s: Say) -> str:
    return f"{r.path}: no recipe handles this kind of file"


@says(u.FileNeedsProgram)
def _file_needs_program(r: u.FileNeedsProgram, s: Say) -> str:
    return f"{r.path}: needs the program '{r.tool}', which is not installed or not on PATH"


@says(u.FileRefused)
def _file_refused(r: u.FileRefused, s: Say) -> str:
    text = s(r.said) if r.said is not None else r.text
    return text if r.named else f"{r.path}: {text}"


@says(u.GetProgram)
def _get_program(r: u.GetProgram, s: Say) -> str:
    return f"Get {r.tool}: {r.hint}."


@says(u.RecipesKnown)
def _recipes_known(r: u.RecipesKnown, s: Say) -> str:
    return f"Recipes: {r.known}"


@says(u.CannotQueue)
def _cannot_queue(r: u.CannotQueue, s: Say) -> str:
    head = (
        f"{len(r.lines)} of {r.total} files cannot be queued, so none was queued "
        "(all or nothing: fix these and submit the files again):"
    )
    return "\n".join([head, *(f"  {s(x)}" for x in [*r.lines, *r.helps])])


# -- a recipes file that cannot be used ----------------------------------------------------------------

_WANTS_EN = {
    "patterns": "must be a list of strings like ['*.png']",
    "number": "must be a number",
    "text": "must be a string",
}


@says(u.RecipesUnreadable)
def _recipes_unreadable(r: u.RecipesUnreadable, s: Say) -> str:
    return f"{r.path}: cannot read: {s.text(r.error)}"


@says(u.RecipesNotUtf8)
def _recipes_not_utf8(r: u.RecipesNotUtf8, s: Say) -> str:
    return f"{r.path}: not valid TOML: the file is not UTF-8 text"


@says(u.RecipesNotToml)
def _recipes_not_toml(r: u.RecipesNotToml, s: Say) -> str:
    return f"{r.path}: not valid TOML: {s.text(r.error)}"


@says(u.RecipesNotArray)
def _recipes_not_array(r: u.RecipesNotArray, s: Say) -> str:
    return f"{r.path}: key 'recipe': must be an array of tables ([[recipe]])"


@says(u.RecipeNotTable)
def _recipe_not_table(r: u.RecipeNotTable, s: Say) -> str:
    return f"{r.path}: recipe #{r.number}: must be a table"


@says(u.RecipeUnnamed)
def _recipe_unnamed(r: u.RecipeUnnamed, s: Say) -> str:
    return f"{r.path}: recipe #{r.number}: key 'name': missing or not a string"


@says(u.RecipeBadKey)
def _recipe_bad_key(r: u.RecipeBadKey, s: Say) -> str:
    return f"{r.path}: recipe '{r.recipe}': key '{r.key}': {_WANTS_EN[r.wants]}"


@says(u.RecipeUnknownKey)
def _recipe_unknown_key(r: u.RecipeUnknownKey, s: Say) -> str:
    guess = f" (did you mean '{r.suggestion}'?)" if r.suggestion else ""
    return f"{r.path}: recipe '{r.recipe}': key '{r.key}': unknown key{guess}"


@says(u.RecipeBadTask)
def _recipe_bad_task(r: u.RecipeBadTask, s: Say) -> str:
    return f"{r.path}: recipe '{r.recipe}': {s(r.problem)}"
