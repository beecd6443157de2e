"""`pipx install .` and `uv tool install .` from a clone give a working `gputray` and `gputrayw`.

Both tools are the real ones from PyPI (the `test` extra), run in a HOME of their own so nothing of the
user's pipx or uv is touched; the dependencies come from the package index as they do for a user (pip's
cache and uv's make it a few seconds here). The installed commands are run from outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the tools' Linux layout (bin/ links)")


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def clone(dest: Path) -> Path:
    """The files git tracks or would (not ignored), as they are in the work tree: what a clone would hold."""
    tracked = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        .stdout.decode()
        .split("\0")
    )
    files = [f for f in tracked if f and (ROOT / f).is_file()]
    if not files:  # not a git checkout (an sdist): the tree without build output
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".venv*", "build", "dist", "*.egg-info"))
        return dest
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def tool_env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PIPX_", "UV_", "VIRTUAL_ENV", "GPUTRAY"))
    }
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"))
    env["GPUTRAY_HOME"] = str(home / "gputray")
    return env


def check_installed_commands(bin_dir: Path, env: dict[str, str], cwd: Path) -> None:
    gputray, gputrayw = bin_dir / "gputray", bin_dir / "gputrayw"
    assert gputray.exists() and gputrayw.exists(), sorted(p.name for p in bin_dir.iterdir())
    version = subprocess.run(
        [str(gputray), "--version"], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith(f"gputray {project_version()} (Python "), version.stdout
    windowed = subprocess.run(
        [str(gputrayw), "--version"], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert windowed.returncode == 0 and windowed.stdout == version.stdout, windowed.stderr
    status = subprocess.run(
        [str(gputray), "status", "--demo", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["demo"] is True
    # the installed tool runs its own copy, not this checkout's editable install
    where = subprocess.run(
        [str(gputray.resolve().parent / "python"), "-c", "import gputray.gui.entry as e; print(e.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert not Path(where.stdout.strip()).is_relative_to(ROOT), where.stdout


@pytest.mark.slow
def test_pipx_install_from_a_clone_gives_both_commands(tmp_path: Path) -> None:
    source = clone(tmp_path / "clone" / "gputray")
    env = tool_env(tmp_path / "home")
    env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
    done = subprocess.run(
        # --no-compile: compiling PySide6's .py files is most of the install's time; the app runs the same
        [
            sys.executable,
            "-m",
            "pipx",
            "install",
            "--python",
            sys.executable,
            "--pip-args=--no-compile",
            str(source),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gputray" in done.stdout and "gputrayw" in done.stdout
    check_installed_commands(tmp_path / "bin", env, tmp_path)


@pytest.mark.slow
def test_uv_tool_install_from_a_clone_gives_both_commands(tmp_path: Path) -> None:
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        uv = Path(shutil.which("uv") or "uv")
    source = clone(tmp_path / "clone" / "gputray")
    env = tool_env(tmp_path / "home")
    env.update(
        UV_TOOL_DIR=str(tmp_path / "tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
        # uv's own cache, kept between runs as pip's is (a cold one downloads PySide6 again each time)
        UV_CACHE_DIR=str(Path.home() / ".cache" / "gputray-test" / "uv"),
        UV_PYTHON_DOWNLOADS="never",
    )
    done = subprocess.run(
        [str(uv), "tool", "install", "--python", sys.executable, str(source)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gputray" in done.stderr + done.stdout
    check_installed_commands(tmp_path / "bin", env, tmp_path)
