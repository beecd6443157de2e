"""What the queue and the monitor say, in Japanese: whole sentences, nested ones too, data untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_walk import JAPANESE, english_words

from gputray.gui.i18n import install_language
from gputray.gui.messages import reason, said
from gputray.monitor.busy_why import MemoryHeld, Who
from gputray.scheduler.reasons.codes import DemoOnCpu, DeviceBusy, Said, WaitingFor
from gputray.scheduler.reasons.render import render

HELD = MemoryHeld(who=Who("llama-server"), held_bytes=14 * 1024**3, util_pct=97.0, threshold_pct=30.0)

# Files and programs of the submit errors below: data, kept in every language.
DATA = ["/tmp/notes.txt", "/tmp/a.png", "photo.png", "realesrgan-ncnn-vulkan", "torch", "upscale-image"]
DATA += ["https", "//github.com/xinntao/Real-ESRGAN-ncnn-vulkan/releases", "PATH", "png", "jpg", "py"]
DATA += ["ffmpeg", "llama-bench", "gguf", "mp4", "mkv", "mov", "webm", "avi", "jpeg", "webp", "bmp", "tif"]
DATA += ["tiff", "upscale-video", "notes.txt", "a.png", "GGML_VULKAN", "llama.cpp", "txt", "tmp", "nope"]


@pytest.fixture
def japanese(qapp: object) -> Iterator[None]:
    assert install_language("ja")
    yield
    install_language("en")


def submit_errors(tmp: Path) -> list[Exception]:
    """Real submit errors from the submit check (``tasks/recipes.py``): a missing program with where to
    get it, every problem of several files at once, a file no recipe takes, a folder, no such file."""
    from gputray.scheduler.tasks.recipes import SubmitError, specs_for_files

    photo, notes, folder = tmp / "photo.png", tmp / "notes.txt", tmp / "shots"
    photo.write_bytes(b"")
    notes.write_text("x")
    folder.mkdir()
    errors: list[Exception] = []
    for files in ([photo], [notes, photo, tmp / "gone.png"], [notes], [folder], [tmp / "gone.png"]):
        with pytest.raises(SubmitError) as caught:
            specs_for_files(files)
        errors.append(caught.value)
    with pytest.raises(SubmitError) as caught:
        specs_for_files([photo], recipe="nope")
    return [*errors, caught.value]


def test_submit_errors_are_codes_worded_in_japanese_with_data_kept(
    japanese: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # every recipe's program is missing
    errors = submit_errors(tmp_path)
    data = [
        *DATA,
        str(tmp_path),
        *(str(tmp_path / n) for n in ("photo.png", "notes.txt", "shots", "gone.png")),
    ]
    for exc in errors:
        assert getattr(exc, "said", None) is not None, exc  # a code, worded per language
        shown = said(exc)
        assert JAPANESE.search(shown) and english_words(shown, data) == [], shown
        assert render(exc.said) == str(exc)  # type: ignore[attr-defined]  # the command line's English
    assert "入手先" in said(errors[0])  # where to get it, in the recipe's own Japanese (install_hint_ja)
    install_language("en")
    assert [said(exc) for exc in errors] == [str(exc) for exc in errors]


def test_submit_errors_say_in_english_what_the_command_line_always_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    t = tmp_path
    hint = "https://github.com/xinntao/Real-ESRGAN-ncnn-vulkan/releases (put it on PATH)"
    recipes = "torch (*.py); upscale-image (*.png, *.jpg, *.jpeg, *.webp, *.bmp, *.tif, *.tiff); "
    recipes += "upscale-video (*.mp4, *.mkv, *.mov, *.webm, *.avi); llama-bench (*.gguf)"
    assert [str(e) for e in submit_errors(t)] == [
        f"upscale-image: photo.png: the program 'realesrgan-ncnn-vulkan' is not installed or not on PATH. "
        f"Get it: {hint}.",
        "3 of 3 files cannot be queued, so none was queued "
        "(all or nothing: fix these and submit the files again):\n"
        f"  {t}/notes.txt: no recipe handles this kind of file\n"
        f"  {t}/photo.png: needs the program 'realesrgan-ncnn-vulkan', which is not installed or not on "
        "PATH\n"
        f"  {t}/gone.png: no such file\n"
        f"  Recipes: {recipes}\n"
        f"  Get realesrgan-ncnn-vulkan: {hint}.",
        f"notes.txt: no recipe handles this kind of file. Recipes: {recipes}",
        f"{t}/shots: is a folder; give the files in it (one job per file)",
        f"{t}/gone.png: no such file",
        "no recipe named 'nope'; known recipes: torch, upscale-image, upscale-video, llama-bench",
    ]


def test_a_refusal_is_worded_from_its_code_and_data_kept(japanese: None) -> None:
    """The queue refuses with a code (``TaskStateError.said``); the tray words it in its language, and a
    cancel's reply words each line that has one, in order, the others as written."""
    from gputray.gui.messages import refused, said
    from gputray.scheduler.queue.edits import TaskStateError
    from gputray.scheduler.reasons.refusals import AlreadyEnded, RetryIsForEnded

    exc = TaskStateError(RetryIsForEnded(task_id=4, state="running"))
    assert str(exc) == "task #4 is running; retry is for finished tasks"  # the command line's, as before
    assert said(exc) == "タスク #4 は実行中です。再試行は終わったタスクにだけ使えます"
    assert said(TaskStateError("task #4 could not be paused: x")) == "task #4 could not be paused: x"
    ended = AlreadyEnded(task_id=2, state="succeeded")
    lines = ["no such task: 9", "task #2 already succeeded; nothing to cancel"]
    worded = "タスク #2 はすでに成功です。キャンセルするものはありません"
    assert refused(lines, [ended]) == f"no such task: 9\n{worded}"
    assert said(RuntimeError("Permission denied")) == "Permission denied"  # others' words: as written


