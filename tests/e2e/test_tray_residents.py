"""Issue 27 on the real tray (Xvfb, trayer, xcb) with its real owner in demo mode, a private session bus
and a stand-in for the desktop's notification daemon on it (``tests/gui/fake_notification_server.py``,
the library boundary: it prints each ``Notify`` and presses the buttons a person would).

One desktop, one owner, one story (kept to one so the suite's time stays low):

1. Three real resident processes (``tests/resident_stubs.py``: named like the real programs, speaking
   their documented APIs on 127.0.0.1, holding memory on the simulated RTX 5060 Ti): Ollama idle with
   ``free_when_idle = "never"`` (3 GiB), llama-server serving a request (3 GiB, router mode, so it
   could be freed), ComfyUI idle past its ``idle_after`` with ``"ask"`` (3.5 GiB). A job needing
   8 GiB on the 5060 Ti waits (6.5 GiB free); freeing any one of the three would let it start, and
   the smallest would be chosen — but "never" and a busy resident are not asked: the desktop is asked
   to free ComfyUI's ("Free ComfyUI's 3.5 GiB and run train.py" / "Keep waiting"), and so for a second
   job, eval.py. "Keep waiting" is pressed for eval.py: the owner keeps it with the task, whose reason
   says it waits by the user's choice. "Free" is pressed for train.py on the bus: ComfyUI's own
   ``POST /free`` arrives, the device's memory really drops, the job runs and its reason says so;
   Ollama and llama-server were never called.
2. A real process named ``cs2`` appears on the 5060 Ti's process list: the tray's notification says
   gputray paused its jobs there, the running job is paused, the panel (opened with a click on the
   icon) shows the card "taken by cs2" and the residents' lines, every figure whole (the app's own
   layout audit); the game exits, the notification says the jobs go on, and the job finishes.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from resident_stubs import resident
from test_tray_x11 import (
    HD,
    App,
    Case,
    Display,
    check_layout_audit,
    copy_screenshots,
    desktop,
    open_panel,
    pytestmark,  # noqa: F401 - the same marks: xserver, slow, the tools
    wait_for,
)

from gputray.monitor.sim_holds import write_hold
from gputray.monitor.units import GIB

HERE = Path(__file__).resolve().parent
NOTIFICATIONS = HERE.parent / "gui" / "fake_notification_server.py"
NVIDIA = "pci:0000:01:00.0"  # the simulated RTX 5060 Ti (16 GiB)
CONFIG = """\
[[resident]]
name = "ComfyUI"
free_when_idle = "ask"
idle_after = "1s"

[[resident]]
name = "Ollama"
free_when_idle = "never"
idle_after = "0s"

[[resident]]
name = "llama-server"
free_when_idle = "ask"
idle_after = "0s"

