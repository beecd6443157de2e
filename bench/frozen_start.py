"""Frozen start → tray icon: how long the PyInstaller build takes from launch to its icon in the tray,
beside the same measure for gputray from this venv (``python -m gputray.gui.entry``), on Xvfb + trayer.

    python bench/frozen_start.py PATH/TO/gputray [--runs 3]
    python bench/frozen_start.py --wine PATH/TO/gputrayw.exe [--runs 3]

``PATH/TO/gputray``: the executable of an unpacked ``tools/build_linux.py`` tarball. ``--wine``: the
``gputrayw.exe`` of an unzipped ``tools/build_windows.py`` zip, under Wine (the Windows tests' prefix,
``tests/winpython.py``), until Wine's notification-area icon is docked in trayer; there is no venv to
compare with. Goal: the same as ``bench/gui_cost.py``'s launch goal (issue 6), ≤ 0.8 s; never asserts.
Also prints the build's size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the X11 tree reader
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "wine"))  # Wine's docked icon
from x11_tree import tray_icon_geometry

GOAL_S = 0.8


def tree(env: dict[str, str]) -> str:
    return subprocess.run(["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True).stdout


def launch_to_icon(argv: Sequence[str], env: dict[str, str]) -> float:
    home = tempfile.mkdtemp(prefix="gputray-bench-")
    t0 = time.monotonic()
    app = subprocess.Popen(
        [*argv, "--demo"],
        env={**env, "GPUTRAY_HOME": home},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while tray_icon_geometry(tree(env)) is None:
            if app.poll() is not None or time.monotonic() - t0 > 60:
                raise RuntimeError(f"{argv[0]}: no tray icon (exit {app.poll()})")
            time.sleep(0.01)
        return time.monotonic() - t0
    finally:
        app.send_signal(signal.SIGTERM)
        app.wait(timeout=30)
        while tray_icon_geometry(tree(env)) is not None:
            time.sleep(0.05)
        shutil.rmtree(home, ignore_errors=True)


def wine_launch_to_icon(exe: Path, display: str, runs: int) -> list[float]:
    """Launch → Wine's docked icon in trayer, ``runs`` times, on the Windows tests' prefix."""
    from test_wine_tray import docked_icon
    from winpython import WinePython, ensure_cache, session_lock, winpath

    cache = ensure_cache()
    times = []
    with session_lock(cache), tempfile.TemporaryDirectory() as code:
        win = WinePython(cache, Path(code), display)
        win.start_server()
        try:
            for _ in range(runs):
                home = tempfile.mkdtemp(prefix="gputray-bench-")
                t0 = time.monotonic()
                app = subprocess.Popen(
                    [win.wine, winpath(exe), "--demo"], env=win.env({"GPUTRAY_HOME": winpath(Path(home))}),
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                while docked_icon(display) is None:
                    if app.poll() is not None or time.monotonic() - t0 > 120:
                        raise RuntimeError(f"{exe}: no tray icon (exit {app.poll()})")
                    time.sleep(0.02)
                times.append(time.monotonic() - t0)
                app.kill()
                app.wait(timeout=60)
                while docked_icon(display) is not None:
                    time.sleep(0.05)
        finally:
            win.stop_server()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe", type=Path, help="the frozen gputray executable (gputrayw.exe with --wine)")
    ap.add_argument("--wine", action="store_true", help="a Windows build, under Wine")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    n = next(i for i in range(120, 250) if not Path(f"/tmp/.X{i}-lock").exists())
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
    env = {**os.environ, "DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
    trayer = None
    try:
        while not Path(f"/tmp/.X11-unix/X{n}").exists():
            time.sleep(0.05)
        trayer = subprocess.Popen(
            ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request", "--height", "32"],
            env=env,
        )
        while '"panel": ("panel" "trayer")' not in tree(env):
            time.sleep(0.05)
        if args.wine:
            frozen, venv = wine_launch_to_icon(args.exe, f":{n}", args.runs), []
        else:
            frozen = [launch_to_icon([str(args.exe)], env) for _ in range(args.runs)]
            venv = [
                launch_to_icon([sys.executable, "-m", "gputray.gui.entry"], env) for _ in range(args.runs)
            ]
    finally:
        for proc in (trayer, xvfb):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
    folder = args.exe.resolve().parent
    size_mib = sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20
    med = statistics.median(frozen)
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} CPUs)")
    beside = f"; from the venv: median {statistics.median(venv):.2f} s" if venv else "; under Wine"
    print(
        f"frozen start → tray icon: median {med:.2f} s (runs: {', '.join(f'{v:.2f}' for v in frozen)}"
        f"{beside}) goal ≤ {GOAL_S} s: {'met' if med <= GOAL_S else 'not met'}; "
        f"the folder: {size_mib:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
