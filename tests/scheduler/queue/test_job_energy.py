"""A job's GPU energy (``job_energy.EnergyMeter``) from real counter and power files, on a fake clock.

The counters and power readings come from the captured sysfs trees (tests/fixtures: the Arc A380's
``energy1_input``, the Radeon 780M's ``power1_average``), read by the real backends."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from gputray.monitor.backends.amd import AmdSysfsBackend
from gputray.monitor.backends.intel import IntelSysfsBackend
from gputray.monitor.backends.simulated import RADEON_780M
from gputray.monitor.records import DeviceReading, HostSample, ProcessUse, Sample, Snapshot
from gputray.monitor.units import format_energy_j
from gputray.scheduler.queue.job_energy import MAX_GAP_S, EnergyMeter, JobEnergy, energy_line

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
A380 = FIXTURES / "intel-sysfs" / "a380-i915"
PHOENIX = FIXTURES / "amdgpu-sysfs" / "phoenix"
A380_COUNTER_UJ = 25637161804  # the captured energy1_input
NO_HOST = HostSample(None, None, None)
JOB_PID = 4_000_001  # no such process: the job is known by this pid only


def write(path: Path, text: str) -> None:
    path.unlink()  # the copy keeps the fixture's read-only mode
    path.write_text(text)


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def snapshot(*readings: DeviceReading, processes: tuple[ProcessUse, ...] = ()) -> Snapshot:
    return Snapshot(readings[0].sample.timestamp_s, readings, NO_HOST, processes)


def test_the_a380_energy_counter_gives_the_job_its_share_of_each_interval(tmp_path: Path) -> None:
    """30 J/s on the real counter; the job runs from 100.5 to 102.5: half of the first second, the
    whole second one, and its last half second at the device's last rate."""
    card = tmp_path / "sys" / "class" / "drm" / "card1"
    shutil.copytree(A380 / "card1", card)
    counter = card / "device" / "hwmon" / "hwmon1" / "energy1_input"
    backend = IntelSysfsBackend(tmp_path / "sys", tmp_path / "no-proc", pci_ids=())
    clock = Clock(100.0)
    meter = EnergyMeter(clock)
    first = backend.poll(100.0).readings[0]
    assert first.sample.energy_counter_j == pytest.approx(A380_COUNTER_UJ / 1e6)
    meter.on_snapshot(snapshot(first))
    clock.t = 100.5
    meter.start(1, first.info.key, JOB_PID)
    for t in (101.0, 102.0):
        write(counter, str(A380_COUNTER_UJ + round((t - 100.0) * 30e6)))
        clock.t = t
        meter.on_snapshot(snapshot(backend.poll(t).readings[0]))
    assert meter.running_energy_j(1) == pytest.approx(15 + 30)
    clock.t = 102.5
    used = meter.finish(1)
    assert used.energy_j == pytest.approx(15 + 30 + 15) and used.shared is False
    assert used.duration_s == pytest.approx(2.0) and used.power_avg_w == pytest.approx(30.0)
    assert meter.finish(1) == JobEnergy(None, False)  # once


def test_a_glitching_a380_counter_gives_the_power_limit_bounded_energy_and_says_so(tmp_path: Path) -> None:
    """A 10 s job at 30 W on the captured Arc A380 (power1_max 55 W): the counter jumps 1 GJ forward at
    4 s (and goes on from there), cannot be read at 5 s and reads negative at 7 s. Before: 2,002 MJ at
    199 MW on average (the jump counted directly, then again through the power derived from it; the
    negative reading poisoned the next interval). Each interval is bounded by the power limit × time;
    a glitch interval is counted from power, and the record says so."""
    card = tmp_path / "sys" / "class" / "drm" / "card1"
    shutil.copytree(A380 / "card1", card)
    counter = card / "device" / "hwmon" / "hwmon1" / "energy1_input"
    backend = IntelSysfsBackend(tmp_path / "sys", tmp_path / "no-proc", pci_ids=())
    clock = Clock(100.0)
    meter = EnergyMeter(clock)
    jump_uj = 10**15  # 1 GJ
    for t in range(100, 111):
        grown = A380_COUNTER_UJ + (t - 100) * 30_000_000 + (jump_uj if t >= 104 else 0)
        write(counter, {105: "", 107: "-25637161804"}.get(t, str(grown)))
        clock.t = float(t)
        reading = backend.poll(float(t)).readings[0]
        assert reading.sample.power_limit_w == pytest.approx(55.0)
        if reading.sample.power_w is not None:
            assert reading.sample.power_w <= 55.0 * 1.5  # the tray never shows the jump as power either
        if t == 100:
            meter.start(1, reading.info.key, JOB_PID)
        meter.on_snapshot(snapshot(reading))
    used = meter.finish(1)
    assert used.energy_j is not None and 30 * 10 * 0.8 <= used.energy_j <= 30 * 10 * 1.2, used
    assert used.power_avg_w is not None and used.power_avg_w < 55.0
    assert used.estimated_s >= 1.0  # the glitch intervals, counted from power
    line = energy_line(used, "Arc A380")
    assert line is not None and "counted from power" in line and "energy counter" in line


