"""Environments in the user's config file: add, list, remove, scan — with real interpreters and venvs."""

from __future__ import annotations

import json
import os
import stat
import tomllib
import venv
from pathlib import Path

import pytest
import tomli_w

from gputray.scheduler import cli
from gputray.scheduler.config import ConfigError, read_config
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.registry import (
    EnvError,
    PythonEnv,
    add_env,
    load_envs,
    parse_env_assignments,
    remove_env,
    scan_candidates,
    suggest_name,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="shell scripts and symlinked venvs")


def _make_venv(folder: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=os.name == "posix").create(folder)
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _config_text() -> str:
    return app_paths().config_file.read_text(encoding="utf-8")


def test_add_list_remove_round_trip_keeps_the_users_other_settings(
    gputray_home: Path, notorch_python: Path
) -> None:
    config = app_paths().config_file
    config.parent.mkdir(parents=True)
    config.write_text("[monitor]\ninterval_s = 2.5\n\n[thresholds]\ntemp_limit_c = 80.0\n", encoding="utf-8")

    env = add_env(notorch_python, name="plain", extra_env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert env == PythonEnv("plain", notorch_python, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert load_envs() == [env]
    typed = read_config()
    assert typed.monitor.interval_s == 2.5
    assert typed.thresholds.temp_limit_c == 80.0
    assert "[[env]]" in _config_text()  # real tables, editable by hand
    assert config.with_name("config.toml.bak").read_text(encoding="utf-8").startswith("[monitor]")

    assert remove_env("plain") == env
    assert load_envs() == []
    assert read_config().monitor.interval_s == 2.5


def test_add_keeps_the_users_unrelated_keys_and_writes_no_defaults(
    gputray_home: Path, notorch_python: Path
) -> None:
    config = app_paths().config_file
    config.parent.mkdir(parents=True)
    user = {
        "gui": {"language": "ja", "notifications": {"gpu_hot": False}},
        "devices": {"5060ti": {"slots": 2}},
        "cluster": {"address": "10.0.0.5:6379", "machine": "desk"},
        "thresholds": {"temp_limit_c": 80.0},
    }
    config.write_text(tomli_w.dumps(user), encoding="utf-8")
    add_env(notorch_python, name="日本語")
    data = tomllib.loads(_config_text())
    assert data.pop("env") == [{"name": "日本語", "python": str(notorch_python)}]
    assert data == user  # nothing else changed, and no default (interval_s, busy_util_percent …) added


def test_a_venv_folder_stands_for_its_interpreter_and_names_itself(
    gputray_home: Path, tmp_path: Path
) -> None:
    python = _make_venv(tmp_path / "projects" / "upscaler" / ".venv")
    env = add_env(tmp_path / "projects" / "upscaler" / ".venv")
    assert env.python == python
    assert env.name == "upscaler"
    # The venv's interpreter is kept as given, not resolved to the base Python behind the symlink.
    assert "projects" in str(load_envs()[0].python)


@posix_only
def test_odd_path_names_survive_the_config_file(gputray_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "my envs; 'q' \"d\" 日本語" / "rocm 7.1"
    python = _make_venv(folder)
    env = add_env(python, extra_env={"NOTE": 'a "quoted" value; rm -rf /'})
    assert env.name == "rocm-7.1"
    (loaded,) = load_envs()
    assert loaded.python == python
    assert loaded.extra_env["NOTE"] == 'a "quoted" value; rm -rf /'
    with app_paths().config_file.open("rb") as f:
        assert tomllib.load(f)["env"][0]["python"] == str(python)


def test_missing_path_is_refused_and_nothing_is_written(gputray_home: Path, tmp_path: Path) -> None:
    with pytest.raises(EnvError, match="does not exist"):
        add_env(tmp_path / "nowhere" / "bin" / "python")
    assert not app_paths().config_file.exists()


def test_a_bare_program_name_points_to_its_full_path(
    gputray_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import sys

    monkeypatch.chdir(tmp_path)  # no ./python3 here
    name = Path(sys.executable).name
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent), prepend=os.pathsep)
    with pytest.raises(EnvError) as err:
        add_env(Path(name))
    assert f"give its full path: {shutil.which(name)}" in str(err.value)
    assert not app_paths().config_file.exists()


def test_folder_without_python_is_refused(gputray_home: Path, tmp_path: Path) -> None:
    with pytest.raises(EnvError, match="folder without a Python"):
        add_env(tmp_path)


@posix_only
def test_programs_that_are_not_python_are_refused(gputray_home: Path, tmp_path: Path) -> None:
    text_file = tmp_path / "readme.txt"
    text_file.write_text("not a program", encoding="utf-8")
    with pytest.raises(EnvError, match="not a program that can be run"):
        add_env(text_file)
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho hello\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(EnvError, match="does not look like a Python"):
        add_env(script)
    assert not app_paths().config_file.exists()


def test_duplicates_are_refused(gputray_home: Path, notorch_python: Path, tmp_path: Path) -> None:
    add_env(notorch_python, name="one")
    with pytest.raises(EnvError, match="already configured as 'one'"):
        add_env(notorch_python)
    other = _make_venv(tmp_path / "other")
    with pytest.raises(EnvError, match="exists already"):
        add_env(other, name="one")
    # Same interpreter with different variables is a different env (e.g. with an HSA override).
    second = add_env(notorch_python, extra_env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert second.name != "one"
    assert [e.name for e in load_envs()] == ["one", second.name]


def test_malformed_config_is_reported_and_left_alone(gputray_home: Path, notorch_python: Path) -> None:
    config = app_paths().config_file
    config.parent.mkdir(parents=True)
    broken = "[monitor\ninterval_s = 1\n"
    config.write_text(broken, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        add_env(notorch_python)
    assert config.read_text(encoding="utf-8") == broken


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('[[env]]\npython = "/usr/bin/python3"\n', "needs a name"),
        ('[[env]]\nname = "x"\n', "needs python"),
        (
            '[[env]]\nname = "x"\npython = "/p"\nextra_env = { A = 1 }\n',
            "extra_env must be a table of strings",
        ),
        ('[[env]]\nname = "x"\npython = "/p"\nextra_env = { "A=B" = "1" }\n', "'A=B' is not a valid"),
        ('[[env]]\nname = "x"\npython = "/p"\nextra_env = { A = "a\\u0000b" }\n', "NUL character"),
        ('[[env]]\nname = "x"\npython = "/p"\n[[env]]\nname = "x"\npython = "/q"\n', "two environments"),
        ('env = "oops"\n', "must be written as"),
    ],
)
def test_bad_env_entries_name_the_problem(gputray_home: Path, entry: str, message: str) -> None:
    config = app_paths().config_file
    config.parent.mkdir(parents=True)
    config.write_text(entry, encoding="utf-8")
    with pytest.raises(EnvError, match=message):
        load_envs()


def test_env_assignments() -> None:
    assert parse_env_assignments(["A=1", "HSA_OVERRIDE_GFX_VERSION=11.0.0", "EMPTY="]) == {
        "A": "1",
        "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
        "EMPTY": "",
    }
    for bad in ["NOVALUE", "=x", "1A=2", "A B=1"]:
        with pytest.raises(EnvError, match="KEY=VALUE"):
            parse_env_assignments([bad])


def test_suggested_names() -> None:
    assert suggest_name(Path("/home/u/venvs/rocm/bin/python")) == "rocm"
    assert suggest_name(Path("/home/u/proj/.venv/bin/python")) == "proj"
    assert suggest_name(Path("/home/u/proj/venv/bin/python3")) == "proj"
    assert suggest_name(Path("C:/Users/u/envs/cu128/Scripts/python.exe")) == "cu128"


@posix_only
def test_scan_suggests_and_never_adds(gputray_home: Path, tmp_path: Path, notorch_python: Path) -> None:
    home = tmp_path / "home"
    cwd = tmp_path / "project"
    found = {
        "dotvenvs": _make_venv(home / ".venvs" / "cu128"),
        "venvs": _make_venv(home / "venvs" / "rocm"),
        "virtualenvs": _make_venv(home / ".virtualenvs" / "audio"),
        "local": _make_venv(cwd / ".venv"),
    }
    conda_env = home / "miniconda3" / "envs" / "comfy"
    (conda_env / "conda-meta").mkdir(parents=True)
    (conda_env / "bin").mkdir()
    (conda_env / "bin" / "python").symlink_to(found["venvs"])
    (home / "venvs" / "not-a-venv").mkdir()  # no pyvenv.cfg: ignored
    # `conda env list --json` from a conda that knows an env elsewhere.
    elsewhere = _make_venv(tmp_path / "opt" / "conda-envs" / "tts")
    conda = tmp_path / "bin" / "conda"
    conda.parent.mkdir()
    doc = json.dumps({"envs": [str(elsewhere.parent.parent)]})
    conda.write_text(f"#!/bin/sh\ncat <<'EOF'\n{doc}\nEOF\n", encoding="utf-8")
    conda.chmod(0o755)
    add_env(found["venvs"], name="mine")
    before = _config_text()

    candidates = scan_candidates(
        home=home,
        cwd=cwd,
        which=lambda name: str(conda) if name == "conda" else None,
        current=notorch_python,
    )
    by_python = {c.python: c for c in candidates}
    assert set(found.values()) | {elsewhere, notorch_python, conda_env / "bin" / "python"} == set(by_python)
    assert by_python[found["venvs"]].configured_as == "mine"
    assert by_python[found["dotvenvs"]].suggested_name == "cu128"
    assert by_python[found["local"]].suggested_name == "project"
    assert by_python[elsewhere].source == "conda"
    assert by_python[notorch_python].source == "the Python running gputray"
    assert _config_text() == before  # suggests, never adds


@posix_only
def test_scan_lists_a_venv_once_though_it_has_python_and_python3(gputray_home: Path, tmp_path: Path) -> None:
    """A venv's bin holds python and python3 (the same interpreter); gputray run as python3 found the
    venv's python too and listed the venv twice. Another venv of the same base Python stays apart."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    python = _make_venv(cwd / ".venv")
    python3 = python.with_name("python3")
    assert python3.resolve() == python.resolve()
    other = _make_venv(home / "venvs" / "other")  # the same base interpreter behind its symlinks

    def scan() -> list[tuple[Path, str | None]]:
        found = scan_candidates(home=home, cwd=cwd, which=lambda name: None, current=python3)
        return [(c.python, c.configured_as) for c in found]

    assert scan() == [(python3, None), (other, None)]
    add_env(python, name="proj")
    assert scan() == [(python, "proj"), (other, None)]  # the path as added, whichever was met first


def test_cli_add_list_remove(
    gputray_home: Path, notorch_python: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["envs", "add", str(notorch_python), "--name", "plain", "--env", "A=1"]) == 0
    out = capsys.readouterr().out
    assert "added plain" in out and "no torch installed" in out

    assert cli.main(["envs"]) == 0
    listing = capsys.readouterr().out
    assert "plain" in listing and "A=1" in listing and "not checked yet" in listing
    assert f"config file: {app_paths().config_file}" in listing  # where the list is kept

    assert cli.main(["envs", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["envs"][0]["name"] == "plain"
    assert doc["envs"][0]["extra_env"] == {"A": "1"}
    assert doc["envs"][0]["results"] == []

    assert cli.main(["envs", "remove", "plain"]) == 0
    assert "removed plain" in capsys.readouterr().out
    assert cli.main(["envs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["envs"] == []
    assert cli.main(["envs"]) == 0
    assert f"config file: {app_paths().config_file}" in capsys.readouterr().out  # also when empty


def test_cli_list_columns_line_up_with_japanese_paths(
    gputray_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CJK character takes two terminal columns: the listing padded by characters, not columns."""
    from gputray.scheduler.cli.commands.common import terminal_cells

    python = _make_venv(tmp_path / "学習 venv")
    assert cli.main(["envs", "add", str(python), "--name", "ml"]) == 0
    capsys.readouterr()
    assert cli.main(["envs"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert terminal_cells(row[: row.index("—")]) == terminal_cells(header[: header.index("EXTRA ENV")])


def test_cli_errors_are_clear(gputray_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Exit statuses as every command gives them: 1 for a refusal, 2 for bad usage.
    assert cli.main(["envs", "add", str(tmp_path / "missing python")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["envs", "add", str(tmp_path), "--env", "oops"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert cli.main(["envs", "remove", "ghost"]) == 1
    assert "no environment named 'ghost'" in capsys.readouterr().err
