"""What the queue and the monitor say, in Japanese: whole sentences, nested ones too, data untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_walk import JAPANESE, english_words

from gputray.gui.i18n import install_language
from gputray.gui.messages import TEMPLATES, reason, translate
from gputray.monitor.busy_why import MemoryHeld, Who
from gputray.scheduler.reasons.codes import DemoOnCpu, DeviceBusy, Said, WaitingFor
from gputray.scheduler.reasons.render import render

HELD = MemoryHeld(who=Who("llama-server"), held_bytes=14 * 1024**3, util_pct=97.0, threshold_pct=30.0)

# Sentences the scheduler still writes in English (submit errors); a task's reasons, the doctor's findings
# and the queue's refusals are codes, worded per language by scheduler/reasons
# (tests/scheduler/reasons/test_reasons.py).
REAL = [
    "photo.png: the program 'realesrgan-ncnn-vulkan' is not installed or not on PATH. "
    "Get it: https://github.com/xinntao/Real-ESRGAN-ncnn-vulkan/releases (put it on PATH).",
    "2 of 3 files cannot be queued, so none was queued "
    "(all or nothing: fix these and submit the files again):\n"
    "  /tmp/notes.txt: no recipe handles this kind of file\n"
    "  /tmp/a.png: needs the program 'realesrgan-ncnn-vulkan', which is not installed or not on PATH\n"
    "  Recipes: torch (*.py); upscale-image (*.png, *.jpg)",
]
DATA = ["train.py (#3)", "train.py", "/usr/bin/python3", "photo.png", "/tmp/notes.txt", "/tmp/a.png"]
DATA += ["SIGKILL", "'a'", "'b'", "'c'", "'prep'", "blur"]
DATA += ["cuda-checkpoint", "(Radeon 780M 12.0 GiB free)"]  # a program's name; devices' figures


@pytest.fixture
def japanese(qapp: object) -> Iterator[None]:
    assert install_language("ja")
    yield
    install_language("en")


@pytest.mark.parametrize("message", REAL)
def test_real_messages_become_japanese(japanese: None, message: str) -> None:
    shown = translate(message)
    assert shown != message
    assert english_words(shown, DATA) == [], shown


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
    assert translate("task #4 is running; retry is for finished tasks") == (  # no template is left for it
        "task #4 is running; retry is for finished tasks"
    )
    assert translate("something no template knows") == "something no template knows"  # shown as written
    assert translate("") == "" and translate(None) == ""


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


def test_english_is_passed_through(qapp: object) -> None:
    install_language("en")
    assert all(translate(m) == m for m in REAL)


def test_templates_are_distinct() -> None:
    sources = [t.source for t in TEMPLATES]
    assert len(sources) == len(set(sources))


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
    "messages.py": "LEFT (issue 31): submit errors and the recipes' words are still English matched "
    "against TEMPLATES; their number may only go down",
}
#: How many English templates are left (see REGEX_USERS): the doctor's 45, the queue's refusals' 6 and
#: the config problems' 19 went with their codes.
#: The 16 single words went (``state_word``, ``device_gone``), then the recipes' 4 descriptions
#: (``description_ja`` in the recipe; its ``install_hint_ja`` for the drop dialog).
TEMPLATES_LEFT = 16


def test_state_words_and_a_lost_device_are_worded_without_templates(japanese: None) -> None:
    """A task's state is shown through ``state_word`` (every state the queue has, and "paused"); a GPU
    that shows no figures through ``DeviceGone``'s wording, the backend's own words kept as written."""
    from gputray.gui.messages import STATE_WORDS, device_gone, state_word
    from gputray.scheduler.tasks.states import STATES

    assert set(STATES) | {"paused"} == set(STATE_WORDS)
    for state in STATE_WORDS:
        assert JAPANESE.search(state_word(state)), state
    assert state_word("frozen") == "frozen"  # a newer owner's state: as it is named
    lost = "GPU is lost (fell off the bus?)"
    assert device_gone("lost", lost) == f"失われました: {lost}"
    assert device_gone("unavailable", None) == "利用不可"
    assert device_gone("ok", "x") == ""
    install_language("en")
    assert [state_word(s) for s in STATE_WORDS] == list(STATE_WORDS)
    assert device_gone("lost", "fell off the bus") == "lost: fell off the bus"
    assert device_gone("unavailable", "NVML: Unknown Error") == "unavailable: NVML: Unknown Error"
    assert device_gone("lost", None) == "lost"


def test_no_regex_translation_comes_back() -> None:
    """A translation by regex over English comes back neither in a new module nor as a new template, and
    none knows a reason's or the doctor's English: those are codes, worded per language."""
    import ast
    import sys

    from gputray.gui import messages
    from gputray.scheduler.reasons import doctor_codes

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
    assert len(TEMPLATES) <= TEMPLATES_LEFT, "a new English template: word it as a code (scheduler/reasons)"

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scheduler" / "reasons"))
    from test_reasons import SAMPLES

    from gputray.scheduler.reasons.render import render

    assert {type(s) for s in SAMPLES} >= set(doctor_codes.doctor_codes())
    for sample in SAMPLES:  # every code (a task's reason, a device's, the doctor's), every field filled
        english = render(sample)
        # a state's one word ("paused") is the only English a template and a code share
        known = [t.source for t in TEMPLATES if " " in t.source and t.pattern.match(english)]
        assert known == [], f"{type(sample).__name__}'s English is matched by {known}"
