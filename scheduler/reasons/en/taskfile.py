"""English words for what is wrong in a task (``reasons/taskfile_codes.py``), as the command line has
always said them: ``job.toml: key 'argv': unknown placeholder {fil} in 'x {fil}'; known: {file} …``."""

from __future__ import annotations

from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says

_FORMS = {
    "duration": "a duration like '10m'",
    "duration_or_seconds": "a duration like '10m' or a number of seconds",
    "duration_forms": "a duration like '90s', '10m', '1h30m' or '2d'",
    "size": "a size like '4GiB'",
    "size_or_bytes": "a size like '4GiB' or a number of bytes",
    "size_forms": "a size like '512MiB', '4GiB' or '4GB'",
    "time": "a date and time like 2026-12-01T01:00:00",
    "window": "a daily window like '01:00-07:00'",
}
_TAKES = {
    "percent": "a number from 0 to 100",
    "machine": '"any" or a machine name (letters, digits, . _ -)',
    "slowdown": "a number from 1 to 100 (1.5: at most 50 % slower than the fastest)",
}


@says(t.TaskInvalid)
def _task_invalid(r: t.TaskInvalid, s: Say) -> str:
    return f"{s(r.where) if not isinstance(r.where, str) else r.where}: {s(r.what)}"


@says(t.TaskProblem)
def _task_problem(r: t.TaskProblem, s: Say) -> str:
    return s(r.problem) if r.key is None else f"key '{r.key}': {s(r.problem)}"


@says(t.Submitted)
def _submitted(r: t.Submitted, s: Say) -> str:
    return "submitted task"


@says(t.RunCommand)
def _run_command(r: t.RunCommand, s: Say) -> str:
    return "gputray run"


@says(t.EditOf)
def _edit_of(r: t.EditOf, s: Say) -> str:
    return f"edit of task #{r.task_id}"


@says(t.FromMachine)
def _from_machine(r: t.FromMachine, s: Say) -> str:
    return f"a task from {r.machine}"


@says(t.RecipeFor)
def _recipe_for(r: t.RecipeFor, s: Say) -> str:
    return f"recipe '{r.recipe}' for {r.file}"


# -- one value ------------------------------------------------------------------------------------


@says(t.UnreadableValue)
def _unreadable_value(r: t.UnreadableValue, s: Say) -> str:
    got = "an empty string" if r.got is None else r.got
    if r.form == "task_ids":
        return f"must be a list of task ids like [12, 13], got {got}"
    return f"expected {_FORMS[r.form]}, got {got}"


@says(t.Negative)
def _negative(r: t.Negative, s: Say) -> str:
    if r.number:
        return f"expected a {r.what} ≥ 0, got {r.got}"
    return f"a {r.what} cannot be negative, got {r.got}"


@says(t.TooLong)
def _too_long(r: t.TooLong, s: Say) -> str:
    return f"a duration must be between 0 and 10 years ({r.limit_s:.0f} s), got {r.got_s:g} s"


@says(t.TooBig)
def _too_big(r: t.TooBig, s: Say) -> str:
    return f"a size must be between 0 and 1 PiB ({r.limit_bytes} bytes), got {r.got_bytes:g}"


@says(t.DateOutOfRange)
def _date_out_of_range(r: t.DateOutOfRange, s: Say) -> str:
    return f"{r.what or 'the time'} must be a date between the years 1970 and 9999"


@says(t.WindowTimes)
def _window_times(r: t.WindowTimes, s: Say) -> str:
    return f"expected times between 00:00 and 24:00 in {r.got}"


@says(t.WindowEmpty)
def _window_empty(r: t.WindowEmpty, s: Say) -> str:
    return f"window {r.got} is empty: start and end are the same"


@says(t.BadTaskId)
def _bad_task_id(r: t.BadTaskId, s: Say) -> str:
    return f"task ids are whole numbers from 1, got {r.got}"


@says(t.NotOneOf)
def _not_one_of(r: t.NotOneOf, s: Say) -> str:
    return f"must be one of {', '.join(r.choices)}; got {r.got}"


@says(t.NotWhole)
def _not_whole(r: t.NotWhole, s: Say) -> str:
    return f"must be a whole number, got {r.got}"


@says(t.TooLow)
def _too_low(r: t.TooLow, s: Say) -> str:
    return f"must be at least {r.low}, got {r.got}"


@says(t.TooHigh)
def _too_high(r: t.TooHigh, s: Say) -> str:
    return f"must be at most {r.high}, got {r.got}"


@says(t.NotStrings)
def _not_strings(r: t.NotStrings, s: Say) -> str:
    return f"must be a list of strings, got {r.got}"


@says(t.HasNul)
def _has_nul(r: t.HasNul, s: Say) -> str:
    return "contains a NUL character"


@says(t.EmptyDeviceName)
def _empty_device_name(r: t.EmptyDeviceName, s: Say) -> str:
    return "contains an empty device name"


@says(t.NotTrueFalse)
def _not_true_false(r: t.NotTrueFalse, s: Say) -> str:
    return f"must be true or false, got {r.got}"


@says(t.MustTake)
def _must_take(r: t.MustTake, s: Say) -> str:
    return f"must be {_TAKES[r.takes]}, got {r.got}"


@says(t.NoTimeout)
def _no_timeout(r: t.NoTimeout, s: Say) -> str:
    return f"must be more than 0 (leave it out for no limit), got {r.got_s:g} s"


@says(t.NotText)
def _not_text(r: t.NotText, s: Say) -> str:
    return f"must be a non-empty string, got {r.got}"


