"""The config's numbers have ranges: a bad value is reported (file, key, value, range) and its default
used, while the other keys keep the user's values; the owner and the tray still start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gputray.monitor.verdict import BusyThresholds
from gputray.scheduler.config import load_config, monitor_settings, read_monitor_settings


@pytest.mark.parametrize("text", ["0", "-1", "1e-9", "nan", "inf", "1e9"])
def test_a_bad_interval_is_named_and_replaced_by_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    path = tmp_path / "config.toml"
    text = f"[monitor]\ninterval_s = {text}\n[thresholds]\nbusy_util_percent = 50\n"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gputray.config"):
        thresholds, interval_s = monitor_settings(load_config(path))
    assert interval_s == 1.0
    assert thresholds.busy_util_percent == 50.0  # the good key keeps the user's value
    (problem,) = [r.getMessage() for r in caplog.records]
    assert "config.toml" in problem and "monitor.interval_s" in problem and "0.1 … 3600" in problem


def test_every_bad_threshold_is_reported_and_the_rest_kept() -> None:
    config = {
        "monitor": {"history_s": -5},
        "thresholds": {"temp_limit_c": -300, "busy_util_percent": float("nan"), "free_window_s": 7},
    }
    settings = read_monitor_settings(config, source="/home/me/.config/gputray/config.toml")
    assert settings.thresholds == BusyThresholds(free_window_s=7.0)
    assert settings.history_s == 3900.0
    assert len(settings.problems) == 3
    joined = "\n".join(settings.problems)
    for needle in ("history_s = -5", "temp_limit_c = -300", "busy_util_percent = nan", "config.toml"):
        assert needle in joined


def test_slots_per_device_from_the_config() -> None:
    from gputray.scheduler.config import read_device_slots

    config = {
        "devices": {
            "cpu": {"slots": 4},
            "5060ti": {"slots": 2},
            "780m": {"slots": 0},
            "pci:0000:09:00.0": {"slots": "two"},
            "other": {"note": "no slots key"},
        }
    }
    slots, problems = read_device_slots(config, source="config.toml")
    assert slots == {"cpu": 4, "5060ti": 2}
    assert problems == [
        "config.toml: devices.780m.slots = 0 is not a whole number from 1 to 64; using 1",
        "config.toml: devices.pci:0000:09:00.0.slots = 'two' is not a whole number from 1 to 64; using 1",
    ]
    assert read_device_slots({}) == ({}, [])
