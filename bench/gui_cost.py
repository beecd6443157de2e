"""What the tray app costs: launch → icon visible, memory, and CPU while idle (panel hidden / shown).

Runs the real app (`gputray --demo`) on a private Xvfb display with a real tray host (trayer), like the
end-to-end test, and measures it from outside with psutil and xwininfo. Prints figures next to the
goals from issue 6; never asserts.

    python3 bench/gui_cost.py [--idle-s 60] [--runs 3]
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
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the X11 tree reader
from x11_tree import tray_icon_geometry

GOALS = {"launch_s": 0.8, "rss_mb": 120.0, "cpu_hidden": 0.3, "cpu_shown": 2.0}


def tree(env: dict[str, str]) -> str:
    return subprocess.run(["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True).stdout


def icon_geometry(env: dict[str, str]) -> tuple[int, int, int, int] | None:
    return tray_icon_geometry(tree(env))


def cpu_percent_over(proc: psutil.Process, seconds: float) -> float:
    """CPU time of the app and its children over ``seconds`` of wall time, in % of one core."""

    def total() -> float:
        t = proc.cpu_times()
        own = t.user + t.system
        for child in proc.children(recursive=True):
            try:
                ct = child.cpu_times()
                own += ct.user + ct.system
            except psutil.Error:
                pass
        return own

    start_cpu, start = total(), time.monotonic()
    time.sleep(seconds)
    return (total() - start_cpu) / (time.monotonic() - start) * 100.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle-s", type=float, default=60.0, help="seconds of idle measurement per state")
    ap.add_argument("--runs", type=int, default=3, help="launches to time")
    args = ap.parse_args()
    missing = [t for t in ("Xvfb", "trayer", "xwininfo", "xdotool") if shutil.which(t) is None]
    if missing:
        print(f"needs {', '.join(missing)}", file=sys.stderr)
        return 2
    n = next(i for i in range(120, 250) if not Path(f"/tmp/.X{i}-lock").exists())
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
    env = {**os.environ, "DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
    trayer = None
    procs: list[subprocess.Popen[bytes]] = []
    try:
        while not Path(f"/tmp/.X11-unix/X{n}").exists():
            time.sleep(0.05)
        trayer = subprocess.Popen(
            ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request", "--height", "32"],
            env=env,
        )
        while '"panel": ("panel" "trayer")' not in tree(env):
            time.sleep(0.05)
        launch: list[float] = []
        app: subprocess.Popen[bytes] | None = None
        for run in range(args.runs):
            home = tempfile.mkdtemp(prefix="gputray-bench-")
            app_env = {**env, "GPUTRAY_HOME": home}
            t0 = time.monotonic()
            app = subprocess.Popen(
                [sys.executable, "-m", "gputray.gui.entry", "--demo"],
                env=app_env,
                stdout=subprocess.DEVNULL,
                stderr=open(Path(home) / "stderr.txt", "wb"),  # noqa: SIM115 - lives as long as the app
            )
            last_home = Path(home)
            procs.append(app)
            while icon_geometry(env) is None:
                if time.monotonic() - t0 > 30:
                    raise RuntimeError("the icon never appeared")
                time.sleep(0.01)
            launch.append(time.monotonic() - t0)
            if run < args.runs - 1:
                app.send_signal(signal.SIGTERM)
                app.wait(timeout=20)
                while icon_geometry(env) is not None:
                    time.sleep(0.05)
        assert app is not None
        proc = psutil.Process(app.pid)
        time.sleep(5)  # owner started, a few samples taken
        rss_start = proc.memory_info().rss / 2**20
        cpu_hidden = cpu_percent_over(proc, args.idle_s)
        geo = icon_geometry(env)
        assert geo is not None
        x, y, w, h = geo
        subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "1"], env=env)
        time.sleep(2)
        cpu_shown = cpu_percent_over(proc, args.idle_s)
        if app.poll() is not None:
            err = (last_home / "stderr.txt").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the app exited ({app.returncode}) during the measurement:\n{err}")
        rss_end = proc.memory_info().rss / 2**20
        has_heavy = [m for m in ("pyqtgraph", "torch") if m in Path(f"/proc/{app.pid}/maps").read_text()]

        print(f"gui_cost: demo mode on Xvfb + trayer, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        print(
            f"launch → tray icon visible: median {statistics.median(launch):.2f} s "
            f"(runs: {', '.join(f'{v:.2f}' for v in launch)})   goal ≤ {GOALS['launch_s']} s"
        )
        idle = f"{args.idle_s:.0f} s at 1 Hz"
        rss = f"RSS after start: {rss_start:.0f} MiB, after {2 * args.idle_s:.0f} s: {rss_end:.0f} MiB"
        print(f"{rss}   goal ≤ {GOALS['rss_mb']:.0f} MB")
        hidden = f"CPU idle, panel hidden, {idle}: {cpu_hidden:.2f} % of one core"
        print(f"{hidden}   goal ≤ {GOALS['cpu_hidden']} %")
        shown = f"CPU idle, panel shown,  {idle}: {cpu_shown:.2f} % of one core"
        print(f"{shown}   goal ≤ {GOALS['cpu_shown']} %")
        print(f"pyqtgraph/torch mapped in the process: {has_heavy or 'none'}")
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if trayer is not None:
            trayer.terminate()
            trayer.wait(timeout=10)
        xvfb.terminate()
        xvfb.wait(timeout=10)


if __name__ == "__main__":
    raise SystemExit(main())
