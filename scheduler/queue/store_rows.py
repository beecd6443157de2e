"""Queue rows to task records, checked: a row whose spec is not JSON or holds a wrong type is no task.

The store trusts nothing it reads back: a row written by a broken or newer gputray, or by hand, must not
crash the owner or the offline ``gputray queue`` (which would lock the user out of every other task).
Such a row becomes a failed stand-in record whose reason says what is wrong; the row itself is kept.
The checks are type checks only (fast for 10,000 rows); the spec was validated when it was submitted.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from gputray.scheduler.reasons.codes import Reason, RecordUnreadable, Said
from gputray.scheduler.tasks.records import (
    AFTER_MAX_WAIT,
    KINDS,
    ON_BUSY,
    PENDING_STATES,
    STATES,
    TaskRecord,
    TaskSpec,
)

COLUMNS = (
    "id, spec, state, device, env, reason, exit_code, attempts, submitted_at, started_at, ended_at, "
    "log_path, pid, pid_create_time, position, queued_at, not_before, overtakes, name, attempts_before, "
    "machine, remote_id, remote_state, energy_j, energy_shared, paused_at, paused_s, energy_estimated_s"
)
COLUMN_NAMES = tuple(c.strip() for c in COLUMNS.split(","))
# (index, name) of the columns that are TaskRecord fields as they are (the spec is decoded; the name is
# the spec's, stored for SQL's sake).
_RECORD_COLUMNS = tuple((i, n) for i, n in enumerate(COLUMN_NAMES) if n not in ("spec", "name"))
# Columns added by a later schema, with what a file of an older schema reads as in their place (the
# read-only readers never migrate; a salvaged row of an older file lacks them): schema -> columns.
ADDED_COLUMNS: dict[int, dict[str, Any]] = {
    2: {"attempts_before": 0},
    3: {"machine": None, "remote_id": None, "remote_state": None},  # the cluster's bookkeeping
    4: {"energy_j": None, "energy_shared": 0},  # a run's GPU energy
    6: {"paused_at": None, "paused_s": 0.0},  # a job's pauses
    7: {"energy_estimated_s": 0.0},  # a run's energy counted from power (a glitching counter)
}


def _sql_literal(value: Any) -> str:
    return "NULL" if value is None else repr(value)


def columns_of_schema(version: int) -> str:
    """``COLUMNS`` for a file of schema ``version``: a column added since is read as its default."""
    names = list(COLUMN_NAMES)
    for added_in, defaults in ADDED_COLUMNS.items():
        if version < added_in:
            names = [_sql_literal(defaults[n]) if n in defaults else n for n in names]
    return ", ".join(names)


class BadSpec(ValueError):
    """A stored spec that is no TaskSpec; the message says why, for the task's reason."""


def decode_rows(
    rows: Iterable[Sequence[Any]], spec_of: Callable[[Any], TaskSpec]
) -> tuple[dict[int, TaskRecord], dict[int, tuple[str, Sequence[Any]]]]:
    """Records by id, and the rows that are no task (with why): those become failed placeholders."""
    out: dict[int, TaskRecord] = {}
    bad: dict[int, tuple[str, Sequence[Any]]] = {}
    for row in rows:
        problem = _row_problem(row)
        if problem is None:
            try:
                values = {n: row[i] for i, n in _RECORD_COLUMNS}
                for name in _BOOL_COLUMNS:
                    values[name] = bool(values[name])
                values["reason"] = reason_of(values["reason"])
                out[row[0]] = TaskRecord(spec=spec_of(row[1]), **values)
                continue
            except BadSpec as exc:
                problem = str(exc)
        out[row[0]] = unreadable_record(row, problem)
        bad[row[0]] = (problem, row)
    return out, bad


def _is_num(v: Any) -> bool:
    return (type(v) is float and not math.isnan(v)) or type(v) is int


def _num_or(v: Any, default: float | None) -> float | None:
    return float(v) if _is_num(v) else default


def _kind(hint: object) -> str:
    """A record field's kind of value: "s" text, "i" integer, "n" number; "?" added where NULL may be."""
    args = typing.get_args(hint)
    base = next((a for a in args if a is not type(None)), hint)
    kinds: dict[object, str] = {str: "s", int: "i", float: "n", bool: "b"}
    return kinds[base] + ("?" if type(None) in args else "")


# (column index, column name, kind) for each column read into the record as it is, in column order;
# the id is SQLite's own integer, the state is checked against STATES.
_HINTS = {**typing.get_type_hints(TaskRecord), "reason": str}  # the reason column holds text (``reason_of``)
_ROW_CHECKS = tuple((i, n, _kind(_HINTS[n])) for i, n in _RECORD_COLUMNS if n not in ("id", "state"))
_CHECK: dict[str, Callable[[Any], bool]] = {
    "s": lambda v: type(v) is str,
    "s?": lambda v: v is None or type(v) is str,
    "i": lambda v: type(v) is int,
    "i?": lambda v: v is None or type(v) is int,
    "n": _is_num,
    "n?": lambda v: v is None or _is_num(v),
    "b": lambda v: v == 0 or v == 1,  # SQLite's 0/1 (a bool is an int, a float 1.0 equals 1 too)
}
# The bool columns: SQLite gives 0/1, the record holds False/True.
_BOOL_COLUMNS = tuple(n for _i, n, kind in _ROW_CHECKS if kind == "b")


