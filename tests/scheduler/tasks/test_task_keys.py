"""One task key, one place (issue 31): every field of ``TaskSpec`` is declared in ``tasks.keys`` and from
there reaches the task file, the command line (``run``/``submit``, ``edit``), ``queue --json`` and the
docs table. A field added to the model without any of them fails here, naming what it lacks."""

from __future__ import annotations

import argparse
import tomllib
import typing
from pathlib import Path

import msgspec
import pytest

from gputray.scheduler.cli.commands.common import task_json
from gputray.scheduler.cli.commands.edit import register as register_edit
from gputray.scheduler.cli.commands.submit import patch_from_args
from gputray.scheduler.cli.commands.submit import register as register_submit
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.keys import BY_FIELD, KEY_ALIASES, TASK_KEYS, TaskKey, docs_table
from gputray.scheduler.tasks.records import TaskPatch, TaskRecord, TaskSpec
from gputray.scheduler.tasks.taskfile import KEYS, patch_from_table

ROOT = Path(__file__).resolve().parents[3]
FIELDS = TaskSpec.__struct_fields__
#: ``TaskView.env`` is the Python env the task ran in (``TaskRecord.env``), not the job's variables.
VIEW_NOT_FROM_SPEC = {"env"}


def test_every_field_is_declared_once() -> None:
    declared = [k.field for k in TASK_KEYS]
    assert sorted(set(FIELDS) - set(declared)) == [], "TaskSpec fields without a TaskKey in tasks/keys.py"
    assert sorted(set(declared) - set(FIELDS)) == [], "TaskKeys for no TaskSpec field"
    assert len(declared) == len(set(declared)), "a field declared twice"


def test_the_patch_has_every_field_of_the_spec_with_its_type() -> None:
    spec = typing.get_type_hints(TaskSpec, include_extras=True)
    patch = typing.get_type_hints(TaskPatch, include_extras=True)
    assert sorted(set(spec) ^ set(patch)) == [], "TaskPatch and TaskSpec differ in their fields"
    for field, hint in spec.items():
        members = set(typing.get_args(hint)) if typing.get_origin(hint) is typing.Union else {hint}
        patched = typing.get_args(patch[field])
        assert set(patched) == {*members, msgspec.UnsetType}, f"TaskPatch.{field} is not {hint} | UnsetType"


@pytest.mark.parametrize("key", TASK_KEYS, ids=lambda k: k.field)
def test_a_task_file_sets_it_under_each_spelling(key: TaskKey, tmp_path: Path) -> None:
    if not key.in_file:
        assert key.by_gputray and key.field not in KEYS, f"{key.field}: not a task-file key, yet not ours"
        return
    if not key.example:
        assert key.by_gputray, f"{key.field}: no example for the task file and not written by gputray"
        return
    for spelled in (key.field, *key.aliases):
        assert KEYS[spelled] == key.field
        value = tomllib.loads(f"{spelled} = {key.example}")[spelled]
        patch = patch_from_table({spelled: value}, source="t.toml", base_dir=tmp_path)
        assert key.field in patch.given(), f"task file key {spelled!r} does not set {key.field}"


def test_the_spellings_are_the_declared_ones() -> None:
    assert {alias: field for alias, field in KEYS.items() if alias != field} == KEY_ALIASES


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register_submit(sub)
    register_edit(sub)
    return dict(sub.choices)


def _typed(key: TaskKey, tmp_path: Path) -> list[str]:
    """The option with a value as a person types it."""
    option = key.option
    assert option is not None
    if option.switch:
        return [option.flag, "--after", "3"] if key.field == "after_any" else [option.flag]  # goes with it
    if option.choices:
        return [option.flag, option.choices[-1]]
    by_spelling = {
        "duration": "10m",
        "size": "4GiB",
        "time": "+1h",
        "window": "01:00-07:00",
        "list": "cpu,780m",
        "task_ids": "3,4",
        "env": "OMP_NUM_THREADS=4",
        "path": str(tmp_path),
    }
    if key.spelling in by_spelling:
        return [option.flag, by_spelling[key.spelling]]
    return [
        option.flag,
        {"int": "3", "float": "1.5"}.get(option.number or "", "any" if key.field == "machine" else "x"),
    ]


@pytest.mark.parametrize("key", TASK_KEYS, ids=lambda k: k.field)
def test_the_command_line_sets_it(key: TaskKey, tmp_path: Path) -> None:
    if key.option is None:
        assert key.no_option.strip(), f"{key.field}: neither an option nor why there is none"
        return
    parsers = _parsers()
    for command, editing, offered in (
        ("run", False, key.option.submit),
        ("submit", False, key.option.submit),
        ("edit", True, key.option.edit),
    ):
        flags = {f for action in parsers[command]._actions for f in action.option_strings}
        assert (key.option.flag in flags) == offered, f"{command} {key.option.flag}: offered={offered}"
        if not offered:
            continue
        words = ["1"] if command == "edit" else (["--", "true"] if command == "run" else ["f.toml"])
        args = parsers[command].parse_args(
            [*words[:1], *_typed(key, tmp_path)] if command == "edit" else [*_typed(key, tmp_path), *words]
        )
        patch = patch_from_args(args, editing=editing)
        assert key.field in patch.given(), (
            f"`{command} {' '.join(_typed(key, tmp_path))}` does not set {key.field}"
        )


def test_queue_json_carries_the_keys_declared_in_view() -> None:
    in_view = {k.field for k in TASK_KEYS if k.in_view}
    view_fields = set(TaskView.__struct_fields__) & set(FIELDS) - VIEW_NOT_FROM_SPEC
    assert sorted(in_view ^ view_fields) == [], "TaskView's task keys and the keys declared in_view differ"
    examples = {k.field: tomllib.loads(f"v = {k.example}")["v"] for k in TASK_KEYS if k.in_view and k.example}
    spec = msgspec.convert(
        {"kind": "command", "argv": ["true"], **examples, "origin": "desk#12.1"}, TaskSpec, strict=False
    )
    doc = task_json(TaskView.of(TaskRecord(id=1, spec=spec, state="queued", submitted_at=0.0)))
    assert in_view <= set(doc)
    for field in examples:  # what a person writes, shown as written
        shown = doc[field]
        assert shown == (list(getattr(spec, field)) if isinstance(shown, list) else getattr(spec, field)), (
            field
        )


def test_the_docs_table_is_the_declared_one() -> None:
    text = (ROOT / "docs" / "queue.md").read_text(encoding="utf-8")
    assert docs_table() in text, "docs/queue.md: run python tools/task_keys_table.py --write"
    for key in TASK_KEYS:
        assert (f"| `{key.spelled}" in docs_table()) == key.in_file, key.field
    assert BY_FIELD["vram_bytes"].spelled == "vram"  # the table shows what people write
