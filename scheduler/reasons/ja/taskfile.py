"""Japanese words for what is wrong in a task (``reasons/taskfile_codes.py``): the tray's message box (a
drop, the settings' recipes tab, an edit). Key names, values, paths and placeholders stay as the task file
writes them; a parser's or the OS's own words are shown as written."""

from __future__ import annotations

from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says

_FORMS = {
    "duration": "'10m' のような期間",
    "duration_or_seconds": "'10m' のような期間か秒数",
    "duration_forms": "'90s'・'10m'・'1h30m'・'2d' のような期間",
    "size": "'4GiB' のようなサイズ",
    "size_or_bytes": "'4GiB' のようなサイズかバイト数",
    "size_forms": "'512MiB'・'4GiB'・'4GB' のようなサイズ",
    "time": "2026-12-01T01:00:00 のような日時",
    "window": "'01:00-07:00' のような毎日の時間帯",
    "task_ids": "[12,13] のようなタスク番号のリスト",
}
_TAKES = {  # what the key takes, and what it means after the value
    "percent": ("0 から 100 までの数値", ""),
    "machine": ('"any" かマシン名', "。マシン名に使えるのは英数字と . _ - です"),
    "slowdown": ("1 から 100 までの数値", "。1.5 なら最速より最大 50 % 遅くてもよいという意味です"),
}
_WHAT = {"duration": "期間", "size": "サイズ"}


def _got(got: str | None) -> str:
    return "空の文字列" if got is None else got


@says(t.TaskInvalid)
def _task_invalid(r: t.TaskInvalid, s: Say) -> str:
    return f"{s(r.where) if not isinstance(r.where, str) else r.where}: {s(r.what)}"


@says(t.TaskProblem)
def _task_problem(r: t.TaskProblem, s: Say) -> str:
    return s(r.problem) if r.key is None else f"キー '{r.key}': {s(r.problem)}"


@says(t.Submitted)
def _submitted(r: t.Submitted, s: Say) -> str:
    return "送られたタスク"


@says(t.RunCommand)
def _run_command(r: t.RunCommand, s: Say) -> str:
    return "gputray run のコマンド"


@says(t.EditOf)
def _edit_of(r: t.EditOf, s: Say) -> str:
    return f"タスク #{r.task_id} の変更"


@says(t.FromMachine)
def _from_machine(r: t.FromMachine, s: Say) -> str:
    return f"{r.machine} からのタスク"


@says(t.RecipeFor)
def _recipe_for(r: t.RecipeFor, s: Say) -> str:
    return f"{r.file} へのレシピ「{r.recipe}」"


# -- one value ------------------------------------------------------------------------------------


@says(t.UnreadableValue)
def _unreadable_value(r: t.UnreadableValue, s: Say) -> str:
    got = f"型 {r.got}" if r.of_type and r.got is not None else _got(r.got)
    return f"{_FORMS[r.form]}にしてください（値: {got}）"


@says(t.Negative)
def _negative(r: t.Negative, s: Say) -> str:
    return f"{_WHAT[r.what]}は負にできません（値: {r.got}）"


@says(t.TooLong)
def _too_long(r: t.TooLong, s: Say) -> str:
    return f"期間は 0 から 10 年（{r.limit_s:.0f} 秒）までにしてください（値: {r.got_s:g} 秒）"


@says(t.TooBig)
def _too_big(r: t.TooBig, s: Say) -> str:
    return f"サイズは 0 から 1 PiB（{r.limit_bytes} バイト）までにしてください（値: {r.got_bytes:g}）"


@says(t.DateOutOfRange)
def _date_out_of_range(r: t.DateOutOfRange, s: Say) -> str:
    what = f"{r.what} は" if r.what else "日時は"
    return f"{what} 1970 年から 9999 年までの日時にしてください"


@says(t.WindowTimes)
def _window_times(r: t.WindowTimes, s: Say) -> str:
    return f"時刻は 00:00 から 24:00 までにしてください（値: {r.got}）"


@says(t.WindowEmpty)
def _window_empty(r: t.WindowEmpty, s: Say) -> str:
    return f"時間帯 {r.got} は開始と終了が同じで、空です"