def _row_problem(row: Sequence[Any]) -> str | None:
    if row[2] not in STATES:
        return f"its state is {row[2]!r}"
    for index, name, kind in _ROW_CHECKS:
        if not _CHECK[kind](row[index]):
            return f"its {name} is {_shorten(row[index])}"
    return None


def _shorten(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def unreadable_record(row: Sequence[Any], problem: str) -> TaskRecord:
    """A stand-in for a row that is no task: failed, with the reason, the rest as far as it is readable."""
    name = row[18] if type(row[18]) is str and row[18] else f"task #{row[0]}"
    return TaskRecord(
        id=row[0],
        spec=TaskSpec(kind="command", name=name),
        state="failed",
        submitted_at=_num_or(row[8], 0.0) or 0.0,
        device=row[3] if type(row[3]) is str else None,
        reason=RecordUnreadable(problem=problem),
        exit_code=row[6] if type(row[6]) is int else None,
        attempts=row[7] if type(row[7]) is int else 0,
        started_at=_num_or(row[9], None),
        ended_at=_num_or(row[10], None),
        log_path=row[11] if type(row[11]) is str else None,
        position=_num_or(row[14], 0.0) or 0.0,
        queued_at=_num_or(row[15], 0.0) or 0.0,
    )


_ADDED_DEFAULTS = {name: value for defaults in ADDED_COLUMNS.values() for name, value in defaults.items()}


def row_from_salvage(row: dict[str, Any]) -> tuple[Any, ...]:
    """A salvaged row (column name -> value) as a ``SELECT {COLUMNS}`` row; a column a file of an older
    schema never had (or a row written before its migration lacks) reads as its default."""
    return tuple(
        _ADDED_DEFAULTS[name] if row.get(name) is None and name in _ADDED_DEFAULTS else row.get(name)
        for name in COLUMN_NAMES
    )


_TUPLE_FIELDS = ("argv", "args", "files", "device_prefs", "needs", "kept_residents")
_OPTIONAL_TEXT = ("script", "out", "window", "cwd", "recipe", "machine", "origin")
_OPTIONAL_NUMBERS = ("max_wait_s", "start_at", "timeout_s")
_NUMBERS = ("backoff_s", "util_percent")
_INTEGERS = ("priority", "retries")
_CHOICES = (("on_busy", ON_BUSY), ("after_max_wait", AFTER_MAX_WAIT))


def _text_map(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items())


def _spec_problem(data: Any) -> str | None:
    """Why a stored spec is no TaskSpec (wrong types would crash the queue later), or None."""
    if type(data) is not dict:
        return f"its spec is {type(data).__name__}, not a table of keys"
    if data.get("kind") not in KINDS:
        return f"its spec's kind is {_shorten(data.get('kind'))}"
    if type(data.get("name")) is not str:
        return f"its spec's name is {_shorten(data.get('name'))}"
    for key in _TUPLE_FIELDS:
        value = data.get(key, ())
        if (type(value) is not list and type(value) is not tuple) or not all(type(x) is str for x in value):
            return f"its spec's {key} is {_shorten(value)}, not a list of text"
    for key in _OPTIONAL_TEXT:
        value = data.get(key)
        if value is not None and type(value) is not str:
            return f"its spec's {key} is {_shorten(value)}"
    for key in _OPTIONAL_NUMBERS:
        value = data.get(key)
        if value is not None and not _is_num(value):
            return f"its spec's {key} is {_shorten(value)}, not a number"
    for key in _NUMBERS:
        if key in data and not _is_num(data[key]):
            return f"its spec's {key} is {_shorten(data[key])}, not a number"
    for key in _INTEGERS:
        if key in data and type(data[key]) is not int:
            return f"its spec's {key} is {_shorten(data[key])}, not a whole number"
    vram = data.get("vram_bytes")
    if vram is not None and type(vram) is not int:
        return f"its spec's vram_bytes is {_shorten(vram)}"
    for key, allowed in _CHOICES:
        if key in data and data[key] not in allowed:
            return f"its spec's {key} is {_shorten(data[key])}"
    if "env" in data and not _text_map(data["env"]):
        return "its spec's env is not a table of text"
    if data.get("base_env") is not None and not _text_map(data["base_env"]):
        return "its spec's base_env is not a table of text"
    after = data.get("after", ())
    if (type(after) is not list and type(after) is not tuple) or not all(type(x) is int for x in after):
        return f"its spec's after is {_shorten(after)}, not a list of task ids"
    for key in ("placeholders", "after_any", "offer_declined"):
        if key in data and type(data[key]) is not bool:
            return f"its spec's {key} is {_shorten(data[key])}"
    return None


def spec_from_json(text: Any) -> TaskSpec:
    """Rebuild a stored spec, checking its types (one wrong type must not crash the queue later) but
    not re-validating it as a task file would (fast for 10k rows). Raises BadSpec saying why."""
    if type(text) is not str:
        raise BadSpec(f"its spec is {_shorten(text)}, not text")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadSpec(f"its spec is not JSON ({exc})") from None
    problem = _spec_problem(data)
    if problem is not None:
        raise BadSpec(problem)
    for key in (*_TUPLE_FIELDS, "after"):
        if key in data:
            data[key] = tuple(data[key])
    try:
        return TaskSpec(**data)
    except TypeError:  # a key from a newer/older spec version: keep the ones we know
        known = TaskSpec.__struct_fields__
        return TaskSpec(**{k: v for k, v in data.items() if k in known})


class StoredEnv(Mapping[str, str]):
    """A task's caller environment, left in the queue file and read back when it is read (at launch).

    The owner holds one of these per task instead of the environment itself: 10,000 waiting tasks
    from a shell with a 4 KiB environment would otherwise hold 40 MiB of copies of it."""

    __slots__ = ("_load", "task_id")

    def __init__(self, load: Callable[[int], dict[str, str]], task_id: int) -> None:
        self._load = load
        self.task_id = task_id

    def __getitem__(self, key: str) -> str:
        return self._load(self.task_id)[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load(self.task_id))

    def __len__(self) -> int:
        return len(self._load(self.task_id))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredEnv) and other.task_id == self.task_id and other._load == self._load:
            return True
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping

    def __repr__(self) -> str:
        return f"StoredEnv(task #{self.task_id})"


