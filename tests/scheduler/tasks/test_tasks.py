from __future__ import annotations

import datetime as dt
import json

import msgspec
import pytest

from gputray.scheduler.cli.commands.common import task_json
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import (
    TaskRecord,
    TaskSpec,
    iso_utc,
    parse_window,
    substitute,
    window_label,
    window_open,
)

JSON_KEYS = [
    "id",
    "name",
    "kind",
    "state",
    "device",
    "env",
    "reason",
    "exit_code",
    "attempts",
    "submitted_at",
    "started_at",
    "ended_at",
    "log_path",
    "priority",
    "after",
    "after_any",
    "cwd",
    "machine",  # the cluster's (gputray.cluster): where it runs, its id there, where it came from
    "remote_id",
    "origin",
    "energy_j",  # its last run's GPU energy (joules, null: not measured), shared with others?, mean watts
    "energy_shared",
    "energy_estimated_s",  # seconds of its run whose energy was counted from power (a glitching counter)
    "power_avg_w",
    "prefer",  # free | fastest | greenest, and the family whose earlier runs estimate it
    "on_late",  # auto | move | stay: its job moved when its progress shows it ending late (late_move)
    "family",
    "offer",  # run elsewhere now? {device_key, device_name, run_s, waited_s} or null (replies.Offer)
    "estimate_s",  # per device it may use: [{device_key, device_name, run_s, finish_s, runs, throttled_runs}]
    "paused_at",  # a running task whose job is paused (pause-job): since when (null: not paused)
    "paused_s",  # the seconds its run spent paused
    "vram_need",  # the GPU memory it counts as needing, and from what: "vram" or its model files
    "vram_need_source",
    "progress",  # read from the job's own output: {done, total, …} or null; eta_s: the seconds left
    "eta_s",
]


def test_json_has_exactly_the_promised_keys_and_iso_times() -> None:
    """The owner's reply carries epoch times; `--json` (``task_json``) prints the promised document."""
    spec = TaskSpec(kind="command", name="echo", argv=("echo", "hi"))
    rec = TaskRecord(
        id=7,
        spec=spec,
        state="running",
        submitted_at=0.25,
        started_at=1764469800.125,
        device="pci:0000:01:00.0",
        attempts=1,
        log_path="/x/task-7.log",
    )
    view = TaskView.of(rec)
    assert (view.submitted_at, view.started_at, view.ended_at) == (0.25, 1764469800.125, None)
    data = task_json(view)
    assert list(data) == JSON_KEYS
    assert data["submitted_at"] == "1970-01-01T00:00:00.250Z"
    assert data["started_at"] == "2025-11-30T02:30:00.125Z"
    assert data["ended_at"] is None
    assert data["name"] == "echo" and data["kind"] == "command" and data["state"] == "running"
    assert data["prefer"] == "free" and data["family"] == "command:echo"
    json.dumps(data)  # plain JSON types only


def test_spec_round_trips_through_its_dict_form() -> None:
    spec = TaskSpec(
        kind="vulkan",
        name="up",
        argv=("realesrgan-ncnn-vulkan", "-i", "{file}", "-g", "{vk_index}"),
        files=("/tmp/a b.png",),
        device_prefs=("5060ti", "780m"),
        on_busy="redirect",
        max_wait_s=600.0,
        vram_bytes=2 * 1024**3,
        needs=("fp16",),
        window="01:00-07:00",
        env={"GGML_VK_VISIBLE_DEVICES": "{vk_index}"},
        retries=2,
    )
    wire = json.loads(json.dumps(spec.to_dict()))
    assert msgspec.convert(wire, TaskSpec) == spec
    assert msgspec.json.decode(msgspec.json.encode(spec), type=TaskSpec) == spec


def test_substitution_is_single_pass_so_file_names_stay_data() -> None:
    values = {"file": "/d/{out}; rm -rf ~ #.png", "out": "/d/o.png"}
    assert substitute("-i={file}", values) == "-i=/d/{out}; rm -rf ~ #.png"
    assert substitute("{unknown} {out}", values) == "{unknown} /d/o.png"


@pytest.mark.parametrize(
    ("window", "hour", "minute", "expected"),
    [
        ("01:00-07:00", 0, 59, False),
        ("01:00-07:00", 1, 0, True),
        ("01:00–07:00", 6, 59, True),  # en dash as people type it
        ("01:00-07:00", 7, 0, False),
        ("22:00-06:00", 23, 30, True),  # crosses midnight
        ("22:00-06:00", 5, 0, True),
        ("22:00-06:00", 12, 0, False),
    ],
)
def test_daily_windows_in_local_time(window: str, hour: int, minute: int, expected: bool) -> None:
    now = dt.datetime(2026, 6, 1, hour, minute).timestamp()
    assert window_open(window, now) is expected


@pytest.mark.parametrize("bad", ["1-7", "25:00-07:00", "01:00-01:00", "01:60-02:00", "night"])
def test_bad_windows_are_refused_with_the_value(bad: str) -> None:
    with pytest.raises(ValueError, match=r"window|between|empty"):
        parse_window(bad)


def test_window_label_uses_an_en_dash() -> None:
    assert window_label("1:00-7:00") == "01:00–07:00"


def test_iso_utc_none() -> None:
    assert iso_utc(None) is None
