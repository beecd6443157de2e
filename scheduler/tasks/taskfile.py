"""TOML task files → TaskSpec, with validation that names the file, the key and what is wrong.

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
    machine = "any"                   # cluster: "any" machine, or one by name (gputray cluster status)
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

import dataclasses
import datetime as dt
import difflib
import math
import os
import re
import stat
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from gputray.scheduler.protocol import MAX_ID as MAX_TASK_ID
from gputray.scheduler.protocol import Refusal, check_duration_s, check_epoch_s, check_size_bytes
from gputray.scheduler.tasks.needs import NEEDS
from gputray.scheduler.tasks.records import (
    AFTER_MAX_WAIT,
    KINDS,
    MACHINE_RE,
    MAX_PRIORITY,
    MAX_RETRIES,
    ON_BUSY,
    PLACEHOLDERS,
    TaskSpec,
    fills_placeholders,
    parse_window,
    unknown_placeholders,
)


class TaskFileError(Refusal, ValueError):
    """A task file (or submitted spec) is invalid; the message names the source, the key and the problem."""


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|sec|min|hr|s|m|h|d)?", re.IGNORECASE)
_DURATION_UNITS = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)
_SIZE_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}

# File key → spec field. Both spellings are accepted; the short one is what people write.
KEY_ALIASES = {
    "devices": "device_prefs",
    "device": "device_prefs",
    "max_wait": "max_wait_s",
    "vram": "vram_bytes",
    "timeout": "timeout_s",
    "backoff": "backoff_s",
}
_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))  # every field name is a key too
TASK_KEYS = frozenset(_FIELDS | set(KEY_ALIASES))  # every key a task file may use


def parse_duration(value: object) -> float:
    """``"10m"`` → 600.0; numbers are seconds. Raises ValueError with a readable message."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like '10m' or a number of seconds, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a duration ≥ 0, got {value!r}")
        return check_duration_s(float(value))
    if not isinstance(value, str):
        raise ValueError(f"expected a duration like '10m', got {type(value).__name__}")
    text = value.strip().replace(" ", "")
    if not text:
        raise ValueError("expected a duration like '10m', got an empty string")
    if text.startswith("-"):
        raise ValueError(f"a duration cannot be negative, got {value!r:.80}")
    total, pos = 0.0, 0
    for m in _DURATION_RE.finditer(text):
        if m.start() != pos or (m.group(2) is None and m.end() != len(text)):
            break
        total += float(m.group(1)) * _DURATION_UNITS[(m.group(2) or "s").lower()]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"expected a duration like '90s', '10m', '1h30m' or '2d', got {value!r:.80}")
    return check_duration_s(total)


