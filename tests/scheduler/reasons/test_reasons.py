"""Reasons as data (``scheduler/reasons``): every code has words in every language, Japanese joins and
brackets its own way, tense follows the task, and a reason survives the store and the wire as it was."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest

from gputray.monitor import busy_why as b
from gputray.monitor.vulkan_why import vulkan_codes
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_rows import reason_column, reason_of
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons import doctor_codes as d
from gputray.scheduler.reasons.config_codes import CheckSaid, config_codes
from gputray.scheduler.reasons.doctor_codes import doctor_codes
from gputray.scheduler.reasons.refusals import refusal_codes
from gputray.scheduler.reasons.render import catalogue, languages, render, render_for
from gputray.scheduler.reasons.submit_codes import FileRefused, submit_codes
from gputray.scheduler.reasons.taskfile_codes import TypeSaid, taskfile_codes
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.lifecycle import Wait
from gputray.scheduler.tasks.records import TaskSpec

GIB = 1024**3
ALL_CODES = (*c.codes(), *typing.get_args(b.BusyWhy), *typing.get_args(b.DeviceNews))
ALL_CODES += (*typing.get_args(b.SampleWhy), b.BackendNote)  # what a monitor backend says
ALL_CODES += (*doctor_codes(), *refusal_codes(), *config_codes(), *submit_codes(), *taskfile_codes())
ALL_CODES += vulkan_codes()  # why the Vulkan enumeration gave no list, why a device is not a GPU


def sample(tp: Any, depth: int = 0, inner: Any = None) -> Any:
    """A value of type ``tp`` with every field filled (nested reasons two levels deep); ``inner``: what
    every field that can hold it holds (a reason inside a reason)."""
    origin = typing.get_origin(tp)
    if inner is not None and depth > 0 and _holds(tp, type(inner)):
        return inner
    if tp is str:
        return "Radeon 780M"
    if tp is bool:
        return True
    if tp is int:
        return 3
    if tp is float:
        return 125.0
    if origin is Literal:
        return typing.get_args(tp)[0]
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if set(args) >= set(typing.get_args(c.Reason)):  # a nested reason
            return sample(c.FirstBusy if depth < 2 else c.TooHot, depth + 1, inner)
        if set(args) >= set(typing.get_args(b.BusyWhy)):
            return sample(b.MemoryHeld, depth + 1, inner)
        return sample(args[0], depth, inner)
    if origin is tuple:
        item = typing.get_args(tp)[0]
        return (sample(item, depth + 1, inner), sample(item, depth + 1, inner))
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        hints = typing.get_type_hints(tp)
        return tp(**{f: sample(hints[f], depth + (inner is not None), inner) for f in tp.__struct_fields__})
    raise AssertionError(f"no sample for {tp!r}")


def _holds(tp: Any, kind: type) -> bool:
    """Whether a field of type ``tp`` can hold a ``kind`` (a union that names it)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return kind in typing.get_args(tp)
    return False


SAMPLES = [sample(code) for code in ALL_CODES]
# Words that are data or the names of things in every language (device names, units, the CLI's own).
KEPT = {"Radeon", "GPU", "CPU", "VRAM", "RAM", "GTT", "GiB", "torch", "Python", "gputray", "allow_unproven"}
KEPT |= {"true", "kJ", "PATH", "TO", "VENV", "cuda", "checkpoint", "SIGSTOP", "gputray", "edit", "after"}
KEPT |= {"pip", "install", "venv", "envs", "add"}
KEPT |= {"free", "resident", "radeon"}  # `gputray free-resident NAME`
# the doctor's: vendors, runtimes and their variables, commands to paste, the pytorch.org URLs
KEPT |= {"NVIDIA", "AMD", "CUDA", "ROCm", "RTX", "Blackwell", "ISA", "gfx", "sm_Radeon", "URL"}
KEPT |= {"HSA_OVERRIDE_GFX_VERSION", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}
KEPT |= {"doctor", "refresh", "timeout", "remove", "force", "reinstall", "index", "url", "wheel", "whl"}
KEPT |= {"https", "download", "pytorch", "org", "get", "started", "locally"}
KEPT |= {"TOML", "submit", "task"}  # `gputray submit --task FILE`
KEPT |= {"devices", "name", "slots", "env", "false"}  # a config file's own words: [devices.<name>], [[env]]
# the monitor's backends: the libraries and files they read, by their names
KEPT |= {"NVML", "amdsmi", "PDH", "PCI", "libnvidia", "nvml", "dll", "Windows", "WDDM", "Engine"}
KEPT |= {"recipe", "png", "UTF"}  # a recipes file's own keys and values: [[recipe]], name, ['*.png']
# a task file's own keys and values (argv, script, args, files, {file}, NAME = "value", "any"), its units
KEPT |= {"argv", "script", "args", "files", "file", "NAME", "any", "MiB", "PiB", "NUL", "run"}
# Vulkan's own names: its functions and extension, the loader's ICD, Mesa's variable, the scenario's table
KEPT |= {"Vulkan", "vulkan", "vkGetInstanceProcAddr", "VK_KHR_get_physical_device_properties", "ICD", "UUID"}
KEPT |= {"MESA_VK_DEVICE_SELECT", "list", "Mesa"}
KEPT |= {"logs", "max_size", "KiB"}  # a config file's key ([logs] max_size) and its unit


