"""Japanese words for the submit check's refusals (``reasons/submit_codes.py``): the tray's message box.
File names, program names and the recipes' labels stay as written; a recipe's install hint is its
``install_hint_ja`` where it has one."""

from __future__ import annotations

from gputray.scheduler.reasons import submit_codes as u
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(u.ProgramMissing)
def _program_missing(r: u.ProgramMissing, s: Say) -> str:
    hint = r.hint_ja or r.hint
    more = f"入手先: {hint}" if hint else ""
    return f"{r.task}: プログラム「{r.tool}」がインストールされていないか、PATH にありません。{more}"


@says(u.NoRecipeFor)
def _no_recipe_for(r: u.NoRecipeFor, s: Say) -> str:
    task_file = ""
    if r.task_file is not None:
        task_file = f"。TOML のタスクファイルは `gputray submit --task {r.task_file}` でキューに追加します"
    return f"{r.file}: この種類のファイルを扱うレシピがありません。レシピ: {r.known}{task_file}"


@says(u.NoRecipeNamed)
def _no_recipe_named(r: u.NoRecipeNamed, s: Say) -> str:
    return f"「{r.name}」というレシピはありません。あるレシピ: {r.known}"


@says(u.ScriptMissing)
def _script_missing(r: u.ScriptMissing, s: Say) -> str:
    return f"{r.task}: スクリプト {r.script} がありません"


@says(u.InputMissing)
def _input_missing(r: u.InputMissing, s: Say) -> str:
    return f"{r.task}: 入力ファイル {r.file} がありません"


@says(u.FolderMissing)
def _folder_missing(r: u.FolderMissing, s: Say) -> str:
    return f"{r.task}: 作業フォルダー {r.folder} がありません"


@says(u.FileMissing)
def _file_missing(r: u.FileMissing, s: Say) -> str:
    return f"{r.path}: ファイルがありません"


@says(u.IsAFolder)
def _is_a_folder(r: u.IsAFolder, s: Say) -> str:
    return f"{r.path}: フォルダーです。中のファイルを指定してください（1 ファイル 1 ジョブ）"


@says(u.FileNoRecipe)
def _file_no_recipe(r: u.FileNoRecipe, s: Say) -> str:
    return f"{r.path}: この種類のファイルを扱うレシピがありません"


@says(u.FileNeedsProgram)
def _file_needs_program(r: u.FileNeedsProgram, s: Say) -> str:
    return f"{r.path}: プログラム「{r.tool}」が必要ですが、インストールされていないか PATH にありません"


@says(u.FileRefused)
def _file_refused(r: u.FileRefused, s: Say) -> str:
    text = s(r.said) if r.said is not None else r.text
    return text if r.named else f"{r.path}: {text}"


@says(u.GetProgram)
def _get_program(r: u.GetProgram, s: Say) -> str:
    return f"{r.tool} の入手先: {r.hint_ja or r.hint}"


@says(u.RecipesKnown)
def _recipes_known(r: u.RecipesKnown, s: Say) -> str:
    return f"レシピ: {r.known}"


@says(u.CannotQueue)
def _cannot_queue(r: u.CannotQueue, s: Say) -> str:
    head = (
        f"{r.total} 個中 {len(r.lines)} 個のファイルをキューに追加できないため、どれも追加しませんでした"
        "（全部か無しか: 次の問題を直してからもう一度送ってください）:"
    )
    return "\n".join([head, *(f"  {s(x)}" for x in [*r.lines, *r.helps])])


# -- a recipes file that cannot be used ----------------------------------------------------------------

_WANTS_JA = {
    "patterns": "['*.png'] のような文字列のリストにしてください",
    "number": "数値にしてください",
    "text": "文字列にしてください",
}


@says(u.RecipesUnreadable)
def _recipes_unreadable(r: u.RecipesUnreadable, s: Say) -> str:
    return f"{r.path}: 読み込めません: {s.text(r.error)}"


@says(u.RecipesNotUtf8)
def _recipes_not_utf8(r: u.RecipesNotUtf8, s: Say) -> str:
    return f"{r.path}: TOML として読めません: UTF-8 のテキストではありません"


@says(u.RecipesNotToml)
def _recipes_not_toml(r: u.RecipesNotToml, s: Say) -> str:
    return f"{r.path}: TOML として読めません: {s.text(r.error)}"


@says(u.RecipesNotArray)
def _recipes_not_array(r: u.RecipesNotArray, s: Say) -> str:
    return f"{r.path}: キー 'recipe' はテーブルの配列 [[recipe]] にしてください"


@says(u.RecipeNotTable)
def _recipe_not_table(r: u.RecipeNotTable, s: Say) -> str:
    return f"{r.path}: {r.number} 番目のレシピ: テーブルにしてください"


@says(u.RecipeUnnamed)
def _recipe_unnamed(r: u.RecipeUnnamed, s: Say) -> str:
    return f"{r.path}: {r.number} 番目のレシピ: キー 'name' がないか、文字列ではありません"


@says(u.RecipeBadKey)
def _recipe_bad_key(r: u.RecipeBadKey, s: Say) -> str:
    return f"{r.path}: レシピ「{r.recipe}」: キー '{r.key}' は{_WANTS_JA[r.wants]}"


@says(u.RecipeUnknownKey)
def _recipe_unknown_key(r: u.RecipeUnknownKey, s: Say) -> str:
    guess = f"。'{r.suggestion}' のことですか？" if r.suggestion else ""
    return f"{r.path}: レシピ「{r.recipe}」: キー '{r.key}' は使えません{guess}"


@says(u.RecipeBadTask)
def _recipe_bad_task(r: u.RecipeBadTask, s: Say) -> str:
    return f"{r.path}: レシピ「{r.recipe}」: {s(r.problem)}"