class RecordMirror(dict[int, TaskRecord]):
    """The table in memory (see the module docstring): every write goes through ``__setitem__`` or
    ``pop``, which keep the id sets and leave each caller environment in the file."""

    def __init__(self, light: Callable[[TaskRecord], TaskRecord]) -> None:
        super().__init__()
        self._light = light
        self.pending_ids: set[int] = set()
        self.aside: set[int] = set()  # pending tasks put aside until they change or are brought back
        self.active_ids: set[int] = set()  # pending_ids - aside: what a dispatch pass plans

    def __setitem__(self, task_id: int, rec: TaskRecord) -> None:
        rec = self._light(rec)
        super().__setitem__(task_id, rec)
        self.aside.discard(task_id)  # changed: planned afresh
        if rec.state in PENDING_STATES:
            self.pending_ids.add(task_id)
            self.active_ids.add(task_id)
        else:
            self.pending_ids.discard(task_id)
            self.active_ids.discard(task_id)

    def pop(self, task_id: int, *default: Any) -> Any:
        self.pending_ids.discard(task_id)
        self.aside.discard(task_id)
        self.active_ids.discard(task_id)
        return super().pop(task_id, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for task_id, rec in dict(*args, **kwargs).items():
            self[task_id] = rec


def reason_of(text: str) -> Reason | None:
    """A reason as the column holds it: its code's JSON, "" for none; a row saved before reasons had
    codes holds English, kept as it was written (``Said``)."""
    if not text:
        return None
    if text.startswith('{"code":'):
        try:
            return msgspec.json.decode(text, type=Reason)
        except msgspec.DecodeError:  # a code of a newer gputray, or a hand edit: shown as written
            pass
    return Said(text=text)


def reason_column(reason: Reason | None) -> str:
    """What the reason column holds for ``reason`` (``reason_of`` reads it back)."""
    if reason is None:
        return ""
    if isinstance(reason, str):  # words from a caller not yet typed: kept as written (read back as Said)
        return column_text(reason)
    try:
        return msgspec.json.encode(reason).decode()
    except UnicodeEncodeError:  # a file name's bytes that are not UTF-8: written as the console shows them
        return msgspec.json.encode(_column_texts(msgspec.to_builtins(reason))).decode()


def _column_texts(value: Any) -> Any:
    if isinstance(value, str):
        return column_text(value)
    if isinstance(value, dict):
        return {k: _column_texts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_column_texts(v) for v in value]
    return value


def column_text(text: str) -> str:
    """``text`` as a column can hold it (SQLite stores UTF-8): as it is, or, where it holds surrogate
    escapes (the bytes of a file name that are not UTF-8), with those bytes written ``\\xe9``, as the
    console shows them. The spec column keeps the exact text (``spec_text``); this is for the columns
    a person reads (the name, a reason)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte makes (text from elsewhere than the OS)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def spec_text(data: dict[str, Any]) -> str:
    """A spec as stored: UTF-8 JSON; escaped (``\\udcxx``) where it holds bytes that are not UTF-8
    (an argv or environment value in another encoding), which SQLite could not store otherwise and
    ``json.loads`` turns back into the same str."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text