def english_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z_]{3,}", text) if w not in KEPT]


def test_every_code_has_words_in_every_language() -> None:
    assert set(languages()) == {"en", "ja"}
    for language in languages():
        worded = set(catalogue(language).words)
        missing = [code.__name__ for code in ALL_CODES if code not in worded]
        assert missing == [], f"reasons/{language}.py has no words for {missing}"


@pytest.mark.parametrize("reason", SAMPLES, ids=[type(s).__name__ for s in SAMPLES])
def test_japanese_is_japanese_joined_and_bracketed_its_own_way(reason: Any) -> None:
    for finished in (False, True):
        en, ja = render(reason, finished=finished), render(reason, "ja", finished=finished)
        as_written = (
            c.Said | b.Words | d.ErrorLine | d.Written | CheckSaid | FileRefused | TypeSaid
        )  # others' words, as written
        assert en and ja and (ja != en or isinstance(reason, as_written))
        assert english_words(ja) == [], ja
        assert "; " not in ja and ", " not in ja, ja  # English joiners: Japanese joins with 、 and 。
        assert "(" not in ja.replace("(fix", ""), ja  # full-width （）
        depth = 0
        for ch in ja:  # no bracket inside a bracket
            depth += {"（": 1, "）": -1}.get(ch, 0)
            assert depth in (0, 1), ja


def brackets_nest(text: str) -> bool:
    """Whether a bracket opens inside another: "busy (llama-server holds … (busy above 30 %))"."""
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth > 1:
            return True
    return False


def test_brackets_nest_is_seen() -> None:
    assert brackets_nest("busy (llama-server holds 14 GiB (busy above 30 %))")
    assert not brackets_nest("busy (llama-server holds 14 GiB), busy above 30 % (now 97 %)")


#: Every code whose English has a bracket of its own: each is put in every field of every code that can
#: hold it, so a wording that brackets what it holds is caught whatever it holds.
BRACKETED = [s for s in SAMPLES if any("(" in render(s, finished=f) for f in (False, True))]


@pytest.mark.parametrize("code", ALL_CODES, ids=[code.__name__ for code in ALL_CODES])
def test_english_never_nests_brackets(code: type) -> None:
    assert BRACKETED, "no sample has a bracket: the test would prove nothing"
    for part in BRACKETED:
        reason = sample(code, inner=part)
        for finished in (False, True):
            text = render(reason, finished=finished)
            assert not brackets_nest(text), f"{code.__name__} holding {type(part).__name__}: {text}"


LLAMA = b.MemoryHeld(who=b.Who("llama-server"), held_bytes=14 * GIB, util_pct=97.0, threshold_pct=30.0)
UTIL = b.UtilHigh(
    who=b.Who("firefox"), held_bytes=int(1.5 * GIB), threshold_pct=30.0, window_s=10.0, util_pct=97.0
)


