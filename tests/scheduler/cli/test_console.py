"""Every listing on an ANSI-code-page stream, as Windows writes a redirected stdout (``gputray status >
s.txt``, ``| findstr``): the stream's own encoding, stand-ins for what it lacks, never a traceback.

The commands run as real subprocesses with ``PYTHONIOENCODING`` set to the code page (Python then
opens stdout and stderr strictly in that encoding, as Windows does for a pipe) and their bytes are
decoded with that code page here.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import task_steps as steps

from gputray.scheduler import console
from gputray.scheduler.cli.commands.common import terminal_cells

CODE_PAGES = ["cp1252", "cp932"]
GLYPHS = "█░°—✅⚠❌×↳→…"


def run(home: Path, encoding: str, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``gputray ARGV`` with stdout/stderr pipes in ``encoding``; (exit status, stdout, stderr) decoded."""
    done = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", *argv],
        capture_output=True,
        env={**os.environ, "GPUTRAY_HOME": str(home), "PYTHONIOENCODING": encoding, **(env or {})},
        timeout=120,
        check=False,
    )
    out, err = done.stdout.decode(encoding), done.stderr.decode(encoding)
    assert "Traceback" not in err and "UnicodeEncodeError" not in err, err
    return done.returncode, out, err


def written(text: str, encoding: str) -> str:
    stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding, newline="")
    console.make_safe(stream)
    stream.write(text)
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode(encoding)


# -- the stand-ins ----------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["cp1252", "cp932", "ascii"])
def test_stand_ins_keep_the_columns(encoding: str) -> None:
    line = "[██████░░░░]  36 °C  ✅ works  ❌ fails  ⚠ limits  学習.py  —|"
    shown = written(line, encoding)
    assert terminal_cells(shown) == terminal_cells(line), shown  # a table still lines up
    assert "[######----]" in shown and shown.endswith("|")


def test_each_encoding_keeps_what_it_has() -> None:
    assert written("36 °C — 学習", "cp1252") == "36 °C — ????"  # cp1252 has ° and —, no kanji
    assert written("36 °C — 学習", "cp932") == "36 °C - 学習"  # Shift-JIS has ° and kanji, not U+2014
    assert written("36 °C — café", "ascii") == "36 C  - cafe"  # "°C" → "C" and a space keeps the width
    assert written("█ ✅ 学習 — °C", "utf-8") == "█ ✅ 学習 — °C"  # UTF-8 takes everything as it is


def test_a_byte_that_was_not_utf8_shows_as_that_byte() -> None:
    assert written("photo\udcff.png", "utf-8") == "photo\\xff.png"  # surrogateescape, not a crash


def test_json_stays_exact_where_the_code_page_lacks_a_character() -> None:
    doc = {"name": "学習 — █"}
    stream = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    text = console.json_text(doc, stream)
    assert text.isascii() and json.loads(text) == doc
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    assert console.json_text(doc, utf8) == json.dumps(doc, ensure_ascii=False)


def test_streams_without_reconfigure_are_left_alone() -> None:
    console.make_safe(None)  # pythonw.exe has no stdout
    buffer = io.StringIO()
    console.make_safe(buffer)
    buffer.write(GLYPHS)
    assert buffer.getvalue() == GLYPHS


# -- every listing, as a Windows pipe gets it ----------------------------------------------------


@pytest.fixture
def saved_queue(tmp_path: Path) -> Path:
    """A queue on disk with Japanese and dashed names, one failed job with a log, no owner running."""
    from gputray.scheduler.paths import Paths
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.tasks.records import TaskSpec

    home = tmp_path / "home"
    paths = Paths(home / "config", home / "data", home / "state", home / "run")
    store = TaskStore(paths.queue_db)
    failed, waiting = store.add_many(
        TaskSpec(kind="command", name=n, argv=("prog", n)) for n in ("学習.py", "upscale — cat.png")
    )
    paths.logs_dir.mkdir(parents=True)
    log = paths.logs_dir / f"{failed.id}.log"
    log.write_bytes("epoch 1 — loss 0.5 █\nこんにちは\n".encode())
    steps.fail_run(store, failed.id, "", exit_code=4, log_path=str(log), started_at=5.0, ended_at=9.0)
    steps.wait(store, waiting.id, "waiting for GeForce RTX 5060 Ti: 91 °C → too hot")
    store.close()
    return home