def test_a_counter_that_went_back_falls_back_to_power_for_that_interval() -> None:
    """hwmon's µJ counter wraps (a 32-bit driver field), NVML's restarts with the driver: that interval
    is counted as its mean power, the next ones from the counter again."""
    key = RADEON_780M.key
    clock = Clock(10.0)
    meter = EnergyMeter(clock)
    meter.start(7, key, JOB_PID)

    def feed(t: float, counter_j: float | None, power_w: float | None) -> None:
        clock.t = t
        meter.on_snapshot(
            snapshot(DeviceReading(RADEON_780M, Sample(key, t, power_w=power_w, energy_counter_j=counter_j)))
        )

    feed(10.0, 4294.0, 20.0)
    feed(11.0, 4294.9, 22.0)  # +0.9 J by the counter (not 21 J by power: the counter wins)
    feed(12.0, 0.5, 26.0)  # wrapped: (22 + 26) / 2 W for 1 s
    feed(13.0, 27.5, 30.0)  # +27 J by the counter
    assert meter.running_energy_j(7) == pytest.approx(0.9 + 24.0 + 27.0)
    feed(13.0 + MAX_GAP_S + 1, None, 30.0)  # no counter and a gap too long to guess: not counted
    assert meter.running_energy_j(7) == pytest.approx(51.9)


def test_the_780m_power_file_integrates_over_the_run() -> None:
    """No energy counter on the 780M (amdgpu exposes none): its real ``power1_average`` times time."""
    backend = AmdSysfsBackend(PHOENIX, PHOENIX.parent / "no-proc", amdgpu_ids=None)
    clock = Clock(50.0)
    meter = EnergyMeter(clock)
    readings = [backend.poll(t).readings for t in (50.0, 51.0, 52.0, 53.0)]
    reading = readings[0][0]
    assert reading.sample.energy_counter_j is None and reading.sample.power_w == pytest.approx(3.103)
    meter.start(3, reading.info.key, JOB_PID)
    for rs in readings:
        clock.t = rs[0].sample.timestamp_s
        meter.on_snapshot(snapshot(*rs))
    used = meter.finish(3)
    assert used.energy_j == pytest.approx(3.103 * 3) and used.shared is False


def test_another_job_or_a_foreign_process_on_the_device_marks_the_energy_shared() -> None:
    key = RADEON_780M.key
    clock = Clock(0.0)
    meter = EnergyMeter(clock)

    def tick(t: float, *processes: ProcessUse) -> None:
        clock.t = t
        reading = DeviceReading(RADEON_780M, Sample(key, t, power_w=20.0))
        meter.on_snapshot(snapshot(reading, processes=processes))

    own_session = os.getsid(0)  # this test's process is in the job's session: the job's own child
    meter.start(1, key, own_session)
    tick(0.0, ProcessUse(os.getpid(), "python", key, "compute"))
    tick(1.0, ProcessUse(own_session, "job", key, "compute"))
    alone = meter.finish(1)
    assert alone.shared is False and alone.energy_j == pytest.approx(20.0)

    meter.start(2, key, own_session)
    tick(2.0, ProcessUse(JOB_PID + 1, "gnome-shell", key, "graphics", util_percent=0.0))  # idle desktop
    tick(2.5, ProcessUse(JOB_PID + 1, "Xorg", key, "graphics"))  # no load figure: a graphics one
    assert meter.so_far(2) is not None and meter.so_far(2).shared is False  # type: ignore[union-attr]
    tick(3.0, ProcessUse(JOB_PID + 2, "llama-server", key, "compute"))  # not ours, compute (NVML)
    assert meter.finish(2).shared is True
    meter.start(5, key, own_session)
    tick(3.5, ProcessUse(JOB_PID + 1, "firefox", key, "graphics", util_percent=22.0))  # busy
    assert meter.finish(5).shared is True

    meter.start(3, key, JOB_PID)
    meter.start(4, key, JOB_PID + 2)  # two of ours at once
    tick(4.0)
    both = meter.finish(3), meter.finish(4)
    assert all(u.shared for u in both)