@pytest.mark.parametrize(
    ("reason", "en", "ja"),
    [
        (
            c.Redirected(
                target="Radeon 780M",
                to_cpu=False,
                waited_s=None,
                first=c.FirstBusy(label="GeForce RTX 5060 Ti", why=c.DeviceBusy(why=(LLAMA,))),
            ),
            "redirected to Radeon 780M: GeForce RTX 5060 Ti busy "
            "(llama-server holds 14.0 GiB and the GPU is at 97 %, busy above 30 %)",
            "Radeon 780M に振り替え: GeForce RTX 5060 Ti は使用中"
            "（llama-server が 14.0 GiB を使用中で、GPU は 97 %、30 % 超で使用中）",
        ),
        (
            c.WaitingFor(label="GeForce RTX 5060 Ti", why=c.DeviceBusy(why=(UTIL,))),
            "waiting for GeForce RTX 5060 Ti: firefox uses 1.5 GiB; above 30 % for 10 s; now 97 %",
            "GeForce RTX 5060 Ti を待機中: firefox が 1.5 GiB を使用中、10 秒間 30 % 超、現在 97 %",
        ),
        (
            c.RetryPlanned(why=c.ExitedWith(status=1), n=1, total=3, delay_s=30.0),
            "exited with status 1; retry 1 of 3 in 30 s",
            "終了コード 1 で終了。30 秒後に再試行（1/3）",
        ),
        (
            c.WaitingForAny(
                why=(
                    c.OnDevice(device="GeForce RTX 5060 Ti", why=c.DeviceBusy(why=(LLAMA,))),
                    c.OnDevice(device="Radeon 780M", why=c.RunningTask(name="train.py (#3)")),
                )
            ),
            "waiting for a free device: GeForce RTX 5060 Ti: llama-server holds 14.0 GiB and the GPU is at "
            "97 %, busy above 30 %; Radeon 780M: running 'train.py (#3)'",
            "空いているデバイスを待機中: GeForce RTX 5060 Ti: llama-server が 14.0 GiB を使用中で、GPU は "
            "97 %、30 % 超で使用中、Radeon 780M: 「train.py (#3)」を実行中",
        ),
        (
            c.Redirected(
                target="CPU",
                to_cpu=True,
                waited_s=120.0,
                first=c.FirstBusy(label="GeForce RTX 5060 Ti", why=c.TooHot(temp_c=91.0, limit_c=85.0)),
            ),
            "on CPU after waiting 2 min: GeForce RTX 5060 Ti busy (hot: 91 °C, limit 85 °C)",
            "2 分 待った後 CPU で実行: GeForce RTX 5060 Ti は使用中（高温: 91 °C、上限 85 °C）",
        ),
        (
            c.Preferred(
                prefer="fastest",
                others=(c.Outlook(device="GeForce RTX 5060 Ti", run_s=60.0, wait_s=720.0),),
                chosen=c.Outlook(device="Radeon 780M", run_s=240.0, wait_s=0.0),
                starts=True,
                energy=False,
            ),
            "fastest: GeForce RTX 5060 Ti frees in ~12 min, finishes in ~13 min; Radeon 780M finishes in "
            "~4 min: running there",
            "最速: GeForce RTX 5060 Ti は ~12 分 後に空き、~13 分 後に完了。Radeon 780M なら ~4 分 で完了: "
            "そこで実行します",
        ),
    ],
)
def test_renderings_as_the_command_line_and_the_tray_show_them(reason: c.Reason, en: str, ja: str) -> None:
    assert render(reason) == en
    assert render(reason, "ja") == ja


def test_tense_follows_the_state_of_the_task() -> None:
    """A demo job taken over after an owner restart said "running" next to "succeeded" (#33 item 10):
    the words come from the state the task is in when they are shown, whoever recorded the reason."""
    note = c.chain(c.DemoOnCpu(device="Radeon 780M"), c.Leftovers(count=1))
    assert render_for("running", note) == (
        "demo: running on the CPU in place of Radeon 780M; "
        "1 process was still running after the job ended: stopped"
    )
    assert render_for("succeeded", note).startswith("demo: ran on the CPU in place of Radeon 780M; ")
    assert render_for("running", note, "ja").startswith("デモ：Radeon 780M の代わりに CPU で実行中。")
    assert render_for("succeeded", note, "ja").startswith("デモ：Radeon 780M の代わりに CPU で実行しました。")


def test_a_reason_survives_the_store_and_an_old_english_row_is_shown_as_written(tmp_path: Path) -> None:
    reason = c.Redirected(
        target="Radeon 780M",
        to_cpu=False,
        waited_s=None,
        first=c.FirstBusy(label="x", why=c.DeviceBusy(why=(UTIL,))),
    )
    assert reason_of(reason_column(reason)) == reason
    assert reason_of("") is None and reason_column(None) == ""
    old = "waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB, 97 %"  # saved by an earlier gputray
    assert reason_of(old) == c.Said(text=old)
    assert render(reason_of(old), "ja") == old  # shown as written, in every language
    assert reason_of('{"code": "FromANewerGputray"}') == c.Said(text='{"code": "FromANewerGputray"}')

    store = TaskStore(tmp_path / "queue.sqlite3")
    rec = store.add(TaskSpec(kind="command", name="a", argv=("true",)))
    store.must_apply(rec.id, Wait(reason=reason))
    store.close()
    again = TaskStore(tmp_path / "queue.sqlite3")
    try:
        assert again.get(rec.id).reason == reason
    finally:
        again.close()


def test_a_reason_crosses_the_wire_typed() -> None:
    view = TaskView(
        id=1, state="waiting", reason=c.WaitingFor(label="GeForce", why=c.DeviceBusy(why=(LLAMA,)))
    )
    assert msgspec.json.decode(msgspec.json.encode(view), type=TaskView) == view


