"""TOML task files → TaskSpec: the task-file spelling (``vram = "4GiB"``, ``devices``) read into a
``TaskPatch`` (``patch_from_table``; the fields' limits are on the Struct), then the checks that relate
fields to each other (``spec_from_patch``). Errors name the file, the key as written and what is wrong.

A task file holds the keys at the top level or under ``[task]``::

    name = "train"
    kind = "torch"                    # torch | vulkan | command
    script = "train.py"               # torch: the script (relative to this file) ...
    args = ["--epochs", "3"]          # ... and its arguments
    # argv = ["realesrgan-ncnn-vulkan", "-i", "{file}", "-o", "{out}", "-g", "{vk_index}"]  (vulkan)
    files = ["photo.png"]
    out = "{stem}_x4.png"
    devices = ["5060ti", "780m", "cpu"]
    on_busy = "redirect"              # wait | redirect | cpu
    max_wait = "10m"
    after_max_wait = "cpu"            # redirect | cpu | fail
    vram = "4GiB"
    priority = 0
    needs = ["fp16"]
    start_at = 2026-12-01T01:00:00    # TOML datetime or ISO string; local time when no offset
    window = "01:00-07:00"
    timeout = "2h"
    retries = 2
    backoff = "30s"
    cwd = "."                         # default: where `gputray submit` was typed
    after = [12, 13]                  # start once tasks 12 and 13 succeeded ...
    after_any = false                 # ... true: once they ended, however
    allow_unproven = false            # torch: run where the env's device selection could not be proven
    machine = "any"                   # cluster: "any" machine, or one by name (`cluster status` lists them)
    prefer = "fastest"                # free (default) | fastest | greenest: see docs/queue.md
    max_slowdown = 1.5                # greenest: at most this much slower than the fastest finish
    family = "resnet-infer"           # runs of one family teach its runtime (default: recipe + script)
    [env]                             # [task.env] when the keys are under [task]
    GGML_VK_VISIBLE_DEVICES = "{vk_index}"

Placeholders (``{file}`` ``{stem}`` ``{out}`` ``{vk_index}`` ``{device}``) are filled only in
``vulkan`` tasks (argv, out, env values) and in tasks made by a recipe. A ``command`` task's argv and
env, and a ``torch`` task's args, are passed verbatim: ``argv = ["python", "-c", "print(f'{x}')"]``
runs exactly that. ``placeholders = true`` opts a command or torch task in to the filling.

Durations: a number of seconds or ``"90s"``, ``"10m"``, ``"1h30m"``, ``"2d"``. Sizes: a number of
bytes or ``"512MiB"``, ``"4GiB"``, ``"4 GB"`` (SI), ``"1.5G"`` (binary). Relative paths are relative
to the task file's folder.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from gputray.scheduler.protocol import Refusal
from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.tasks.keys import BY_FIELD, GUESSES, KEY_ALIASES, TaskKey
from gputray.scheduler.tasks.limits import ValueProblem
from gputray.scheduler.tasks.model_memory import predict_need
from gputray.scheduler.tasks.needs import NEEDS
from gputray.scheduler.tasks.records import (
    ENV_NAME_RE,
    MAX_TASK_ID,
    PLACEHOLDERS,
    TaskPatch,
    TaskSpec,
    fills_placeholders,
    parse_window,
    unknown_placeholders,
)
from gputray.scheduler.tasks.spelling import parse_duration, parse_size, parse_start_at


class TaskFileError(Refusal, ValueError):
    """A task file (or submitted spec) is invalid; ``said``: where, the key and the problem, as a code
    (``reasons.taskfile_codes``) the tray words in its language; ``str()`` is its English, as the
    command line has always said it."""

    def __init__(self, said: t.TaskInvalid) -> None:
        from gputray.scheduler.reasons.render import render

        super().__init__(render(said))
        self.said = said

    def __reduce__(self) -> tuple[type[TaskFileError], tuple[t.TaskInvalid]]:
        return type(self), (self.said,)  # pickled (a process pool, the cluster) with its code


def _bad(where: t.Where, problem: t.Problem, key: str | None = None) -> TaskFileError:
    return TaskFileError(t.TaskInvalid(where=where, what=t.TaskProblem(key=key, problem=problem)))


def problem_of(exc: ValueError) -> t.Problem:
    """What a value check said, as a code: its own (``ValueProblem``), or its words as written."""
    return exc.said if isinstance(exc, ValueProblem) else t.TypeSaid(error=str(exc))


# Task-file key → TaskSpec field: every field name a task file may hold (not a predicted memory need,
# which is worked out), and the spellings ``tasks.keys`` declares.
KEYS: dict[str, str] = {**{k.field: k.field for k in BY_FIELD.values() if k.in_file}, **KEY_ALIASES}
TASK_KEYS = frozenset(KEYS)  # every key a task file may use
__all__ = [  # re-exported: the spellings (tasks.keys) and how values are written (tasks.spelling)
    "GUESSES",
    "KEY_ALIASES",
    "parse_duration",
    "parse_size",
    "parse_start_at",
]


MAX_TASK_FILE_BYTES = 1 << 20
TASK_FILE_READ_S = 10.0


def _read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file of at most 1 MiB. Opened without blocking (a FIFO put in its place
    must not hang the reader) and checked after opening (what was opened is what is read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind: Literal["folder", "FIFO", "device or socket"] = (
                "folder"
                if stat.S_ISDIR(st.st_mode)
                else "FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "device or socket"
            )
            raise _bad(str(path), t.NotRegularFile(kind=kind))
        chunks, size = [], 0
        while size <= MAX_TASK_FILE_BYTES:
            chunk = os.read(fd, min(1 << 16, MAX_TASK_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_TASK_FILE_BYTES or st.st_size > MAX_TASK_FILE_BYTES:
            mib = max(size, st.st_size) / (1 << 20)
            raise _bad(str(path), t.TaskFileTooLarge(mib=mib))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_task_bytes(path: Path) -> bytes:
    """``_read_regular_file`` in a thread of its own, so that the caller (the owner's socket handler)
    is never held by a file system that hangs: TaskFileError if it takes more than ``TASK_FILE_READ_S``."""
    result: list[bytes] = []
    failure: list[BaseException] = []

    def read() -> None:
        try:
            result.append(_read_regular_file(path))
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    reader = threading.Thread(target=read, name="gputray-read-task-file", daemon=True)
    reader.start()
    reader.join(TASK_FILE_READ_S)
    if reader.is_alive():
        raise _bad(str(path), t.ReadTimedOut(seconds=TASK_FILE_READ_S))
    if failure:
        raise failure[0]
    return result[0]


def load_task_file(path: Path) -> TaskSpec:
    """Read and validate one task file. Errors (TaskFileError) name the file, the key and the problem."""
    path = Path(path)
    try:
        data = tomllib.loads(read_task_bytes(path).decode("utf-8-sig"))  # a BOM (Notepad) is no statement
    except FileNotFoundError:
        raise _bad(str(path), t.NoTaskFile()) from None
    except OSError as exc:
        raise _bad(str(path), t.TaskFileUnreadable(error=str(exc.strerror or exc))) from None
    except tomllib.TOMLDecodeError as exc:
        raise _bad(str(path), t.TaskFileNotToml(error=str(exc))) from None
    except UnicodeDecodeError:
        raise _bad(str(path), t.TaskFileNotUtf8()) from None
    except RecursionError:
        raise _bad(str(path), t.NestedTooDeep()) from None
    if "task" in data:
        table = data["task"]
        if not isinstance(table, dict):
            raise _bad(str(path), t.TaskNotTable(), "task")
        rest = {k: v for k, v in data.items() if k != "task"}
        if set(rest) - {"env"}:
            extra = sorted(set(rest) - {"env"})
            raise _bad(str(path), t.KeysBesideTask(), extra[0])
        if "env" in rest and "env" not in table:
            table = {**table, "env": rest["env"]}
        data = table
    base = path.resolve().parent
    return spec_from_table(data, source=str(path), base_dir=base)


def spec_from_table(data: Mapping[str, Any], *, source: t.Where, base_dir: Path | None = None) -> TaskSpec:
    """A task table in task-file spelling → a checked TaskSpec (``patch_from_table`` then
    ``spec_from_patch``). With ``base_dir``, relative ``script``, ``files`` and ``cwd`` are made
    absolute against it."""
    return spec_from_patch(patch_from_table(data, source=source, base_dir=base_dir), source=source)


# --- task-file spelling → TaskPatch -----------------------------------------------------------------


def patch_from_table(data: Mapping[str, Any], *, source: t.Where, base_dir: Path | None = None) -> TaskPatch:
    """A task table as people write it (``vram = "4GiB"``, ``max_wait = "10m"``, ``devices = "cpu"``)
    → the TaskPatch it means, each value within the limits of its field. Errors (TaskFileError) name
    ``source``, the key as written and what it takes. Only keys present are set."""
    if not isinstance(data, Mapping):
        raise _bad(source, t.NotATable(got=type(data).__name__))
    spelled: dict[str, str] = {}  # field → the key as written, for messages
    raw: dict[str, Any] = {}  # field → the value as written
    for key, value in data.items():
        if not isinstance(key, str):
            raise _bad(source, t.KeyNotText(got=repr(key)))
        field = KEYS.get(key)
        if field is None:
            raise _bad(source, _suggestion(key), key)
        if value is None and field in raw:
            continue
        if field in spelled and raw[field] is not None:
            raise _bad(source, t.GivenTwice(), key)
        spelled[field], raw[field] = key, value
    values: dict[str, Any] = {}
    for field, value in raw.items():
        if value is None and field not in MAY_BE_NONE:
            continue  # "not given", as a stored table of an older gputray may say
        try:
            values[field] = _spelled_value(field, value, base_dir)
        except ValueError as exc:
            raise _bad(source, problem_of(exc), spelled[field]) from None
    try:
        return msgspec.convert(values, TaskPatch, strict=True)
    except msgspec.ValidationError as exc:
        found = re.search(r"`\$\.(\w+)", str(exc))
        if found is None or found.group(1) not in spelled:
            raise _bad(source, t.TypeSaid(error=str(exc))) from None
        field = found.group(1)
        problem = value_problem(field, values[field]) or t.TypeSaid(
            error=str(exc).partition(" - at ")[0].lower()
        )
        raise _bad(source, problem, spelled[field]) from None


#: Fields that may be empty (script, out, max_wait_s …): None in a patch clears them.
MAY_BE_NONE = frozenset(f.name for f in msgspec.structs.fields(TaskSpec) if f.default is None)


def _suggestion(key: str) -> t.UnknownTaskKey:
    known = sorted(k for k in TASK_KEYS if not BY_FIELD[KEYS[k]].by_gputray)  # base_env, origin: ours
    hint = [GUESSES[key]] if key in GUESSES else difflib.get_close_matches(key, known, n=1)
    return t.UnknownTaskKey(suggestion=hint[0]) if hint else t.UnknownTaskKey(known=tuple(known))


def _spelled_value(field: str, value: Any, base_dir: Path | None) -> Any:
    """One value as written → as its field holds it (units read, paths made absolute), by the key's
    ``spelling`` (``tasks.keys``); anything it cannot read is left for the field's type to refuse.
    ValueError says what is wrong."""
    if value is None:
        return None
    spelling = BY_FIELD[field].spelling
    if spelling == "duration":
        return parse_duration(value)
    if spelling == "size":
        return parse_size(value)
    if spelling == "time":
        return parse_start_at(value)
    if spelling == "task_ids":
        return _task_ids(value)
    if spelling in ("list", "paths") and isinstance(value, str):
        value = [value]
    if spelling == "env" and isinstance(value, Mapping):  # numbers are written as numbers, meant as text
        return {k: str(v) if type(v) in (int, float) else v for k, v in value.items()}
    if base_dir is not None and spelling == "path" and _pathlike(value):
        return _absolute(value, base_dir)
    if (
        base_dir is not None
        and spelling == "paths"
        and isinstance(value, list)
        and all(map(_pathlike, value))
    ):
        return [_absolute(v, base_dir) for v in value]
    return value


def _pathlike(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\x00" not in value


def _absolute(value: str, base_dir: Path) -> str:
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else base_dir / p)


def _task_ids(value: object) -> list[int]:
    """``after = [12, "#13"]`` (or one id) → ``[12, 13]``, each once."""
    if isinstance(value, int | str) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise ValueProblem(t.UnreadableValue(form="task_ids", got=repr(value)))
    ids: list[int] = []
    for item in value:
        text = item.strip().lstrip("#") if isinstance(item, str) else None
        if text is not None and text.isdigit():
            item = int(text)
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_TASK_ID:
            raise ValueProblem(t.BadTaskId(got=repr(item)))
        if item not in ids:
            ids.append(item)
    return ids


def value_problem(field: str, value: Any) -> t.Problem | None:
    """What a field takes, said for a value its type refused (msgspec names only the field), by the
    key's ``form`` (``tasks.keys``)."""
    key = BY_FIELD[field]
    if key.form == "choice":
        return t.NotOneOf(choices=key.choices, got=repr(value))
    if key.form == "whole" and key.whole is not None:
        low, high = key.whole
        if isinstance(value, bool) or not isinstance(value, int):
            return t.NotWhole(got=repr(value))
        if value < low:
            return t.TooLow(low=low, got=str(value))
        return t.TooHigh(high=high, got=str(value))
    if key.form == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return t.NotStrings(got=repr(value))
        if any("\x00" in v for v in value):
            return t.HasNul()
        return t.EmptyDeviceName() if field == "device_prefs" else None
    if key.form == "bool":
        return t.NotTrueFalse(got=repr(value))
    if key.form == "number" and key.takes:
        return t.MustTake(takes=key.takes, got=repr(value))
    if key.spelling == "duration" and field == "timeout_s" and isinstance(value, float) and value <= 0:
        return t.NoTimeout(got_s=value)
    if key.form == "env":
        return _env_problem(value)
    if key.form == "base_env":
        return t.BaseEnvBad()
    return _text_problem(key, value)


def _text_problem(key: TaskKey, value: Any) -> t.Problem | None:
    if not isinstance(value, str) or not value.strip():
        return t.NotText(got=repr(value))
    if "\x00" in value:
        return t.HasNul()
    if key.takes:
        return t.MustTake(takes=key.takes, got=repr(value))
    return None


def _env_problem(env: Any) -> t.Problem | None:
    if not isinstance(env, Mapping):
        return t.EnvNotTable(got=repr(env))
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME_RE.match(name):
            return t.EnvBadName(got=repr(name))
        if not isinstance(value, str):
            return t.EnvValueNotText(name=name, got=repr(value))
        if "\x00" in value:
            return t.EnvValueNul(name=name)
    return None


# --- TaskPatch → TaskSpec: what relates fields to each other ---------------------------------------


def spec_from_patch(patch: TaskPatch, *, source: t.Where, base: TaskSpec | None = None) -> TaskSpec:
    """The task ``patch`` makes, alone or laid over ``base`` (an edit, a schedule's overrides): the
    checks that relate fields to each other (kind vs script/argv, placeholders, ``needs``, ``window``),
    and the defaults that depend on others (kind, name). The fields' own limits were checked where the
    patch was decoded. TaskFileError names ``source``, the key and the problem."""
    if base is not None:
        patch = TaskPatch.of(base).then(patch)
    given = patch.given()

    def err(key: str, problem: t.Problem) -> TaskFileError:
        return _bad(source, problem, key)

    script, argv, args = given.get("script"), given.get("argv", ()), given.get("args", ())
    kind = given.get("kind") or ("torch" if "script" in given else "command")
    if kind == "torch":
        if script is None:
            raise err("script", t.NeedsScript())
        if argv:
            raise err("argv", t.TorchTakesNoArgv())
    else:
        if script is not None:
            raise err("script", t.ScriptOnlyTorch(kind=kind))
        if not argv:
            raise err("argv", t.NeedsArgv(kind=kind))
        if not argv[0].strip():
            raise err("argv", t.ProgramEmpty())
        if args:
            raise err("args", t.ArgsUnused(kind=kind))
    # Placeholders exist only in templates (vulkan tasks, recipes): a command's argv is the user's own
    # program line and may hold braces, JSON or f-strings that must reach the program verbatim.
    templated = fills_placeholders(kind, given.get("recipe"), bool(given.get("placeholders")))
    out, env, files = given.get("out"), given.get("env", {}), given.get("files", ())
    if templated:
        _check_placeholders(err, argv, args, out, env)
    if templated and not files and any("{file}" in t for t in (*argv, *args, out or "", *env.values())):
        raise err("files", t.FileWithoutFiles())
    if given.get("window") is not None:
        try:
            parse_window(given["window"])
        except ValueError as exc:
            raise err("window", problem_of(exc)) from None
    needs = given.get("needs", ())
    if needs:
        unknown = [n for n in needs if n.strip().lower() not in NEEDS]
        if unknown:
            raise err("needs", t.UnknownNeed(got=repr(unknown[0]), known=tuple(sorted(NEEDS))))
    name = given.get("name")
    if name is None:
        if kind == "torch":
            name = Path(str(script)).name
        elif files:
            name = f"{Path(argv[0]).name} {Path(files[0]).name}"
        else:
            name = Path(argv[0]).name
    after = tuple(dict.fromkeys(given.get("after", ())))
    spec = TaskSpec(**{**given, "kind": kind, "name": name, "after": after})
    return with_memory_need(spec)


def with_memory_need(spec: TaskSpec) -> TaskSpec:
    """The spec with the memory need its model files predict (``model_memory``), when it gives no
    ``vram``; one whose files cannot be read here (another machine's) keeps what it had."""
    if spec.vram_bytes is not None:
        return msgspec.structs.replace(spec, vram_need_bytes=None, vram_need_source=None)
    args = spec.args if spec.kind == "torch" else spec.argv[1:]
    need = predict_need(spec.files, args, spec.cwd)
    if need is None:
        return spec
    return msgspec.structs.replace(spec, vram_need_bytes=need.bytes, vram_need_source=need.source)


def _check_placeholders(
    err: Callable[[str, t.Problem], TaskFileError],
    argv: Sequence[str],
    args: Sequence[str],
    out: str | None,
    env: Mapping[str, str],
) -> None:
    for key, items in (("argv", argv), ("args", args)):
        for item in items:
            bad = unknown_placeholders(item)
            if bad:
                raise err(key, t.UnknownPlaceholder(name=bad[0], within=item, known=PLACEHOLDERS))
    if out is not None and unknown_placeholders(out):
        raise err("out", t.UnknownPlaceholder(name=unknown_placeholders(out)[0], within=out))
    for name, text in env.items():
        bad = unknown_placeholders(text)
        if bad:
            raise err("env", t.UnknownPlaceholder(name=bad[0], variable=name))