def test_a_paused_job_gets_none_of_the_energy_drawn_while_it_is_frozen() -> None:
    """A job frozen while a game (an exclusive app) runs the GPU at 150 W: those joules and seconds are
    the game's, not the job's, and the game seen only while it is frozen does not make the job's figure
    shared; after the resume it
    counts again, a pause that begins or ends between two samples cutting the interval."""
    key = RADEON_780M.key
    clock = Clock(0.0)
    meter = EnergyMeter(clock)
    game = ProcessUse(JOB_PID + 9, "cs2", key, "graphics", util_percent=95.0)

    def tick(t: float, power_w: float, *processes: ProcessUse) -> None:
        clock.t = t
        meter.on_snapshot(
            snapshot(DeviceReading(RADEON_780M, Sample(key, t, power_w=power_w)), processes=processes)
        )

    meter.start(1, key, JOB_PID)
    tick(0.0, 20.0)
    tick(1.0, 20.0)  # 20 J
    clock.t = 1.5
    meter.pause(1, paused=True)  # half of the next interval is its own
    tick(2.0, 20.0)  # 10 J
    for t in (3.0, 4.0, 5.0, 6.0):
        tick(t, 150.0, game)  # the game's
    assert meter.running_energy_j(1) == pytest.approx(30.0)
    clock.t = 6.5
    meter.pause(1, paused=False)
    tick(7.0, 20.0)  # (150 + 20) / 2 W for the half second it ran
    tick(8.0, 20.0)  # 20 J
    used = meter.finish(1)
    assert used.energy_j == pytest.approx(30.0 + 42.5 + 20.0)
    assert used.shared is False and used.duration_s == pytest.approx(8.0 - 5.0)
    # a task that preempts a job starts beside it frozen: neither shares the other's energy
    meter.start(2, key, JOB_PID)
    meter.pause(2, paused=True)
    meter.start(3, key, JOB_PID + 3)
    tick(9.0, 20.0)
    tick(10.0, 20.0)
    assert meter.finish(3).shared is False and meter.finish(2).energy_j is None


def test_nothing_measured_is_none_and_the_log_footer_says_what_was() -> None:
    meter = EnergyMeter(Clock(0.0))
    meter.start(1, "cpu", JOB_PID)
    nothing = meter.finish(1)
    assert nothing.energy_j is None and energy_line(nothing, "CPU") is None
    line = energy_line(JobEnergy(1500.0, False, 60.0), "Radeon 780M")
    assert line == "GPU energy: 1500 J on Radeon 780M (25 W on average)"
    shared = energy_line(JobEnergy(12_345.0, True, 100.0), "GeForce RTX 5060 Ti")
    assert shared is not None and shared.startswith("GPU energy: 12.3 kJ on GeForce RTX 5060 Ti (123 W")
    assert "shared" in shared


@pytest.mark.parametrize(
    ("joules", "text"),
    [
        (None, "—"),
        (0.0, "0.0 J"),
        (4.25, "4.2 J"),
        (850.0, "850 J"),
        (9_999.0, "9999 J"),
        (10_000.0, "10.0 kJ"),
        (123_456.0, "123.5 kJ"),
        (1_234_567.0, "1235 kJ"),
        (14_400_000.0, "14.4 MJ"),
    ],
)
def test_energy_units(joules: float | None, text: str) -> None:
    """J below 10 kJ, kJ below 10 MJ, then MJ; at most four figures."""
    assert format_energy_j(joules) == text