def test_reasons_are_worded_by_the_renderer_in_the_trays_language(japanese: None) -> None:
    """A task's reason reaches the tray as a code; ``messages.reason`` words it in the language shown,
    and an old row's English (``Said``) is shown as written, never half translated."""
    why = WaitingFor(label="GeForce RTX 5060 Ti", why=DeviceBusy(why=(HELD,)))
    assert (
        reason(why)
        == "GeForce RTX 5060 Ti を待機中: llama-server が 14.0 GiB を使用中で、GPU は 97 %、30 % 超で使用中"
    )
    assert (
        reason(DemoOnCpu(device="Radeon 780M"), "succeeded")
        == "デモ：Radeon 780M の代わりに CPU で実行しました"
    )
    old = "waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB, 97 %"
    assert reason(Said(text=old)) == old
    install_language("en")
    assert (
        reason(DemoOnCpu(device="Radeon 780M"), "running")
        == "demo: running on the CPU in place of Radeon 780M"
    )


def test_the_doctors_findings_become_japanese(japanese: None) -> None:
    """Real diagnoses from scheduler/pyenvs/doctor_messages.py (the errors its own tests quote): codes,
    worded in the tray's language by the renderer the command line uses (no translation of English)."""
    from gputray.scheduler.pyenvs.doctor_messages import diagnose

    errors = [
        ("RuntimeError: HIP error: invalid device function", "amd", "gfx1103"),
        ("UserWarning: sm_120 is not compatible with the current PyTorch installation.", "nvidia", "12.0"),
        ("AssertionError: Torch not compiled with CUDA enabled", "nvidia", None),
        ("ModuleNotFoundError: No module named 'torch'", "nvidia", None),
        ("torch.OutOfMemoryError: CUDA out of memory.", "nvidia", None),
    ]
    for text, vendor, arch in errors:
        found = diagnose(text, vendor=vendor, arch=arch)
        for code, english in ((found.finding, found.reason), (found.remedy, found.fix)):
            if code is not None and not english.startswith("python -m "):  # a command line is as it is
                shown = reason(code)
                assert shown != english and JAPANESE.search(shown), english


# Every kind of problem scheduler/config.py reports, in one file: the banner shows the first, `gputray
# config` all of them.
BAD_CONFIG = """
monitor = 3
colour = "x"
[thresholds]
temp_limit_c = "hot"
busy_util_percent = 500
bussy = 1
[gui]
language = "fr"
langauge = "ja"
[gui.notifications]
job_failed = "yes"
[devices]
780m = 2
[[env]]
name = "a"
python = "/usr/bin/python3"
[[env]]
name = "a"
python = "/usr/bin/python3"
"""


def test_every_config_problem_and_the_banner_become_japanese(japanese: None, tmp_path: Path) -> None:
    from gputray.gui.messages import counted_note
    from gputray.gui.tray_app import CONFIG_PROBLEMS_NOTE
    from gputray.scheduler.config import read_config

    path = tmp_path / "config.toml"
    path.write_text(BAD_CONFIG, encoding="utf-8")
    problems = read_config(path).problems
    assert len(problems) >= 10
    # the file's own words stay: its path, keys, values, and TOML's true/false
    data = [str(path), "'a'", '"auto", "en", "ja"', "true/false", "true", "false", "slots = 2"]
    data += [p.key for p in problems] + ["busy_util_percent", "busy_window_s", "free_window_s"]
    data += ["external_vram_bytes", "stale_context_s", "temp_limit_c", "igpu_temp_limit_c"]
    data += ["temp_hysteresis_c", "own_grace_s", "cluster", "gui.language", '"yes"', '"hot"', '"fr"']
    data += ['"auto"', '"en"', '"ja"']
    for problem in problems:
        assert problem.said is not None, problem  # a code, worded in the tray's language
        assert render(problem.said) == problem.message  # its English: `gputray config`'s, the log's
        shown = reason(problem.said)
        assert JAPANESE.search(shown) and english_words(shown, data) == [], shown
    banner = counted_note(CONFIG_PROBLEMS_NOTE, len(problems), first=problems[0].said).text()  # as the tray
    assert english_words(banner, [*data, "gputray config"]) == [], banner


#: The gui modules that use regular expressions, and why: none of them translates English. The tray's
#: words come from Qt's .ts (its own strings) and the reason catalogues (scheduler/reasons: codes, one
#: wording per language); a module added here must say why it is not a translation.
REGEX_USERS = {
    "qt_libraries.py": "reads the dynamic loader's error to name the missing library",
    "widgets.py": "digits become 8 to measure the widest a number can be",
}


def test_no_regex_translation_comes_back() -> None:
    """A translation by regex over English comes back neither in a new module nor in ``messages``: the
    last of its templates (submit errors, recipes' words, state words) went with their codes."""
    import ast

    from gputray.gui import messages

    gui = Path(messages.__file__).parent
    users = set()
    for path in sorted(gui.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names
        ]
        modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        if "re" in names or "regex" in names or "re" in modules:
            users.add(path.name)
    assert users == set(REGEX_USERS), (
        f"a gui module started or stopped using regexes: {users ^ set(REGEX_USERS)}"
    )
    assert not hasattr(messages, "TEMPLATES") and not hasattr(messages, "translate")
