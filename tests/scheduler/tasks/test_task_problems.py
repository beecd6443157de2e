"""What is wrong in a task is a code (``reasons/taskfile_codes.py``, #31 item 2): the command line says it
in the English it always did, against a real owner; the tray words the same refusal in Japanese (a drop
whose recipe makes no task, a recipes file, an edit)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli import gputray
from real_owner import home_paths, running_owner, start_daemon, stop_daemon

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskPatch
from gputray.scheduler.tasks.taskfile import TaskFileError

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
#: English a Japanese sentence must not hold (a key's name, a value, a path are data and may).
ENGLISH = re.compile(r"\b(key|must|missing|unknown|expected|known|got|cannot|valid|only|used)\b")

#: Task files as people get them wrong, what `gputray submit --task` has always said of each (after the
#: path), and what the tray says in Japanese.
BAD_TASK_FILES = [
    (
        'kind = "vulkan"\nargv = ["up", "-i", "{file}", "-o", "{outt}"]\nfiles = ["a.png"]\n',
        "key 'argv': unknown placeholder {outt} in '{outt}'; known: {file} {stem} {out} {vk_index} {device}",
        "キー 'argv': 「{outt}」の中に不明なプレースホルダー {outt}。使えるもの: {file} {stem}",
    ),
    (
        'argv = ["x"]\nmax_wait = "ten minutes"\n',
        "key 'max_wait': expected a duration like '90s', '10m', '1h30m' or '2d', got 'ten minutes'",
        "キー 'max_wait': '90s'・'10m'・'1h30m'・'2d' のような期間にしてください（値: 'ten minutes'）",
    ),
    (
        'argv = ["x"]\nvram = "4 GiBs"\n',
        "key 'vram': expected a size like '512MiB', '4GiB' or '4GB', got '4 GiBs'",
        "キー 'vram': '512MiB'・'4GiB'・'4GB' のようなサイズにしてください（値: '4 GiBs'）",
    ),
    (
        'argv = ["x"]\nvram_byts = 3\n',
        "key 'vram_byts': unknown key (did you mean 'vram_bytes'?)",
        "キー 'vram_byts': 使えないキーです。'vram_bytes' のことですか？",
    ),
    (
        'argv = ["x"]\nretries = -1\n',
        "key 'retries': must be at least 0, got -1",
        "キー 'retries': 0 以上にしてください（値: -1）",
    ),
    (
        'kind = "torch"\n',
        "key 'script': missing: a torch task needs the Python script to run",
        "キー 'script': ありません: torch タスクには実行する Python スクリプトが必要です",
    ),
    (
        'argv = ["x"]\nwindow = "01:00-01:00"\n',
        "key 'window': window '01:00-01:00' is empty: start and end are the same",
        "キー 'window': 時間帯 '01:00-01:00' は開始と終了が同じで、空です",
    ),
    ('argv = ["x"\n', "not valid TOML: ", "TOML として読めません: "),
    (
        'x = 1\n[task]\nargv = ["x"]\n',
        "key 'x': put task keys under [task] or all at the top level",
        "キー 'x': タスクのキーは [task] の下か、すべて最上位に書いてください",
    ),
]


def test_a_malformed_task_file_reads_as_it_always_did_on_the_command_line_and_in_japanese_in_the_tray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = []
    for i, (text, _, _) in enumerate(BAD_TASK_FILES):
        path = tmp_path / f"job {i}.toml"
        path.write_text(text, encoding="utf-8")
        files.append(path)
    daemon_home = tmp_path / "daemon"
    daemon = start_daemon(daemon_home, tmp_path / "daemon.err")
    try:
        for path, (_, english, _) in zip(files, BAD_TASK_FILES, strict=True):
            done = gputray("submit", "--task", str(path), home=daemon_home)
            assert done.returncode == 1, done.stderr
            assert f"{path}: {english}" in done.stderr, done.stderr
        assert json.loads(gputray("queue", "--json", home=daemon_home).stdout)["tasks"] == []  # none queued
    finally:
        stop_daemon(daemon)
    with running_owner(home_paths(tmp_path, monkeypatch)) as owner:  # the tray's owner, in its process
        for path, (_, english, japanese) in zip(files, BAD_TASK_FILES, strict=True):
            with pytest.raises(TaskFileError) as refused:
                owner.handle(rq.Submit(task_file=str(path)))
            said = refused.value.said
            assert str(refused.value) == render(said) and english in str(refused.value)
            ja = render(said, "ja")
            assert ja.startswith(f"{path}: {japanese}") and JAPANESE.search(ja), ja
            if not isinstance(said.what.problem, t.TaskFileNotToml):  # the parser's words stay as written
                assert not ENGLISH.search(ja), ja


def test_an_edit_the_task_cannot_take_is_worded_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`edit`, `gputray run` and a task sent whole have no file: where they came from is a code too."""
    with running_owner(home_paths(tmp_path, monkeypatch)) as owner:
        owner.handle(rq.Pause())
        task = owner.handle(rq.Run(argv=["true"], name="held")).tasks[0]
        with pytest.raises(TaskFileError) as refused:
            owner.handle(rq.Edit(id=task.id, changes=TaskPatch(window="07:00-07:00")))
        assert str(refused.value) == (
            f"edit of task #{task.id}: key 'window': "
            "window '07:00-07:00' is empty: start and end are the same"
        )
        assert render(refused.value.said, "ja") == (
            f"タスク #{task.id} の変更: キー 'window': 時間帯 '07:00-07:00' は開始と終了が同じで、空です"
        )
        with pytest.raises(TaskFileError) as run:
            owner.handle(rq.Run(argv=[" "]))
        assert str(run.value) == "gputray run: key 'argv': the program name (first element) is empty"
        assert (
            render(run.value.said, "ja")
            == "gputray run のコマンド: キー 'argv': プログラム名（最初の要素）が空です"
        )
