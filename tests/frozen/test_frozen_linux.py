"""The frozen Linux build (`tools/build_linux.py`), unpacked and run as a user would: its layout (the
executable, the .desktop file, the icon in every freedesktop size), `--version`, then on Xvfb with a real
tray host (trayer): the tray icon appears, a click opens the panel, `gputray status --json` answers, and
a job queued with the frozen CLI runs under the frozen supervisor and ends with its exit status.

The build takes minutes, so it is not made here: `.ci/run`'s frozen step (before the suite, outside
it) builds it and runs this file with `GPUTRAY_FROZEN_LINUX=PATH.tar.gz`; without that variable (the suite)
the tests are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for
from x11_tree import tray_icon_geometry

ROOT = Path(__file__).resolve().parents[2]
TARBALL = os.environ.get("GPUTRAY_FROZEN_LINUX", "")
pytestmark = [
    pytest.mark.skipif(
        not TARBALL, reason="GPUTRAY_FROZEN_LINUX names no tarball (.ci/run's frozen step sets it)"
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux build"),
]
ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("frozen")
    with tarfile.open(TARBALL) as tar:
        tar.extractall(where, filter="tar")
    (top,) = where.iterdir()
    assert top.name == f"gputray-{version()}"
    return top


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_tarball_holds_the_app_its_menu_entry_and_its_icons(unpacked: Path) -> None:
    exe = unpacked / "gputray" / "gputray"
    assert exe.is_file() and os.access(exe, os.X_OK)
    assert (unpacked / "gputray" / "_internal").is_dir()
    entry = (unpacked / "share" / "applications" / "gputray.desktop").read_text(encoding="utf-8").splitlines()
    assert "Exec=gputray %F" in entry and "Icon=gputray" in entry and "TryExec=gputray" in entry
    assert any(line.startswith("MimeType=") and "text/x-python" in line for line in entry), entry
    for size in ICON_SIZES:
        assert png_size(
            unpacked / "share" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "gputray.png"
        ) == (
            size,
            size,
        )
    assert (unpacked / "share" / "icons" / "hicolor" / "scalable" / "apps" / "gputray.svg").is_file()
    listing = subprocess.run(
        ["desktop-file-validate", str(unpacked / "share" / "applications" / "gputray.desktop")],
        capture_output=True,
        text=True,
        check=False,
    ) if shutil.which("desktop-file-validate") else None  # fmt: skip
    assert listing is None or listing.returncode == 0, listing.stdout if listing else ""


def test_the_frozen_executable_says_its_version_without_python(unpacked: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GPUTRAY_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [str(unpacked / "gputray" / "gputray"), "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"gputray {version()} (Python 3.") and "frozen build" in out.stdout


def free_display() -> int:
    for n in range(160, 250):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture
def tray_host(tmp_path: Path) -> Iterator[dict[str, str]]:
    n = free_display()
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"]))
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{n}").exists(), 20, "Xvfb")
        # no Python of ours on PATH: the build must not need one
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
        env["LANG"] = "C.UTF-8"  # as a desktop session has: xwininfo prints the panel's "—" only then
        env["XDG_RUNTIME_DIR"] = str(tmp_path / "run")
        os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
        trayer = [
            "trayer",
            "--edge",
            "bottom",
            "--align",
            "right",
            "--widthtype",
            "request",
            "--height",
            "32",
        ]
        started.append(subprocess.Popen(trayer, env=env))
        wait_for(lambda: '"panel": ("panel" "trayer")' in tree(env), 20, "the trayer panel")
        yield env
    finally:
        for proc in reversed(started):
            stop(proc)


def tree(env: dict[str, str]) -> str:
    return subprocess.run(["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True).stdout


@pytest.mark.xserver
@pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("Xvfb", "trayer", "xwininfo", "xdotool")),
    reason="Xvfb, trayer, xdotool",
)
def test_the_frozen_tray_shows_its_icon_opens_its_panel_and_runs_a_job(
    unpacked: Path, tray_host: dict[str, str], tmp_path: Path
) -> None:
    exe = str(unpacked / "gputray" / "gputray")
    env = {**tray_host, "GPUTRAY_HOME": str(tmp_path / "home")}
    with (tmp_path / "tray-stderr.txt").open("wb") as err:
        tray = subprocess.Popen([exe, "--demo"], env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        icon = wait_for(lambda: tray_icon_geometry(tree(env)), 60, "the frozen tray's icon in trayer")
        log = tmp_path / "home" / "state" / "gputray.log"
        # the placeholder icon shows before the tray is built (app.py); a click then would go nowhere
        wait_for(lambda: log.exists() and "owner started" in log.read_text(errors="replace"), 60, "the owner")
        x, y, w, h = icon
        subprocess.run(
            ["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "1"], env=env, check=True
        )
        wait_for(lambda: '"gputray — DEMO"' in tree(env), 30, "the panel")

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=120)

        status = cli("status", "--json")
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert doc["demo"] is True and len(doc["devices"]) == 2
        ran = cli("run", "--device", "cpu", "--wait", "--", "sh", "-c", "echo frozen-job; exit 3")
        assert ran.returncode == 3, (
            ran.stdout + ran.stderr
        )  # the job's own exit status, through the supervisor
        queue = json.loads(cli("queue", "--all", "--json").stdout)
        (task,) = [t for t in queue["tasks"] if t["name"].startswith("sh")]
        assert task["state"] == "failed" and task["exit_code"] == 3
        assert "frozen-job" in cli("logs", str(task["id"])).stdout
        assert tray.poll() is None
    finally:
        stop(tray)
    assert tray.returncode == 0, (tmp_path / "tray-stderr.txt").read_text(errors="replace")[-3000:]