[exclusive]
apps = ["cs2"]
settle = "1s"
"""


class Notifications:
    """The stand-in daemon on the desktop's bus: the calls it got (JSON lines) and the buttons pressed."""

    def __init__(self, display: Display) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(NOTIFICATIONS), "actions,body"],
            env=display.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "notifications-ready"
        self.calls: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            said = json.loads(line)
            if "notify" in said:
                self.calls.put(said["notify"])

    def next_notify(self, timeout_s: float = 30.0) -> dict[str, Any]:
        return self.calls.get(timeout=timeout_s)

    def press(self, note_id: int, action: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"invoke {note_id} {action}\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def cli(app: App, *args: str) -> Any:
    """``gputray ARGS --json`` against the tray's owner, as a user types it."""
    env = {**os.environ, "GPUTRAY_HOME": str(app.home), "LANG": "C.UTF-8"}
    out = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", args[0], "--json", *args[1:]],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return json.loads(out.stdout)


def task(app: App, task_id: int) -> dict[str, Any]:
    (doc,) = [t for t in cli(app, "queue", "--all")["tasks"] if t["id"] == task_id]
    return dict(doc)


def nvidia_used_gib(app: App) -> float:
    for device in cli(app, "status")["devices"]:
        if device["key"] == NVIDIA:
            return float(device["vram_used_bytes"] or 0) / GIB
    raise AssertionError("no 5060 Ti in the status")


def shown(app: App, kind: str) -> list[str]:
    return [line for line in app.log_text().splitlines() if f"notification shown ({kind})" in line]


def test_the_tray_asks_to_free_an_idle_resident_and_shows_a_game_taking_the_gpu(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(CONFIG)
    holds = tmp_path / "holds"
    quiet = tmp_path / "no-load.toml"  # no scripted external load: only the residents hold memory
    quiet.write_text("")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    stop, mark = tmp_path / "stop", tmp_path / "count"
    counter = (
        f"import os, time\nn = 0\nwhile not os.path.exists({str(stop)!r}):\n n += 1\n"
        f" open({str(mark)!r}, 'w').write(str(n))\n time.sleep(0.05)\n"
    )
    case = Case("en", "light", "bottom", 1, HD)
    with (
        resident(tmp_path, "ollama", holds=holds, hold_gib=3) as ollama,
        resident(tmp_path, "llama-server", holds=holds, hold_gib=3, busy=True) as llama,
        resident(tmp_path, "comfyui", holds=holds, hold_gib=3.5) as comfy,
        desktop(case, home, extra_env={"GPUTRAY_SIM_HOLDS": str(holds)}, scenario=quiet) as (display, app),
    ):
        daemon = Notifications(display)
        try:
            ours = {ollama.proc.pid, llama.proc.pid, comfy.proc.pid}  # (other programs' may run too)
            wait_for("the three residents", lambda: ours <= {r["pid"] for r in cli(app, "residents")}, 30)
            wait_for("their 9.5 GiB on the 5060 Ti", lambda: nvidia_used_gib(app) > 9, 20)
            job = cli(app, "run", "--name", "train.py", "--device", "5060ti", "--vram", "8GiB",
                      "--", sys.executable, "-c", counter)  # fmt: skip
            task_id = int(job[0]["id"])
            later = cli(app, "run", "--name", "eval.py", "--device", "5060ti", "--vram", "8GiB",
                        "--", sys.executable, "-c", "pass")  # fmt: skip
            kept_id = int(later[0]["id"])

            notes = {n["summary"]: n for n in (daemon.next_notify(), daemon.next_notify())}
            keep = notes["eval.py waits for GeForce RTX 5060 Ti"]
            daemon.press(keep["id"], "keep-waiting")
            wait_for(
                "eval.py's reason to say the user chose to wait",
                lambda: "you chose to keep waiting rather than free it" in json.dumps(task(app, kept_id)),
                20,
            )
            asked = notes["train.py waits for GeForce RTX 5060 Ti"]
            assert asked["actions"] == [
                "free-resident", "Free ComfyUI's 3.5 GiB and run train.py", "keep-waiting", "Keep waiting",
            ], asked  # fmt: skip
            assert asked["body"].startswith("ComfyUI holds 3.5 GiB there and is idle "), asked
            assert [ollama.paths_called("POST"), llama.paths_called("POST"), comfy.paths_called("POST")] == [
                [], [], []
            ]  # the user is asked first: no resident was  # fmt: skip
            assert task(app, task_id)["state"] == "waiting"
            daemon.press(asked["id"], "free-resident")

            wait_for("ComfyUI's own free call", lambda: comfy.paths_called("POST") == ["/free"], 20)
            ran = wait_for(
                "the job to run", lambda: (t := task(app, task_id))["state"] == "running" and t, 30
            )
            assert isinstance(ran, dict)
            wait_for("the memory back", lambda: nvidia_used_gib(app) < 6.5 + 8, 20)  # its 3.5 GiB gone

            def held() -> dict[int, int]:  # as the owner's last look at the residents saw them
                return {r["pid"]: r["held_bytes"] for r in cli(app, "residents")}

            wait_for("ComfyUI's figure to drop", lambda: held()[comfy.proc.pid] < GIB, 10)
            assert held()[ollama.proc.pid] > 2 * GIB, held()  # only ComfyUI's
            assert "held by ComfyUI (idle " in json.dumps(ran), ran  # the reason tells the story
            assert ollama.paths_called("POST") == [] and llama.paths_called("POST") == []
            assert task(app, kept_id)["state"] == "waiting"

            # 2. a game takes the 5060 Ti: the job there pauses, the tray says so, both ways
            link = tmp_path / "cs2"
            link.symlink_to(sys.executable)
            game = subprocess.Popen([str(link), "-c", "import time; time.sleep(600)"])
            try:
                write_hold(holds, game.pid, "5060ti", 2 * GIB, util_percent=60)
                wait_for("the paused notice", lambda: shown(app, "gpu_taken"), 20)
                assert (
                    "cs2 took GeForce RTX 5060 Ti — gputray paused its jobs on GeForce RTX 5060 Ti"
                    in (shown(app, "gpu_taken")[0])
                ), shown(app, "gpu_taken")
                wait_for("the job paused", lambda: task(app, task_id).get("paused_at") is not None, 20)
                _icon, panel = open_panel(display, app, case)
                check_layout_audit(app, "panel", min_primary=6 + 3)  # the three residents' figures whole
                display.screenshot(shots / "panel-residents-taken-en-1366x768.png", panel)
                wait_for(
                    "the card taken", lambda: "card GeForce RTX 5060 Ti: taken by cs2" in app.log_text(), 10
                )
            finally:
                game.kill()
                game.wait(timeout=10)
            wait_for("the resumed notice", lambda: len(shown(app, "gpu_taken")) == 2, 20)
            assert "GeForce RTX 5060 Ti is free again — cs2 has exited" in shown(app, "gpu_taken")[1]
            wait_for("the job resumed", lambda: task(app, task_id).get("paused_at") is None, 20)
            stop.write_text("")
            wait_for("the job to finish", lambda: task(app, task_id)["state"] == "succeeded", 30)
            assert app.proc.poll() is None, (app.home / "stderr.txt").read_text(errors="replace")[-2000:]
        finally:
            daemon.stop()
    problems = [line for line in app.log_text().splitlines() if "layout problem" in line]
    assert problems == [], "\n".join(problems)
    copy_screenshots(shots)
