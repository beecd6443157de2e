"""The config file is read once into a typed ``Config``: a bad value is reported (file, key, value,
what is allowed) and its default used while the other keys keep the user's values; an unknown key is
reported with the closest known one; the owner still starts with such a file."""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.monitor.verdict import BusyThresholds
from gputray.resources import resource_path
from gputray.scheduler.config import Config, ConfigError, LogsSection, read_config, read_config_or_defaults
from gputray.scheduler.paths import app_paths
from gputray.scheduler.reasons.render import render


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ["0", "-1", "1e-9", "nan", "inf", "1e9", '"fast"', "true"])
def test_a_bad_interval_is_named_and_replaced_by_the_default(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path, f"[monitor]\ninterval_s = {text}\n[thresholds]\nbusy_util_percent = 50\n")
    config = read_config(path)
    assert config.monitor.interval_s == 1.0
    assert config.thresholds.busy_util_percent == 50.0  # the good key keeps the user's value
    (problem,) = config.problems
    assert problem.key == "monitor.interval_s"
    assert str(path) in problem.message and "monitor.interval_s = " in problem.message
    assert "a number in 0.1 … 3600; using 1.0" in problem.message


def test_every_bad_threshold_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "[monitor]\nhistory_s = -5\n"
        '[thresholds]\ntemp_limit_c = "hot"\nbusy_util_percent = nan\nfree_window_s = 7\n',
    )
    config = read_config(path)
    assert config.thresholds == BusyThresholds(free_window_s=7.0)
    assert config.monitor.history_s == 3900.0
    assert [str(p) for p in config.problems] == [
        f"{path}: monitor.history_s = -5 is not a number in 60 … 604800; using 3900.0",
        f'{path}: thresholds.temp_limit_c = "hot" is not a number in 20 … 150; using 85.0',
        f"{path}: thresholds.busy_util_percent = nan is not a number in 0 … 100; using 30.0",
    ]


def test_a_whole_number_written_with_an_exponent_is_taken(tmp_path: Path) -> None:
    """TOML has no integer exponent form: ``2e9`` bytes is a float that is a whole number (the old reader
    took it; a typed field must too), while ``1.5`` slots is still refused."""
    path = _config(
        tmp_path,
        "[thresholds]\nexternal_vram_bytes = 2e9\n[devices.cpu]\nslots = 1.5\n"
        "[cluster]\nmax_transfer = 2e9\n",
    )
    config = read_config(path)
    assert config.thresholds.external_vram_bytes == 2_000_000_000
    assert config.cluster.max_transfer == 2_000_000_000  # a whole number or a size: 2e9 was refused
    assert [p.key for p in config.problems] == ["devices.cpu.slots"]


def test_slots_per_device_from_the_config(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "[devices.cpu]\nslots = 4\n"
        '[devices."5060ti"]\nslots = 2\n'
        "[devices.780m]\nslots = 0\n"
        '[devices."pci:0000:09:00.0"]\nslots = "two"\n'
        "[devices.other]\nslot = 3\n",
    )
    config = read_config(path)
    assert config.device_slots == {"cpu": 4, "5060ti": 2}  # a bad value: that device keeps one slot
    assert [str(p) for p in config.problems] == [
        f"{path}: devices.780m.slots = 0 is not a whole number in 1 … 64; using 1",
        f'{path}: devices.pci:0000:09:00.0.slots = "two" is not a whole number in 1 … 64; using 1',
        f"{path}: unknown key devices.other.slot (did you mean devices.other.slots?); ignored",
    ]


def test_an_unknown_key_names_the_closest_known_one(tmp_path: Path) -> None:
    path = _config(tmp_path, '[gui]\nlangauge = "ja"\n[thresholds]\ntemp_limt_c = 70\n[moniter]\n')
    config = read_config(path)
    assert config.gui.language == "auto" and config.thresholds.temp_limit_c == 85.0
    assert [str(p) for p in config.problems] == [
        f"{path}: unknown key moniter (did you mean monitor?); ignored",
        f"{path}: unknown key thresholds.temp_limt_c (did you mean thresholds.temp_limit_c?); ignored",
        f"{path}: unknown key gui.langauge (did you mean gui.language?); ignored",
    ]
    assert all(p.unknown for p in config.problems)


def test_a_language_the_tray_does_not_ship_is_named_with_those_it_does(tmp_path: Path) -> None:
    """`language = "jp"` (or "日本語") used to follow the locale silently: `gputray config` said nothing."""
    path = _config(tmp_path, '[gui]\nlanguage = "jp"\n')
    config = read_config(path)
    assert config.gui.language == "auto"
    assert [str(p) for p in config.problems] == [
        f'{path}: gui.language = "jp" is not one of "auto", "en", "ja"; using "auto"'
    ]