@says(t.BadTaskId)
def _bad_task_id(r: t.BadTaskId, s: Say) -> str:
    return f"タスク番号は 1 以上の整数にしてください（値: {r.got}）"


@says(t.NotOneOf)
def _not_one_of(r: t.NotOneOf, s: Say) -> str:
    return f"{'・'.join(r.choices)} のどれかにしてください（値: {r.got}）"


@says(t.NotWhole)
def _not_whole(r: t.NotWhole, s: Say) -> str:
    return f"整数にしてください（値: {r.got}）"


@says(t.TooLow)
def _too_low(r: t.TooLow, s: Say) -> str:
    return f"{r.low} 以上にしてください（値: {r.got}）"


@says(t.TooHigh)
def _too_high(r: t.TooHigh, s: Say) -> str:
    return f"{r.high} 以下にしてください（値: {r.got}）"


@says(t.NotStrings)
def _not_strings(r: t.NotStrings, s: Say) -> str:
    return f"文字列のリストにしてください（値: {r.got}）"


@says(t.HasNul)
def _has_nul(r: t.HasNul, s: Say) -> str:
    return "NUL 文字が含まれています"


@says(t.EmptyDeviceName)
def _empty_device_name(r: t.EmptyDeviceName, s: Say) -> str:
    return "空のデバイス名が含まれています"


@says(t.NotTrueFalse)
def _not_true_false(r: t.NotTrueFalse, s: Say) -> str:
    return f"true か false にしてください（値: {r.got}）"


@says(t.MustTake)
def _must_take(r: t.MustTake, s: Say) -> str:
    takes, meaning = _TAKES[r.takes]
    return f"{takes}にしてください（値: {r.got}）{meaning}"


@says(t.NoTimeout)
def _no_timeout(r: t.NoTimeout, s: Say) -> str:
    return f"0 より大きくしてください。制限なしならキーを書かないでください（値: {r.got_s:g} 秒）"


@says(t.NotText)
def _not_text(r: t.NotText, s: Say) -> str:
    return f"空でない文字列にしてください（値: {r.got}）"


@says(t.EnvNotTable)
def _env_not_table(r: t.EnvNotTable, s: Say) -> str:
    return f'NAME = "値" のテーブルにしてください（値: {r.got}）'


@says(t.EnvBadName)
def _env_bad_name(r: t.EnvBadName, s: Say) -> str:
    return f"{r.got} は環境変数の名前として使えません"


@says(t.EnvValueNotText)
def _env_value_not_text(r: t.EnvValueNotText, s: Say) -> str:
    return f"{r.name}: 値は文字列にしてください（値: {r.got}）"


@says(t.EnvValueNul)
def _env_value_nul(r: t.EnvValueNul, s: Say) -> str:
    return f"{r.name}: 値に NUL 文字が含まれています"


@says(t.BaseEnvBad)
def _base_env_bad(r: t.BaseEnvBad, s: Say) -> str:
    return "環境変数のテーブルにしてください（名前に = と NUL は使えません）"


@says(t.TypeSaid)
def _type_said(r: t.TypeSaid, s: Say) -> str:
    return s.text(r.error)


# -- keys -----------------------------------------------------------------------------------------


@says(t.NotATable)
def _not_a_table(r: t.NotATable, s: Say) -> str:
    return f"タスクはキーのテーブルにしてください（型: {r.got}）"


@says(t.KeyNotText)
def _key_not_text(r: t.KeyNotText, s: Say) -> str:
    return f"キーは文字列にしてください（値: {r.got}）"


@says(t.UnknownTaskKey)
def _unknown_task_key(r: t.UnknownTaskKey, s: Say) -> str:
    if r.suggestion is not None:
        return f"使えないキーです。'{r.suggestion}' のことですか？"
    return f"使えないキーです。使えるキー: {'・'.join(r.known)}"


@says(t.GivenTwice)
def _given_twice(r: t.GivenTwice, s: Say) -> str:
    return "2 つの書き方で 2 回指定されています"


@says(t.NeedsScript)
def _needs_script(r: t.NeedsScript, s: Say) -> str:
    return "ありません: torch タスクには実行する Python スクリプトが必要です"


