"""What the queue and the monitor say, in Japanese: whole sentences, nested ones too, data untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_walk import JAPANESE, english_words

from gputray.gui.i18n import install_language
from gputray.gui.messages import TEMPLATES, translate

# Sentences as the scheduler and the monitor write them (scheduler/queue/placement.py, queue_service.py,
# store.py, recipes.py, monitor/verdict.py), composites included.
REAL = [
    "waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB, 97 %",
    "waiting for a free device: GeForce RTX 5060 Ti: llama-server uses 14.2 GiB, 97 %; "
    "Radeon 780M: running 'train.py (#3)'",
    "redirected to Radeon 780M: GeForce RTX 5060 Ti busy (llama-server holds 14.0 GiB and is active); "
    "no Python env is known to work on Radeon 780M: using gputray's own Python (/usr/bin/python3)",
    "on CPU after waiting 2 min: GeForce RTX 5060 Ti busy (hot: 91 °C (limit 85 °C))",
    "exited with status 1; retry 1 of 3 in 30 s",
    "killed by signal SIGKILL; retrying (2 left)",
    "no device can run it: needs 100.0 GiB, Radeon 780M has 33.3 GiB",
    "gave up after waiting 10 min for GeForce RTX 5060 Ti: in use by another program: 97 % for ≥ 30 s",
    "interrupted: gputray stopped while it ran",
    "cancelled while running; 2 processes were still running after the job ended: stopped",
    "1 process was still running after the job ended: stopped",
    "interrupted: its supervisor process was killed, so how it ended is unknown "
    "(3 processes of the job stopped)",
    "interrupted: its supervisor process was killed as the job started; 1 process of the job stopped; "
    "retry 1 of 2 in 10 s",
    "interrupted: GeForce RTX 5060 Ti was lost while it ran",
    "upscale-image: photo.png started on Radeon 780M",
    "train.py finished on the CPU",
    "task #4 is running; only queued or waiting tasks move",
    "photo.png: the program 'realesrgan-ncnn-vulkan' is not installed or not on PATH. "
    "Get it: https://github.com/xinntao/Real-ESRGAN-ncnn-vulkan/releases (put it on PATH).",
    "2 of 3 files cannot be queued, so none was queued "
    "(all or nothing: fix these and submit the files again):\n"
    "  /tmp/notes.txt: no recipe handles this kind of file\n"
    "  /tmp/a.png: needs the program 'realesrgan-ncnn-vulkan', which is not installed or not on PATH\n"
    "  Recipes: torch (*.py); upscale-image (*.png, *.jpg)",
    "Radeon 780M is hot: 95 °C (limit 90)",
    "the queue is paused",
    "waits for its window 01:00–07:00",
    "retry in 45 s",
    # scheduler/queue/dependencies.py: a chain a → b → c where a failed
    "dependency #2 'b' failed: because of its own dependency #1 'a' failed: exited with status 3",
    "dependency #4 'prep' cancelled: cancelled while running",
    "waits for #2 'b' (running), #3 'c' (queued) to succeed",
    "waits for #2 'b' (waiting) to end",
    "queued again: #2 was queued again",
    "task #5 is running; tasks move among queued or waiting ones",
    # scheduler/queue/placement_policy.py (prefer = fastest | greenest) and estimator.py (the offer)
    "fastest: GeForce RTX 5060 Ti frees in ~12 min, finishes in ~13 min; Radeon 780M finishes in ~4 min: "
    "running there",
    "fastest: Radeon 780M finishes in ~63 min; GeForce RTX 5060 Ti frees in ~26 s, finishes in ~16 min: "
    "waiting for it",
    "greenest: GeForce RTX 5060 Ti busy, free time unknown; Radeon 780M finishes in ~79 s, 2.4 kJ: "
    "running there",
    "greenest: GeForce RTX 5060 Ti finishes in ~6 s, 0.8 kJ; Radeon 780M frees in ~4 s, finishes in ~9 s, "
    "0.1 kJ, past 1.5× the fastest finish: running there",
    "fastest: no earlier run of this job to estimate from; waiting for GeForce RTX 5060 Ti: llama-server "
    "uses 13.5 GiB; above 30 % for 10 s; now 97 %",
    "blur has waited ~6 min: Radeon 780M is free and would run it in ~70 s",
    # scheduler/queue/job_pause.py: gputray pause-job / resume-job
    "paused by you at 14:02; its GPU memory was moved to host memory (cuda-checkpoint)",
    "paused by you at 14:02; resumed 14:07",
    "paused for #31 (priority 10) at 14:02; resumed 14:07",
    # scheduler/queue/oom_elsewhere.py
    "out of memory on GeForce RTX 5060 Ti at 16.4 GiB; running on Radeon 780M (29.0 GiB shared free)",
    "out of memory on Radeon 780M at 16.4 GiB; no device it may use has that free "
    "(Radeon 780M 12.0 GiB free)",
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


def test_nested_and_data_kept(japanese: None) -> None:
    assert translate("waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB, 97 %") == (
        "GeForce RTX 5060 Ti を待機中: llama-server が 14.2 GiB・97 % を使用中"
    )
    retry = "終了コード 1 で終了。30 秒後に再試行 (1/3)"
    assert translate("exited with status 1; retry 1 of 3 in 30 s") == retry
    assert translate("something no template knows") == "something no template knows"  # shown as written
    assert translate("") == "" and translate(None) == ""


def test_english_is_passed_through(qapp: object) -> None:
    install_language("en")
    assert all(translate(m) == m for m in REAL)


def test_templates_are_distinct_and_ordered_most_specific_first() -> None:
    sources = [t.source for t in TEMPLATES]
    assert len(sources) == len(set(sources))
    # a wrapping sentence must come before what it wraps, or the inner one would swallow it
    first = sources.index
    assert first("waiting for a free device: {detail}") < first("waiting for {label}: {why}")
    assert first("{why}; retry {n} of {total} in {secs} s") < first("exited with status {code}")


def test_the_doctors_findings_become_japanese(japanese: None) -> None:
    """Real diagnoses from scheduler/pyenvs/doctor_messages.py (the errors its own tests quote)."""
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
        for part in (found.reason, found.fix):
            if part and not part.startswith("python -m "):  # a command line is shown as it is
                shown = translate(part)
                assert shown != part and JAPANESE.search(shown), part


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
    data += [p.key for p in problems] + ["busy_util_percent, busy_window_s, free_window_s"]
    data += ["external_vram_bytes, stale_context_s, temp_limit_c, igpu_temp_limit_c"]
    data += ["temp_hysteresis_c, own_grace_s", "cluster", "gui.language", '"yes"', '"hot"', '"fr"', '"auto"']
    for problem in problems:
        shown = translate(str(problem))
        assert JAPANESE.search(shown) and english_words(shown, data) == [], shown
    banner = counted_note(CONFIG_PROBLEMS_NOTE, len(problems), first=problems[0]).text()
    assert english_words(banner, [*data, "gputray config"]) == [], banner
