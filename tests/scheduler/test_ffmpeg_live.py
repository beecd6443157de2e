"""ffmpeg as a live job (issue 29 items 2–3): a video dropped on the queue becomes the shipped
``upscale-video`` recipe's task (Debian's ffmpeg, ``scale_vulkan`` on a real lavapipe device behind the
demo's Radeon 780M, tests/two_lavapipes.py), and while it runs gputray reads its progress from ffmpeg's
own ``frame=… time=…`` lines against the input's ``Duration:``.

The input is a clip the test encodes (lavfi ``testsrc``), handed to ffmpeg through a named pipe the test
feeds a piece at a time: ffmpeg cannot finish before the test has seen its progress, whatever the
machine's speed, and while the test holds the rest back ffmpeg waits, so its last line stands still and
the queue's figure can be compared with it exactly. ``FFREPORT`` (ffmpeg's own report file, at its
verbose level) gives ffmpeg's word on the Vulkan device it opened."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli import gputray
from two_lavapipes import demo_owner_on_two_lavapipes
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.replies import TaskView

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="lavapipe through the Linux Vulkan loader; mkfifo"),
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg: apt-get install ffmpeg"),
    pytest.mark.timeout(300),
]

CLIP_S = 8  # seconds of test pattern: what ffmpeg's Duration line says
PIECE_BYTES = 2048
ENDED = ("succeeded", "failed", "cancelled")
TIME = re.compile(r"\bframe=\s*\d+.*?\btime=(\d+):(\d\d):(\d\d(?:\.\d+)?)")


def _last_time_s(log: str) -> float | None:
    """The ``time=`` of ffmpeg's last ``frame=`` line (its updates end in ``\\r``), read here on its own."""
    found = [m for line in re.split(r"[\r\n]", log) if (m := TIME.search(line))]
    return None if not found else int(found[-1][1]) * 3600 + int(found[-1][2]) * 60 + float(found[-1][3])


def _clip(folder: Path) -> bytes:
    made = folder / "source.mkv"
    encode = [
        "ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "lavfi",
        "-i", f"testsrc=duration={CLIP_S}:size=96x64:rate=25", "-c:v", "libx264", "-pix_fmt", "yuv420p",
        str(made),
    ]  # fmt: skip
    done = subprocess.run(encode, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.skip(f"this ffmpeg cannot encode the test clip: {done.stderr.strip()[-300:]}")
    return made.read_bytes()


def _needs_scale_vulkan() -> None:
    filters = subprocess.run(
        ["ffmpeg", "-hide_banner", "-filters"], capture_output=True, text=True, check=False
    )
    if " scale_vulkan " not in filters.stdout:
        pytest.skip(
            "this ffmpeg has no scale_vulkan filter (the upscale-video recipe needs an ffmpeg with Vulkan)"
        )


class _Feeder(threading.Thread):
    """Writes the clip into the named pipe: a piece, then a pause (ended early once the test has seen
    progress), up to ``hold_at`` of it; the rest once ``release`` is set."""

    def __init__(self, pipe: Path, data: bytes) -> None:
        super().__init__(daemon=True)
        self.pipe, self.data = pipe, data
        self.hold_at = len(data) * 3 // 4
        self.seen, self.release = threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with open(self.pipe, "wb", buffering=0) as f:  # blocks until ffmpeg opens it
                sent = 0
                while sent < self.hold_at:
                    sent += f.write(self.data[sent : min(sent + PIECE_BYTES, self.hold_at)])
                    if self.seen.wait(1.0):  # a pause: ffmpeg reports (every 0.5 s) what it has so far
                        break
                self.release.wait(240)
                f.write(self.data[sent:])
        except BaseException as exc:  # said by the test, which waits for this thread
            self.error = exc


def test_an_ffmpeg_upscale_through_the_video_recipe_shows_its_progress_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_scale_vulkan()
    folder = tmp_path / "videos"
    folder.mkdir()
    data = _clip(folder)
    pipe = folder / "clip.mkv"
    os.mkfifo(pipe)
    report = tmp_path / "ffreport.log"
    with demo_owner_on_two_lavapipes(tmp_path, monkeypatch) as owner:
        feeder = _Feeder(pipe, data)
        feeder.start()
        submitted = gputray(
            "submit", str(pipe), "--device", "780m", "--env", f"FFREPORT=file={report}:level=40",
            home=tmp_path / "home",
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        task_id = int(submitted.stdout.split()[0].lstrip("#"))
        try:
            with ipc.IpcClient(owner.paths) as client:

                def now() -> TaskView:
                    return client.ask(rq.Get(id=task_id)).task

                def said() -> str:
                    view = now()
                    return Path(str(view.log_path)).read_text(errors="replace") if view.log_path else ""

                def progressed() -> TaskView | None:
                    view = now()
                    return (
                        view
                        if view.state in ENDED or (view.state == "running" and (view.progress or 0) > 0)
                        else None
                    )

                seen = wait_for(progressed, what="ffmpeg's progress", timeout_s=180)
                feeder.seen.set()
                assert seen.state == "running" and seen.progress is not None and 0 < seen.progress < 1, said()
                log = said()
                assert f"Duration: 00:00:{CLIP_S:02d}.00" in log, log

                # ffmpeg waits for the rest of its input: its last line stands, and the queue's figure is it
                def agrees() -> bool:
                    last = _last_time_s(said())
                    return last is not None and now().progress == pytest.approx(last / CLIP_S)

                wait_for(
                    agrees,
                    what="the queue's progress to be ffmpeg's time over the clip's duration",
                    timeout_s=60,
                )
                held = wait_for(
                    lambda: (t := now()).eta_s is not None and t, what="a time left", timeout_s=60
                )
                assert held.state == "running" and held.eta_s is not None and held.eta_s > 0
                listed = gputray("queue", home=tmp_path / "home")
                lines = listed.stdout.splitlines()
                at = next(i for i, line in enumerate(lines) if line.startswith("ID "))
                header, rows = lines[at], lines[at + 1 :]
                assert "PROGRESS" in header.split(), listed.stdout
                row = next(r for r in rows if r.split()[0].lstrip("#") == str(task_id))
                assert re.search(r"\b\d{1,2}% ~", row), listed.stdout
                feeder.release.set()
                done = wait_for(
                    lambda: (t := now()).state in ("succeeded", "failed") and t,
                    what="the upscale",
                    timeout_s=180,
                )
        finally:  # ffmpeg gets the rest of its input and ends, whatever failed: nothing outlives the test
            feeder.seen.set()
            feeder.release.set()
    feeder.join(30)
    log = Path(str(done.log_path)).read_text(errors="replace")
    assert feeder.error is None and done.state == "succeeded", f"{feeder.error}\n{log}"
    assert done.device == "pci:0000:64:00.0"  # the demo's Radeon 780M
    assert '"vulkan=vk:1"' in log.split("\n", 2)[1], log  # argv: the 780M's lavapipe is Vulkan device 1
    assert "Device 1 selected: llvmpipe (" in report.read_text(errors="replace")  # ffmpeg's own word
    out = folder / "clip_x2.mkv"
    assert out.stat().st_size > 0