#: Words that are not a task's reason (the doctor's findings and fixes, a device's state and news, what a
#: doctor run says): they are worded as they are now, whatever a task's state.
FOR_THE_READER = (
    *doctor_codes(),
    *refusal_codes(),
    *config_codes(),
    *submit_codes(),
    *taskfile_codes(),
    *vulkan_codes(),
    *typing.get_args(b.BusyWhy),
    *typing.get_args(b.DeviceNews),
)

#: What says a task is still at it, in English (a verb in the present, or "-ing" not after "was", "after",
#: "while") and in Japanese (〜中 that does not go on as 〜中でした, 〜中に "while", 〜中で "being, and").
PRESENT_EN = re.compile(
    r"\b(is|are|waits|holds?|uses?|frees)\b|(?<!was )(?<!were )(?<!still )(?<!after )(?<!while )"
    r"\b(running|waiting|checking|sending|trying|retrying|starting)\b"
)
PRESENT_JA = re.compile(r"(?<!途)中(?!でした|に|で、|だった|断)|ています|します")


@pytest.mark.parametrize("reason", SAMPLES, ids=[type(s).__name__ for s in SAMPLES])
def test_a_finished_tasks_reason_reads_in_the_past(reason: Any) -> None:
    """Whatever a task's reason is made of, once the task has ended it reads as what happened (#31): a job
    taken over after a restart no longer says "running" next to "succeeded"."""
    if isinstance(reason, FOR_THE_READER):
        return
    en, ja = render(reason, finished=True), render(reason, "ja", finished=True)
    assert not PRESENT_EN.search(en), en
    assert not PRESENT_JA.search(ja), ja


def test_the_command_a_holds_reason_names_runs_as_typed_for_any_resident_name() -> None:
    """A user's own [[resident]] may be named with spaces, quotes or Japanese: the command the reason
    offers is quoted for the shell, in both languages."""
    for name, typed in [
        ("Ollama", "gputray free-resident ollama"),
        ("my server «日本»", "gputray free-resident 'my server «日本»'"),
        ("o'hara", "gputray free-resident 'o'\"'\"'hara'"),
    ]:
        holds = c.RoomMade(step="holds", resident=name, held_bytes=6 * GIB, idle_s=900)
        assert f"`{typed}`" in render(holds), render(holds)
        assert f"`{typed}`" in render(holds, "ja"), render(holds, "ja")


@pytest.mark.parametrize("code", typing.get_args(b.SampleWhy), ids=lambda code: code.__name__)
def test_what_a_backend_says_reads_in_the_language_inside_a_devices_and_a_tasks_reason(code: type) -> None:
    """A backend's own reason (#31: "GPU is lost (fell off the bus?)" was English inside the Japanese
    tray) is a code: worded in Japanese inside the device's "lost: …" and a waiting task's "unavailable: …",
    in the past once the task has ended, with the library's own error text (``error``) as written."""
    said = sample(code)
    for outer in (b.Lost(device="Radeon 780M", why=said), c.DeviceGone(state="unavailable", why=said)):
        for finished in (False, True):
            en, ja = render(outer, finished=finished), render(outer, "ja", finished=finished)
            assert en != ja and english_words(ja) == [], ja
            assert render(said, "ja", finished=finished) in ja
            assert not brackets_nest(en) and "(" not in ja, (en, ja)
    error = "NVML_ERROR_UNKNOWN (Unknown Error)"
    if "error" in code.__struct_fields__:  # others' words: as written in both languages
        said = msgspec.structs.replace(said, error=error)
        assert error in render(said) and error in render(said, "ja")
    done = render(c.DeviceGone(state="lost", why=said), finished=True)
    done_ja = render(c.DeviceGone(state="lost", why=said), "ja", finished=True)
    assert not PRESENT_EN.search(done.replace(error, "")), done
    assert not PRESENT_JA.search(done_ja), done_ja


def test_a_devices_reason_an_older_gputray_stored_as_text_is_shown_as_written() -> None:
    """A task waiting on a lost device was stored by an earlier gputray with the backend's English text
    (a peer of another protocol or cluster wire is refused before it is read): it decodes, and is shown
    as it was written."""
    old = msgspec.json.encode(
        {"code": "DeviceGone", "state": "lost", "why": "GPU is lost (fell off the bus?)"}
    )
    gone = msgspec.json.decode(old, type=c.Reason)
    assert gone == c.DeviceGone(state="lost", why="GPU is lost (fell off the bus?)")
    assert render(gone, "ja") == "失われました: GPU is lost (fell off the bus?)"
    new = c.DeviceGone(state="lost", why=b.FellOffBus())
    assert msgspec.json.decode(msgspec.json.encode(new), type=c.Reason) == new
    assert render(new, "ja") == "失われました: バスから外れました"
    assert render(new) == "lost: fell off the bus"