def parse_size(value: object) -> int:
    """``"4GiB"`` → 4294967296; ``"4GB"`` is SI (4e9); bare ``"4G"`` is binary. Numbers are bytes."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size like '4GiB' or a number of bytes, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a size ≥ 0, got {value!r}")
        return check_size_bytes(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size like '4GiB', got {type(value).__name__}")
    if value.strip().startswith("-"):
        raise ValueError(f"a size cannot be negative, got {value!r:.80}")
    m = _SIZE_RE.match(value)
    if not m or (not m.group(2) and (m.group(3))):
        raise ValueError(f"expected a size like '512MiB', '4GiB' or '4GB', got {value!r:.80}")
    number, prefix, binary, b = m.groups()
    prefix = prefix.lower()
    base = 1000 if (prefix and b and not binary) else 1024
    return check_size_bytes(float(number) * base ** _SIZE_POW[prefix])  # float("9" * 400) is inf


def parse_start_at(value: object) -> float:
    """A TOML datetime, an ISO string (local time without an offset) or epoch seconds → epoch seconds,
    within the years 1970–9999."""
    return check_epoch_s(_start_at(value), "start_at")


def _start_at(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a date and time like 2026-12-01T01:00:00, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"expected a date and time like 2026-12-01T01:00:00, got {value!r}") from None
    if isinstance(value, dt.datetime):
        return value.timestamp()  # naive → local time, as a person means it
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).timestamp()
    raise ValueError(f"expected a date and time like 2026-12-01T01:00:00, got {type(value).__name__}")


MAX_TASK_FILE_BYTES = 1 << 20
TASK_FILE_READ_S = 10.0


def _read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file of at most 1 MiB. Opened without blocking (a FIFO put in its place
    must not hang the reader) and checked after opening (what was opened is what is read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "folder"
                if stat.S_ISDIR(st.st_mode)
                else "FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "device or socket"
            )
            raise TaskFileError(f"{path}: not a regular file (a {kind}); a task file is a TOML text file")
        chunks, size = [], 0
        while size <= MAX_TASK_FILE_BYTES:
            chunk = os.read(fd, min(1 << 16, MAX_TASK_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_TASK_FILE_BYTES or st.st_size > MAX_TASK_FILE_BYTES:
            mib = max(size, st.st_size) / (1 << 20)
            raise TaskFileError(f"{path}: too large ({mib:.1f} MiB); a task file may be at most 1 MiB")
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
        raise TaskFileError(f"{path}: could not be read within {TASK_FILE_READ_S:g} s")
    if failure:
        raise failure[0]
    return result[0]


def load_task_file(path: Path) -> TaskSpec:
    """Read and validate one task file. Errors (TaskFileError) name the file, the key and the problem."""
    path = Path(path)
    try:
        data = tomllib.loads(read_task_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        raise TaskFileError(f"{path}: no such task file") from None
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise TaskFileError(f"{path}: not valid TOML: the file is not UTF-8 text") from None
    except RecursionError:
        raise TaskFileError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    if "task" in data:
        table = data["task"]
        if not isinstance(table, dict):
            raise TaskFileError(f"{path}: key 'task': must be a table ([task])")
        rest = {k: v for k, v in data.items() if k != "task"}
        if set(rest) - {"env"}:
            extra = sorted(set(rest) - {"env"})
            raise TaskFileError(
                f"{path}: key '{extra[0]}': put task keys under [task] or all at the top level"
            )
        if "env" in rest and "env" not in table:
            table = {**table, "env": rest["env"]}
        data = table
    base = path.resolve().parent
    return spec_from_mapping(data, source=str(path), base_dir=base)


def with_overrides(spec: TaskSpec, overrides: Mapping[str, Any] | None, *, source: str) -> TaskSpec:
    """``spec`` with some keys replaced (CLI options, a schedule's overrides, an edit), validated as a
    task file is. ``env`` adds to the spec's variables (``--env`` sets one, it does not drop the rest)."""
    if not overrides:
        return spec
    changes = dict(overrides)
    env = changes.get("env")
    if isinstance(env, Mapping):
        changes["env"] = {**spec.env, **env}
    return spec_from_record_dict({**spec.to_dict(), **changes}, source=source)


def spec_from_record_dict(data: Mapping[str, Any], *, source: str = "task") -> TaskSpec:
    """Validate a ``TaskSpec.to_dict()``-style mapping (the IPC wire form). Paths are kept as given."""
    return spec_from_mapping(data, source=source, base_dir=None)


#: Keys people write that mean another (a command is its argument list, ``argv = ["ffmpeg", …]``).
GUESSES = {"command": "argv", "cmd": "argv", "program": "argv", "gpu": "device", "gpus": "devices"}


def spec_from_mapping(  # noqa: C901 - one key after the other, flat on purpose
    data: Mapping[str, Any], *, source: str, base_dir: Path | None = None
) -> TaskSpec:
    """Validate a task mapping (file keys or field names) into a TaskSpec.

    With ``base_dir``, relative ``script``, ``files`` and ``cwd`` are made absolute against it.
    """
    if not isinstance(data, Mapping):
        raise TaskFileError(f"{source}: a task must be a table of keys, got {type(data).__name__}")
    values: dict[str, Any] = {}
    for raw_key, value in data.items():
        if not isinstance(raw_key, str):
            raise TaskFileError(f"{source}: keys must be strings, got {raw_key!r}")
        key = KEY_ALIASES.get(raw_key, raw_key)
        if key not in _FIELDS:
            known = sorted(TASK_KEYS - {"base_env", "origin"})  # those two gputray writes itself
            hint = (
                [GUESSES[raw_key]] if raw_key in GUESSES else difflib.get_close_matches(raw_key, known, n=1)
            )
            suggestion = f" (did you mean '{hint[0]}'?)" if hint else f"; the keys are: {', '.join(known)}"
            raise TaskFileError(f"{source}: key '{raw_key}': unknown key{suggestion}")
        if key in values and value is None:
            continue  # ``{**spec.to_dict(), "vram": "4GiB"}``: an unset field under the other spelling
        if key in values and values[key][1] is not None and raw_key == key:
            raise TaskFileError(f"{source}: key '{raw_key}': given twice (under two spellings)")
        values[key] = (raw_key, value)  # a later spelling overrides an earlier one

    def err(key: str, problem: str) -> TaskFileError:
        raw = values[key][0] if key in values else key
        return TaskFileError(f"{source}: key '{raw}': {problem}")

    def get(key: str, default: Any = None) -> Any:
        value = values[key][1] if key in values else None
        return default if value is None else value

    def string(key: str) -> str | None:
        value = get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise err(key, f"must be a non-empty string, got {value!r}")
        if "\x00" in value:
            raise err(key, "contains a NUL character")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = get(key, [])
        if isinstance(value, str):
            value = [value] if key in {"device_prefs", "needs", "files"} else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise err(key, f"must be a list of strings, got {get(key)!r}")
        if any("\x00" in v for v in value):
            raise err(key, "contains a NUL character")
        return tuple(value)

    def choice(key: str, options: tuple[str, ...], default: str) -> str:
        value = get(key, default)
        if value not in options:
            raise err(key, f"must be one of {', '.join(options)}; got {value!r}")
        return cast(str, value)

    def number(key: str, parse: Any, default: Any = None) -> Any:
        value = get(key)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError as exc:
            raise err(key, str(exc)) from None

    def known_needs(needs: tuple[str, ...]) -> tuple[str, ...]:
        if not needs:
            return needs
        unknown = [n for n in needs if n.strip().lower() not in NEEDS]
        if unknown:
            raise err("needs", f"unknown {unknown[0]!r}; known: {', '.join(sorted(NEEDS))}")
        return needs

    def positive(key: str, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise err(key, f"must be more than 0 (leave it out for no limit), got {value:g} s")
        return value

    def integer(key: str, default: int, *, minimum: int, maximum: int) -> int:
        value = get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise err(key, f"must be a whole number, got {value!r}")
        if value < minimum:
            raise err(key, f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise err(key, f"must be at most {maximum}, got {value}")
        return value

    def task_ids(key: str) -> tuple[int, ...]:
        value = get(key, [])
        if isinstance(value, int | str) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list):
            raise err(key, f"must be a list of task ids like [12, 13], got {value!r}")
        ids: list[int] = []
        for item in value:
            text = item.strip().lstrip("#") if isinstance(item, str) else None
            if text is not None and text.isdigit():
                item = int(text)
            if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_TASK_ID:
                raise err(key, f"task ids are whole numbers from 1, got {item!r}")
            if item not in ids:
                ids.append(item)
        return tuple(ids)

    def path(key: str, value: str) -> str:
        if base_dir is None:
            return value
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else base_dir / p)

    kind = get("kind")
    if kind is None:
        kind = "torch" if "script" in values else "command"
    if kind not in KINDS:
        raise err("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")

    script = string("script")
    argv = strings("argv")
    args = strings("args")
    if kind == "torch":
        if script is None:
            raise err("script", "missing: a torch task needs the Python script to run")
        if argv:
            raise err("argv", "not used by torch tasks: give 'script' and 'args'")
        script = path("script", script)
    else:
        if script is not None:
            raise err("script", f"only torch tasks take a script; a {kind} task takes 'argv'")
        if not argv:
            raise err("argv", f"missing: a {kind} task needs the program and its arguments as a list")
        if not argv[0].strip():
            raise err("argv", "the program name (first element) is empty")
        if args:
            raise err("args", f"not used by {kind} tasks: put every argument in 'argv'")
    # Placeholders exist only in templates (vulkan tasks, recipes): a command's argv is the user's own
    # program line and may hold braces, JSON or f-strings that must reach the program verbatim.
    opt_in = get("placeholders", False)
    if not isinstance(opt_in, bool):
        raise err("placeholders", f"must be true or false, got {opt_in!r}")
    templated = fills_placeholders(kind, get("recipe"), opt_in)
    for key, items in (("argv", argv), ("args", args)):
        for item in items if templated else ():
            bad = unknown_placeholders(item)
            if bad:
                raise err(
                    key,
                    f"unknown placeholder {{{bad[0]}}} in {item!r}; known: "
                    + " ".join(f"{{{p}}}" for p in PLACEHOLDERS),
                )

    files = tuple(path("files", f) for f in strings("files"))
    out = string("out")
    if out is not None and templated and unknown_placeholders(out):
        raise err("out", f"unknown placeholder {{{unknown_placeholders(out)[0]}}} in {out!r}")

    prefs = strings("device_prefs")
    if any(not p.strip() for p in prefs):
        raise err("device_prefs", "contains an empty device name")

    env_raw = get("env", {})
    if not isinstance(env_raw, Mapping):
        raise err("env", f'must be a table of NAME = "value", got {env_raw!r}')
    env: dict[str, str] = {}
    for name, value in env_raw.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise err("env", f"{name!r} is not a valid environment variable name")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise err("env", f"{name}: value must be a string, got {value!r}")
        text = str(value)
        if "\x00" in text:
            raise err("env", f"{name}: value contains a NUL character")
        bad = unknown_placeholders(text) if templated else []
        if bad:
            raise err("env", f"{name}: unknown placeholder {{{bad[0]}}}")
        env[name] = text

    base_env = get("base_env")
    if base_env is not None:  # the submitter's environment, as os.environ holds it: any name the OS takes
        if not isinstance(base_env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\x00" not in k + v
            for k, v in base_env.items()
        ):
            raise err("base_env", "must be a table of environment variables (names without '=', no NUL)")
        base_env = dict(base_env)

    uses_file = any("{file}" in t for t in (*argv, *args, out or "", *env.values()))
    if templated and uses_file and not files:
        raise err("files", 'the command uses {file} but no input file is given (files = ["…"])')

    window = string("window")
    if window is not None:
        try:
            parse_window(window)
        except ValueError as exc:
            raise err("window", str(exc)) from None

    name = string("name")
    if name is None:
        if kind == "torch" and script:
            name = Path(script).name
        elif files:
            name = f"{Path(argv[0]).name} {Path(files[0]).name}"
        else:
            name = Path(argv[0]).name
    cwd = string("cwd")
    after_any = get("after_any", False)
    if not isinstance(after_any, bool):
        raise err("after_any", f"must be true or false, got {after_any!r}")
    util = get("util_percent", 90.0)
    if isinstance(util, bool) or not isinstance(util, int | float) or not 0 <= util <= 100:
        raise err("util_percent", f"must be a number from 0 to 100, got {util!r}")
    vram = number("vram_bytes", parse_size)
    machine = string("machine")
    if machine is not None and not MACHINE_RE.match(machine):
        raise err("machine", f'must be "any" or a machine name (letters, digits, . _ -), got {machine!r}')
    return TaskSpec(
        kind=cast(Any, kind),
        name=name,
        argv=argv,
        script=script,
        args=args,
        files=files,
        out=out,
        device_prefs=prefs,
        on_busy=cast(Any, choice("on_busy", ON_BUSY, "wait")),
        max_wait_s=number("max_wait_s", parse_duration),
        after_max_wait=cast(Any, choice("after_max_wait", AFTER_MAX_WAIT, "redirect")),
        vram_bytes=vram,
        priority=integer("priority", 0, minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY),
        needs=known_needs(strings("needs")),
        start_at=number("start_at", parse_start_at),
        window=window,
        timeout_s=positive("timeout_s", number("timeout_s", parse_duration)),
        retries=integer("retries", 0, minimum=0, maximum=MAX_RETRIES),
        backoff_s=number("backoff_s", parse_duration, 30.0),
        env=env,
        base_env=base_env,
        cwd=path("cwd", cwd) if cwd else None,
        recipe=string("recipe"),
        after=task_ids("after"),
        after_any=after_any,
        placeholders=opt_in,
        util_percent=float(util),
        machine=machine,
        origin=string("origin"),
    )
