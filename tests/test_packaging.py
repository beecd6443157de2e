"""The built wheel carries every subpackage and data file, and its entry points are the documented ones."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gui", "monitor", "scheduler", "cluster", "resources")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("gputray-*.whl")
    return built


def source_files() -> list[str]:
    """What the wheel must hold: every file git tracks in the package folders, as gputray/<folder>/..."""
    tracked = subprocess.run(
        ["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if not tracked:  # not a git checkout (an sdist): fall back to the tree
        tracked = [
            str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*") if p.is_file()
        ]
    return sorted(f"gputray/{f}" for f in tracked if "__pycache__" not in f and not f.endswith((".ts",)))


def test_wheel_holds_every_subpackage_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in source_files() if f not in names]
    assert missing == [], f"files missing from the wheel (package list or package-data?): {missing}"
    assert "gputray/__init__.py" not in names  # gputray stays a namespace package


def test_wheel_entry_points_are_the_console_cli_and_the_windowless_tray(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    (ep_name,) = [n for n in zf.namelist() if n.endswith("entry_points.txt")]
    entry_points = zf.read(ep_name).decode()
    assert "[console_scripts]\ngputray = gputray.gui.entry:main" in entry_points
    assert "[gui_scripts]\ngputrayw = gputray.gui.entry:main_windowed" in entry_points


def test_installed_wheel_runs_the_cli_from_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    code = (
        "import gputray.monitor.records, gputray.scheduler.cli, gputray.gui.entry, gputray.resources as r;"
        "print(r.RESOURCES_DIR)"
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    # -S keeps the editable install of the checkout out of the way; the deps come from our own site dir.
    site = subprocess.run(
        [sys.executable, "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    env["PYTHONPATH"] = f"{target}:{site}"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(target))


def readme_commands() -> list[str]:
    """The README's two set-up commands: the first code block, right after the title and its paragraph."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert readme[0] == "# gputray"
    opening = readme.index("```sh")
    assert all(not line.startswith("#") for line in readme[1:opening]), "the commands come before any section"
    closing = readme.index("```", opening + 1)
    commands = [line for line in readme[opening + 1 : closing] if line.strip()]
    assert len(commands) == 2
    return commands


def test_ci_runs_the_readme_test_command_verbatim_in_a_fresh_clone() -> None:
    """.ci/run runs README's second command, exactly as written, in a clone of this commit in an empty
    folder: the lines that make that clone are run here and the folder they leave is looked at. What
    follows it are only longer runs of the suite's own tests in that clone (the soak, other people's
    programs): steps kept out of the suite's time, each a pytest run of the clone's venv."""
    command = readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci
    at = ci.index(command)
    after = [line for line in ci[at + 1 :] if line.strip() and not line.lstrip().startswith("#")]
    for line in after:
        assert re.fullmatch(r"(\w+=\S+ )*\.venv/bin/python -m pytest .+", line), line
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout (an sdist): no commit to clone")
    prelude = ci[ci.index('tmp="$(mktemp -d)"') : at]
    assert prelude[-1].startswith("cd ")
    probe = "\n".join(["set -euo pipefail", *prelude, 'echo "$PWD"', "ls -A ..", "git rev-parse HEAD"])
    done = subprocess.run(["bash", "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    where, *beside, commit = done.stdout.splitlines()
    assert Path(where).name == "gputray" and not Path(where).is_relative_to(ROOT)
    assert beside == ["gputray"]  # no shared/ or anything else beside the clone
    assert commit == head.stdout.strip()
    assert not Path(where).exists()  # the clone is removed when .ci/run exits


def test_the_first_install_brings_the_dashboard_and_the_old_extra_still_installs(wheel: Path) -> None:
    """`pip install .` gives the whole app: pyqtgraph (dashboard, doctor window) is a plain dependency;
    `gputray[dashboard]`, the old install line, still resolves (an empty extra)."""
    zf = zipfile.ZipFile(wheel)
    (meta_name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    meta = zf.read(meta_name).decode().splitlines()
    requires = [line.removeprefix("Requires-Dist: ") for line in meta if line.startswith("Requires-Dist: ")]
    assert any(r.startswith("pyqtgraph") and ";" not in r for r in requires), requires
    assert "Provides-Extra: dashboard" in meta
    assert not any('extra == "dashboard"' in r for r in requires), "nothing is left only in the extra"