def test_values_are_named_as_the_file_writes_them(tmp_path: Path) -> None:
    """`true` and an exact bound, as in TOML: not Python's `True`, `None` or a rounded `1.1259e+15`."""
    path = _config(
        tmp_path,
        "[thresholds]\nigpu_temp_limit_c = true\nexternal_vram_bytes = -5\n"
        "[gui]\nnotifications = 5\n[cluster]\naddress = 5\n",
    )
    assert [str(p) for p in read_config(path).problems] == [
        f"{path}: thresholds.igpu_temp_limit_c = true is not a number in 20 … 150; using 90.0",
        f"{path}: thresholds.external_vram_bytes = -5 is not a whole number in 0 … 1125899906842624; "
        "using 1073741824",
        f"{path}: gui.notifications = 5 is not a table of true/false values; using {{}}",
        f"{path}: cluster.address = 5 is not text; left unset",
    ]


def test_an_env_without_python_names_the_key_written_instead(tmp_path: Path) -> None:
    path = _config(tmp_path, '[[env]]\nname = "rocm"\npath = "/v/bin/python"\n')
    assert [str(p) for p in read_config(path).problems] == [
        f"{path}: [[env]] #1 (rocm) needs python = the path to its interpreter",
        f"{path}: unknown key env.rocm.path (did you mean env.rocm.python?); ignored",
    ]


def test_a_misspelt_notification_kind_is_named(tmp_path: Path) -> None:
    path = _config(tmp_path, "[gui.notifications]\njob_faild = false\ngpu_hot = false\n")
    config = read_config(path)
    assert config.gui.notifications["gpu_hot"] is False
    assert [str(p) for p in config.problems] == [
        f"{path}: unknown key gui.notifications.job_faild (did you mean gui.notifications.job_failed?); "
        "ignored"
    ]


def test_one_bad_notification_entry_leaves_the_others(tmp_path: Path) -> None:
    """`gpu_hot = "yes"` beside `job_started = false` (which Settings adds): the whole table was
    dropped, so the job notifications the user had just turned off came back."""
    path = _config(tmp_path, '[gui.notifications]\ngpu_hot = "yes"\njob_started = false\n')
    config = read_config(path)
    assert config.gui.notifications == {"job_started": False}
    assert [str(p) for p in config.problems] == [
        f'{path}: gui.notifications.gpu_hot = "yes" is not true or false; ignored'
    ]


def test_a_table_of_the_wrong_type_is_named_and_the_defaults_used(tmp_path: Path) -> None:
    path = _config(tmp_path, 'gui = "ja"\ndevices = 2\n[thresholds]\ntemp_limit_c = 70\n')
    config = read_config(path)
    assert config.gui.language == "auto" and config.device_slots == {}
    assert config.thresholds.temp_limit_c == 70.0
    assert [str(p) for p in config.problems] == [
        f"{path}: [devices] must be a table of [devices.<name>] tables, not 2",
        f'{path}: [gui] must be a table, not "ja"; using the defaults',
    ]