@says(t.EnvNotTable)
def _env_not_table(r: t.EnvNotTable, s: Say) -> str:
    return f'must be a table of NAME = "value", got {r.got}'


@says(t.EnvBadName)
def _env_bad_name(r: t.EnvBadName, s: Say) -> str:
    return f"{r.got} is not a valid environment variable name"


@says(t.EnvValueNotText)
def _env_value_not_text(r: t.EnvValueNotText, s: Say) -> str:
    return f"{r.name}: value must be a string, got {r.got}"


@says(t.EnvValueNul)
def _env_value_nul(r: t.EnvValueNul, s: Say) -> str:
    return f"{r.name}: value contains a NUL character"


@says(t.BaseEnvBad)
def _base_env_bad(r: t.BaseEnvBad, s: Say) -> str:
    return "must be a table of environment variables (names without '=', no NUL)"


@says(t.TypeSaid)
def _type_said(r: t.TypeSaid, s: Say) -> str:
    return s.text(r.error)


# -- keys -----------------------------------------------------------------------------------------


@says(t.NotATable)
def _not_a_table(r: t.NotATable, s: Say) -> str:
    return f"a task must be a table of keys, got {r.got}"


@says(t.KeyNotText)
def _key_not_text(r: t.KeyNotText, s: Say) -> str:
    return f"keys must be strings, got {r.got}"


@says(t.UnknownTaskKey)
def _unknown_task_key(r: t.UnknownTaskKey, s: Say) -> str:
    if r.suggestion is not None:
        return f"unknown key (did you mean '{r.suggestion}'?)"
    return f"unknown key; the keys are: {', '.join(r.known)}"


@says(t.GivenTwice)
def _given_twice(r: t.GivenTwice, s: Say) -> str:
    return "given twice (under two spellings)"


@says(t.NeedsScript)
def _needs_script(r: t.NeedsScript, s: Say) -> str:
    return "missing: a torch task needs the Python script to run"


@says(t.TorchTakesNoArgv)
def _torch_takes_no_argv(r: t.TorchTakesNoArgv, s: Say) -> str:
    return "not used by torch tasks: give 'script' and 'args'"


@says(t.ScriptOnlyTorch)
def _script_only_torch(r: t.ScriptOnlyTorch, s: Say) -> str:
    return f"only torch tasks take a script; a {r.kind} task takes 'argv'"


@says(t.NeedsArgv)
def _needs_argv(r: t.NeedsArgv, s: Say) -> str:
    return f"missing: a {r.kind} task needs the program and its arguments as a list"


@says(t.ProgramEmpty)
def _program_empty(r: t.ProgramEmpty, s: Say) -> str:
    return "the program name (first element) is empty"


@says(t.ArgsUnused)
def _args_unused(r: t.ArgsUnused, s: Say) -> str:
    return f"not used by {r.kind} tasks: put every argument in 'argv'"


@says(t.UnknownPlaceholder)
def _unknown_placeholder(r: t.UnknownPlaceholder, s: Say) -> str:
    if r.variable is not None:
        return f"{r.variable}: unknown placeholder {{{r.name}}}"
    text = f"unknown placeholder {{{r.name}}}"
    if r.within is not None:
        text += f" in {r.within!r}"
    if r.known:
        text += "; known: " + " ".join(f"{{{p}}}" for p in r.known)
    return text


@says(t.FileWithoutFiles)
def _file_without_files(r: t.FileWithoutFiles, s: Say) -> str:
    return 'the command uses {file} but no input file is given (files = ["…"])'


@says(t.UnknownNeed)
def _unknown_need(r: t.UnknownNeed, s: Say) -> str:
    return f"unknown {r.got}; known: {', '.join(r.known)}"


# -- a task file that cannot be read --------------------------------------------------------------


@says(t.NotRegularFile)
def _not_regular_file(r: t.NotRegularFile, s: Say) -> str:
    return f"not a regular file (a {r.kind}); a task file is a TOML text file"


@says(t.TaskFileTooLarge)
def _task_file_too_large(r: t.TaskFileTooLarge, s: Say) -> str:
    return f"too large ({r.mib:.1f} MiB); a task file may be at most 1 MiB"


@says(t.ReadTimedOut)
def _read_timed_out(r: t.ReadTimedOut, s: Say) -> str:
    return f"could not be read within {r.seconds:g} s"


@says(t.NoTaskFile)
def _no_task_file(r: t.NoTaskFile, s: Say) -> str:
    return "no such task file"


@says(t.TaskFileUnreadable)
def _task_file_unreadable(r: t.TaskFileUnreadable, s: Say) -> str:
    return f"cannot read: {s.text(r.error)}"


@says(t.TaskFileNotToml)
def _task_file_not_toml(r: t.TaskFileNotToml, s: Say) -> str:
    return f"not valid TOML: {s.text(r.error)}"


@says(t.TaskFileNotUtf8)
def _task_file_not_utf8(r: t.TaskFileNotUtf8, s: Say) -> str:
    return "not valid TOML: the file is not UTF-8 text"


@says(t.NestedTooDeep)
def _nested_too_deep(r: t.NestedTooDeep, s: Say) -> str:
    return "not valid TOML: arrays or tables nested too deeply"


@says(t.TaskNotTable)
def _task_not_table(r: t.TaskNotTable, s: Say) -> str:
    return "must be a table ([task])"


@says(t.KeysBesideTask)
def _keys_beside_task(r: t.KeysBesideTask, s: Say) -> str:
    return "put task keys under [task] or all at the top level"