@pytest.mark.parametrize("encoding", CODE_PAGES)
def test_status_on_a_code_page_pipe(tmp_path: Path, encoding: str) -> None:
    code, out, _ = run(tmp_path, encoding, "status", "--demo")
    assert code == 0
    gpu = next(line for line in out.splitlines() if line.startswith("GeForce RTX 5060 Ti"))
    bar = gpu[gpu.index("[") : gpu.index("]") + 1]
    assert len(bar) == 12 and set(bar[1:-1]) <= {"#", "-"}, gpu  # ASCII bars: neither code page has █ ░
    assert "°C" in gpu  # both have the degree sign
    assert out.splitlines()[0].startswith("DEMO")
    code, out, _ = run(tmp_path, encoding, "status", "--demo", "--json")
    assert code == 0 and json.loads(out)["demo"] is True


@pytest.mark.parametrize("encoding", CODE_PAGES)
def test_queue_and_logs_on_a_code_page_pipe(saved_queue: Path, encoding: str) -> None:
    code, out, err = run(saved_queue, encoding, "queue", "--all")
    assert code == 0 and "no gputray owner is running" in err
    rows = out.splitlines()
    assert rows[0].split() == ["ID", "STATE", "PRI", "DEVICE", "ENV", "START", "END", "DUR", "NAME", "REASON"]
    japanese = "学習.py" if encoding == "cp932" else "????.py"
    assert any(japanese in r and "exit 4" in r for r in rows), out
    assert any("upscale - cat.png" in r or "upscale — cat.png" in r for r in rows), out
    assert any("91 °C" in r for r in rows), out

    code, out, _ = run(saved_queue, encoding, "queue", "--all", "--json")
    assert code == 0
    names = [t["name"] for t in json.loads(out)["tasks"]]
    assert sorted(names) == ["upscale — cat.png", "学習.py"]  # JSON loses nothing: \u escapes where needed

    code, out, _ = run(saved_queue, encoding, "logs", "1")
    assert code == 0
    assert out.splitlines()[0] in ("epoch 1 — loss 0.5 #", "epoch 1 - loss 0.5 #"), out
    assert out.splitlines()[1] == ("こんにちは" if encoding == "cp932" else "??????????")


@pytest.mark.parametrize("encoding", CODE_PAGES)
def test_devices_on_a_code_page_pipe(tmp_path: Path, encoding: str) -> None:
    code, out, _ = run(tmp_path, encoding, "devices", "--demo")
    assert code == 0
    dash = "-" if encoding == "cp932" else "—"  # Shift-JIS has no U+2014; cp1252 has it
    assert out.splitlines()[0] == f"DEMO {dash} simulated GPUs, not this machine's"
    assert "GeForce RTX 5060 Ti" in out and "Windows LUID" in out
    doc: dict[str, Any] = json.loads(run(tmp_path, encoding, "devices", "--demo", "--json")[1])
    assert {d["name"] for d in doc["devices"]} == {"GeForce RTX 5060 Ti", "Radeon 780M"}


@pytest.mark.parametrize("encoding", CODE_PAGES)
def test_doctor_and_envs_on_a_code_page_pipe(tmp_path: Path, notorch_python: Path, encoding: str) -> None:
    code, out, err = run(tmp_path, encoding, "envs", "add", str(notorch_python), "--name", "学習-env")
    assert code == 0, err
    code, out, err = run(tmp_path, encoding, "doctor")
    row = next(line for line in out.splitlines() if "CPU" in line and "fail" in line)
    assert row.split()[1:4] == ["CPU", "X", "fails"], row  # ❌ → "X " keeps the column
    assert "fails" in err  # the progress lines on stderr went through too
    code, out, _ = run(tmp_path, encoding, "envs")
    assert code == 0 and ("学習-env" if encoding == "cp932" else "????-env") in out, out


@pytest.mark.parametrize("encoding", CODE_PAGES)
def test_error_messages_on_a_code_page_pipe(tmp_path: Path, encoding: str) -> None:
    missing = tmp_path / "シナリオ — 1.toml"
    code, out, err = run(tmp_path, encoding, "status", "--demo-scenario", str(missing))
    assert code == 1 and out == ""  # EXIT_REFUSED: a file that cannot be read
    assert err.startswith("gputray: ") and "1.toml" in err
    code, _, err = run(tmp_path, encoding, "statsu")  # argparse-free message with a repr() of the word
    assert code == 2 and "did you mean `gputray status`" in err