def test_a_demo_job_through_the_owner_shows_its_energy_in_queue_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real owner in demo mode: a job on the simulated 780M (3.1 W idle, 27 W at full load; the job's
    90 % load puts it near 26 W) shows the energy used so far while it runs, and once it ended the
    energy that power makes over its run, in ``queue --json`` and at the end of its log."""
    from cli import gputray
    from waiting import wait_for

    from gputray.scheduler.owner import Owner
    from gputray.scheduler.paths import app_paths

    def tasks() -> list[dict[str, Any]]:
        listed = gputray("queue", "--all", "--json", home=tmp_path)
        assert listed.returncode == 0, listed.stderr
        return list(json.loads(listed.stdout)["tasks"])

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path))
    flag = tmp_path / "go-on"
    job = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.05)\ntime.sleep(3)"
    owner = Owner(app_paths(), demo=True)
    owner.start()
    try:
        ran = gputray(
            "run", "--device", "780m", "--name", "warm", "--", sys.executable, "-c", job, home=tmp_path
        )
        assert ran.returncode == 0, ran.stderr
        running = wait_for(
            lambda: [t for t in tasks() if t["state"] == "running" and (t["energy_j"] or 0) > 0],
            60,
            "the running job's energy so far",
        )
        flag.touch()
        waited = gputray("wait", str(running[0]["id"]), home=tmp_path)
        assert waited.returncode == 0, waited.stderr
        (task,) = tasks()
    finally:
        owner.stop()
    assert task["state"] == "succeeded" and task["device"] == RADEON_780M.key
    assert task["energy_shared"] is False  # the demo's firefox uses the 780M only from 150 s on
    energy, watts = task["energy_j"], task["power_avg_w"]
    assert energy > running[0]["energy_j"]
    ran_s = energy / watts  # its start-to-end time: at least the 3 s after the flag
    assert ran_s >= 3.0
    assert 3.1 * 3.0 < energy <= 27.0 * ran_s * 1.05
    assert 12.0 < watts <= 27.0 * 1.05  # mostly the job's load, not idle
    log = Path(task["log_path"]).read_text()
    assert "GPU energy: " in log.splitlines()[-1] and "on Radeon 780M" in log
    assert log.splitlines()[-1].endswith(f" ({watts:.0f} W on average)")  # the same figure as --json's


def test_a_glitching_counter_through_a_real_owner_is_bounded_and_the_record_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real owner reading the captured Arc A380 tree; while the job runs, its counter grows at 30 W,
    jumps 1 GJ forward, reads empty for a while, then negative for a while. Before: a gigajoule for a
    few seconds' job. Now the task's energy stays within the power limit and the record says how much
    of it was counted from power (``queue --json``'s ``energy_estimated_s``, the log's footer)."""
    import threading
    import time

    from cli import gputray
    from waiting import wait_for

    from gputray.scheduler.owner import Owner
    from gputray.scheduler.paths import app_paths

    sys_dir = tmp_path / "sys" / "class" / "drm"
    shutil.copytree(A380 / "card1", sys_dir / "card1")
    counter = sys_dir / "card1" / "device" / "hwmon" / "hwmon1" / "energy1_input"
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    stop, flag = threading.Event(), tmp_path / "go-on"
    began = time.monotonic()

    def counter_writer() -> None:  # the device's counter as the glitching firmware shows it
        while not stop.wait(0.1):
            ran_s = time.monotonic() - began
            grown = A380_COUNTER_UJ + round(ran_s * 30e6) + (10**15 if ran_s > 1.5 else 0)
            text = "" if 2.2 < ran_s < 3.4 else "-25637161804" if 4.0 < ran_s < 5.2 else str(grown)
            tmp = counter.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(counter)

    writer = threading.Thread(target=counter_writer, daemon=True)
    counter.unlink()
    counter.write_text(str(A380_COUNTER_UJ))
    owner = Owner(app_paths(), sysfs_root=tmp_path / "sys", proc_root=tmp_path / "no-proc")
    owner.start()
    try:
        job = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.05)"
        ran = gputray("run", "--device", "a380", "--name", "glitch", "--", sys.executable, "-c", job,
                      home=tmp_path / "home")  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        wait_for(lambda: owner.queue.list()[0].state == "running", 30, "the job to start")
        began = time.monotonic()
        writer.start()
        wait_for(lambda: time.monotonic() - began > 6.2, 30, "the glitches to pass")  # six samples
        flag.touch()
        wait_for(lambda: owner.queue.list(include_finished=True)[0].finished, 30, "the job to end")
        listed = gputray("queue", "--all", "--json", home=tmp_path / "home")
    finally:
        stop.set()
        owner.stop()
    (task,) = json.loads(listed.stdout)["tasks"]
    assert task["state"] == "succeeded" and task["device_name"] == "Intel Arc A380", task
    run_s = task["energy_j"] / task["power_avg_w"]
    assert 0 < task["energy_j"] <= 55.0 * 1.5 * run_s  # never more than the card can draw
    # at least one sampling interval (1 s by the monitor's clock; a loaded machine's reads 0.99998 s)
    assert task["energy_estimated_s"] >= 0.9
    footer = Path(task["log_path"]).read_text().splitlines()[-1]
    assert "counted from power (the energy counter glitched)" in footer, footer