def test_japanese_paths_in_an_env_entry_are_read_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "環境" / "ロクム"
    path = _config(
        tmp_path,
        f'[[env]]\nname = "ロクム"\npython = "{folder}/bin/python"\n'
        'extra_env = { HSA_OVERRIDE_GFX_VERSION = "11.0.0" }\n',
    )
    config = read_config(path)
    (env,) = config.envs
    assert env.name == "ロクム" and env.python == folder / "bin" / "python"
    assert dict(env.extra_env) == {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    assert config.problems == ()


def test_an_absent_file_is_the_defaults_and_a_malformed_one_names_its_line(tmp_path: Path) -> None:
    assert read_config(tmp_path / "none.toml") == Config(str(tmp_path / "none.toml"))
    path = _config(tmp_path, "[monitor]\ninterval_s = 1\ninterval_s = 2\n")
    with pytest.raises(ConfigError, match=r"config\.toml: .*line 3"):
        read_config(path)


def test_a_file_not_in_utf8_names_its_line_and_a_bom_is_read(tmp_path: Path) -> None:
    """A Japanese comment saved as Shift-JIS (or Notepad's UTF-16) is a ConfigError naming the file and
    line, not a traceback (the owner then starts on the defaults); Notepad's UTF-8 BOM is just UTF-8."""
    path = tmp_path / "config.toml"
    path.write_bytes('[gui]\n# 日本語\nlanguage = "ja"\n'.encode("shift_jis"))
    with pytest.raises(ConfigError, match=r"config\.toml: line 2 is not UTF-8 text; save the file as UTF-8"):
        read_config(path)
    assert read_config_or_defaults(path) == Config(str(path))
    path.write_bytes(codecs.BOM_UTF8 + b'[gui]\nlanguage = "ja"\n')
    assert read_config(path).gui.language == "ja"


def test_the_owner_logs_a_malformed_file_in_one_line_not_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _config(tmp_path, "[thresholds\n")
    with caplog.at_level(logging.ERROR, logger="gputray.config"):
        assert read_config_or_defaults(path) == Config(str(path))
    (record,) = caplog.records
    assert record.exc_info is None
    assert record.getMessage().startswith(f"{path}: Expected ']'") and "line 1" in record.getMessage()
    assert record.getMessage().endswith("; using the defaults")


def test_the_shipped_default_config_is_the_typed_defaults() -> None:
    """resources/default_config.toml documents the defaults: it must say what the records hold."""
    path = Path(str(resource_path("default_config.toml")))
    assert read_config(path) == Config(str(path))


def test_the_owner_starts_with_a_bad_config_and_logs_each_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`gputray daemon`'s owner: bad values are logged by name and replaced; the good ones are used."""
    from gputray.scheduler.owner import Owner

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    paths = app_paths()
    paths.config_file.parent.mkdir(parents=True)
    paths.config_file.write_text(
        '[thresholds]\ntemp_limit_c = "hot"\nigpu_temp_limit_c = 30\n'
        '[devices.cpu]\nslots = 0\n[gui]\nlangauge = "ja"\n'
        '[[env]]\nname = "ロクム"\npython = "/home/ユーザー/venvs/ロクム/bin/python"\n'
        'extra_env = { "番号" = "1" }\n',
        encoding="utf-8",
    )
    owner = Owner(paths, demo=True)
    with caplog.at_level(logging.WARNING, logger="gputray.config"):
        owner.start()
    try:
        snap = wait_for(lambda: owner.monitor.latest, what="a first sample")
        hot = [v for v in snap.verdicts if v.hot]
        assert hot and "limit 30 °C" in render(hot[0].reasons[0])  # the good key is used
        logged = "\n".join(r.getMessage() for r in caplog.records)
        for needle in (
            'thresholds.temp_limit_c = "hot" is not a number in 20 … 150; using 85.0',
            "devices.cpu.slots = 0 is not a whole number in 1 … 64; using 1",
            "unknown key gui.langauge (did you mean gui.language?)",
            "[[env]] #1 (ロクム): extra_env: '番号' is not a valid environment variable name",
        ):
            assert f"{paths.config_file}: {needle}" in logged
    finally:
        owner.stop()


def test_gputray_config_lists_the_problems_and_exits_1(tmp_path: Path) -> None:
    from cli import gputray

    home = tmp_path / "home"
    done = gputray("config", home=home)
    assert done.returncode == 0 and "(absent: the defaults apply)" in done.stdout
    assert "no problems" in done.stdout
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[thresholds]\ntemp_limit_c = "hot"\n[gui]\nlangauge = "ja"\n', encoding="utf-8")
    done = gputray("config", home=home)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f'{path}: thresholds.temp_limit_c = "hot" is not a number in 20 … 150; using 85.0',
        f"{path}: unknown key gui.langauge (did you mean gui.language?); ignored",
    ]
    path.write_text("[thresholds\n", encoding="utf-8")
    done = gputray("config", home=home)
    assert done.returncode == 1 and f"{path}: " in done.stderr and "line 1" in done.stderr


def test_gputray_config_names_a_bad_cluster_size_or_duration_by_file_and_key(tmp_path: Path) -> None:
    """`max_transfer = "lots"` passed `gputray config` ("no problems") and the bridge later logged
    "[cluster]: expected a size …" naming neither the file nor the key."""
    from cli import gputray

    home = tmp_path / "home"
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[cluster]\naddress = "h:1"\nmax_transfer = "lots"\n', encoding="utf-8")
    done = gputray("config", home=home)
    assert done.returncode == 1, done.stdout
    (line,) = done.stdout.splitlines()[1:]
    assert line.startswith(f"{path}: [cluster] max_transfer: expected a size like")
    assert line.endswith("got 'lots'")


@pytest.mark.parametrize("value", ['"12 parsecs"', "100", "-1", '"0B"', "true"])
def test_a_log_cap_gputray_cannot_use_is_named_and_the_default_kept(tmp_path: Path, value: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[logs]\nmax_size = {value}\n")
    config = read_config(path)
    assert config.logs.max_bytes == 1 << 30
    assert [p.key for p in config.problems] == ["logs.max_size"]
    assert f"logs.max_size = {value} is not" in config.problems[0].message
    from gputray.scheduler.reasons.render import render  # the tray's banner words it in its language

    said = config.problems[0].said
    assert said is not None and render(said) == config.problems[0].message
    assert f"logs.max_size = {value} は" in render(said, "ja")


def test_a_log_cap_is_read_as_a_size() -> None:
    assert LogsSection("500MB").max_bytes == 500_000_000 and LogsSection(1 << 20).max_bytes == 1 << 20