@says(t.TorchTakesNoArgv)
def _torch_takes_no_argv(r: t.TorchTakesNoArgv, s: Say) -> str:
    return "torch タスクでは使いません: 'script' と 'args' を指定してください"


@says(t.ScriptOnlyTorch)
def _script_only_torch(r: t.ScriptOnlyTorch, s: Say) -> str:
    return f"スクリプトを取るのは torch タスクだけです。{r.kind} タスクには 'argv' を指定してください"


@says(t.NeedsArgv)
def _needs_argv(r: t.NeedsArgv, s: Say) -> str:
    return f"ありません: {r.kind} タスクにはプログラムとその引数のリストが必要です"


@says(t.ProgramEmpty)
def _program_empty(r: t.ProgramEmpty, s: Say) -> str:
    return "プログラム名（最初の要素）が空です"


@says(t.ArgsUnused)
def _args_unused(r: t.ArgsUnused, s: Say) -> str:
    return f"{r.kind} タスクでは使いません: 引数はすべて 'argv' に入れてください"


@says(t.UnknownPlaceholder)
def _unknown_placeholder(r: t.UnknownPlaceholder, s: Say) -> str:
    if r.variable is not None:
        return f"{r.variable}: 不明なプレースホルダー {{{r.name}}}"
    text = f"不明なプレースホルダー {{{r.name}}}"
    if r.within is not None:
        text = f"「{r.within}」の中に{text}"
    if r.known:
        text += "。使えるもの: " + " ".join(f"{{{p}}}" for p in r.known)
    return text


@says(t.FileWithoutFiles)
def _file_without_files(r: t.FileWithoutFiles, s: Say) -> str:
    return 'コマンドが {file} を使っていますが、入力ファイルがありません（files = ["…"]）'


@says(t.UnknownNeed)
def _unknown_need(r: t.UnknownNeed, s: Say) -> str:
    return f"不明な {r.got}。使えるもの: {'・'.join(r.known)}"


# -- a task file that cannot be read --------------------------------------------------------------

_KINDS = {"folder": "フォルダー", "FIFO": "名前付きパイプ", "device or socket": "デバイスかソケット"}


@says(t.NotRegularFile)
def _not_regular_file(r: t.NotRegularFile, s: Say) -> str:
    return f"通常のファイルではありません（{_KINDS[r.kind]}）。タスクファイルは TOML のテキストファイルです"


@says(t.TaskFileTooLarge)
def _task_file_too_large(r: t.TaskFileTooLarge, s: Say) -> str:
    return f"大きすぎます（{r.mib:.1f} MiB）。タスクファイルは 1 MiB までです"


@says(t.ReadTimedOut)
def _read_timed_out(r: t.ReadTimedOut, s: Say) -> str:
    return f"{r.seconds:g} 秒以内に読み込めませんでした"


@says(t.NoTaskFile)
def _no_task_file(r: t.NoTaskFile, s: Say) -> str:
    return "タスクファイルがありません"


@says(t.TaskFileUnreadable)
def _task_file_unreadable(r: t.TaskFileUnreadable, s: Say) -> str:
    return f"読み込めません: {s.text(r.error)}"


@says(t.TaskFileNotToml)
def _task_file_not_toml(r: t.TaskFileNotToml, s: Say) -> str:
    return f"TOML として読めません: {s.text(r.error)}"


@says(t.TaskFileNotUtf8)
def _task_file_not_utf8(r: t.TaskFileNotUtf8, s: Say) -> str:
    return "TOML として読めません: UTF-8 のテキストではありません"


@says(t.NestedTooDeep)
def _nested_too_deep(r: t.NestedTooDeep, s: Say) -> str:
    return "TOML として読めません: 配列かテーブルの入れ子が深すぎます"


@says(t.TaskNotTable)
def _task_not_table(r: t.TaskNotTable, s: Say) -> str:
    return "テーブル [task] にしてください"


@says(t.KeysBesideTask)
def _keys_beside_task(r: t.KeysBesideTask, s: Say) -> str:
    return "タスクのキーは [task] の下か、すべて最上位に書いてください"
