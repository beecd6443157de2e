from __future__ import annotations

import threading

import pytest

from gputray.monitor import busy_why as why
from gputray.monitor.backends.simulated import RTX_5060_TI, SimulatedBackend
from gputray.monitor.monitor import Monitor, merge_readings
from gputray.monitor.records import BackendPoll, DeviceInfo, DeviceReading, ProcessUse, Sample
from gputray.monitor.scenario import Load, Scenario
from gputray.scheduler.reasons.render import render

KEY = "pci:0000:64:00.0"
SYSFS_INFO = DeviceInfo(KEY, "Radeon 780M", "amd", "integrated", "amdgpu-sysfs", pci_bdf="0000:64:00.0")
SMI_INFO = DeviceInfo(
    KEY, "AMD Radeon Graphics", "amd", "integrated", "amdsmi", uuid="abcd", gfx_target="gfx1103"
)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class ScriptedBackend:
    """A backend whose polls the test scripts: a library boundary stand-in for device discovery."""

    name = "scripted"

    def __init__(self, polls: list[BackendPoll | Exception]) -> None:
        self.polls = polls
        self.closed = False

    def poll(self, now_s: float) -> BackendPoll:
        item = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        self.closed = True


def reading(info: DeviceInfo, **metrics: object) -> DeviceReading:
    return DeviceReading(info, Sample(info.key, 0.0, **metrics))  # type: ignore[arg-type]


def test_a_gpu_seen_by_two_backends_shows_once_with_the_best_of_both() -> None:
    merged = merge_readings(
        [
            [reading(SYSFS_INFO, util_percent=12.0, shared_used_bytes=5)],
            [reading(SMI_INFO, util_percent=99.0, power_w=7.5)],
        ]
    )
    assert len(merged) == 1
    r = merged[0]
    assert r.info.name == "Radeon 780M" and r.info.uuid == "abcd" and r.info.gfx_target == "gfx1103"
    assert r.info.backend == "amdgpu-sysfs+amdsmi"
    assert (r.sample.util_percent, r.sample.power_w, r.sample.shared_used_bytes) == (12.0, 7.5, 5)


def test_a_lost_reading_is_not_patched_with_stale_metrics() -> None:
    lost = DeviceReading(SYSFS_INFO, Sample(KEY, 0.0, "lost", why.FellOffBus()))
    merged = merge_readings([[lost], [reading(SMI_INFO, util_percent=50.0)]])
    assert merged[0].sample.state == "lost" and merged[0].sample.util_percent is None


def test_devices_appearing_vanishing_and_getting_lost_raise_events() -> None:
    clock = Clock()
    present = BackendPoll((reading(SYSFS_INFO, util_percent=1.0),))
    lost = BackendPoll((DeviceReading(SYSFS_INFO, Sample(KEY, 0.0, "lost", why.FellOffBus())),))
    backend = ScriptedBackend([BackendPoll(), present, lost, present, BackendPoll()])
    monitor = Monitor([backend], clock=clock)
    kinds = []
    for _ in range(5):
        snap = monitor.sample_once()
        kinds.append([e.kind for e in snap.events])
        clock.t += 1
    assert kinds == [[], ["appeared"], ["lost"], ["back"], ["vanished"]]


def test_a_failing_backend_is_noted_and_the_others_still_show() -> None:
    clock = Clock()
    broken = ScriptedBackend([RuntimeError("driver exploded")])
    broken.name = "broken"
    good = ScriptedBackend([BackendPoll((reading(SYSFS_INFO, util_percent=3.0),))])
    snap = Monitor([broken, good], clock=clock).sample_once()
    assert [r.info.key for r in snap.readings] == [KEY]
    assert snap.notes == (why.BackendNote(backend="broken", why=why.BackendCrashed(error="driver exploded")),)
    assert [render(n) for n in snap.notes] == ["broken: failed: driver exploded"]


def test_history_is_bounded_and_queryable_per_metric() -> None:
    clock = Clock()
    monitor = Monitor([SimulatedBackend(Scenario(), clock)], clock=clock, interval_s=1.0, history_s=60)
    for _ in range(100):
        monitor.sample_once()
        clock.t += 1
    series = monitor.history(RTX_5060_TI.key, "util_percent")
    assert len(series) == 61 and series[0][0] == 39.0 and series[-1][0] == 99.0
    assert all(v is not None for _, v in series)
    assert [t for t, _ in monitor.history(RTX_5060_TI.key, "temp_c", since_s=95)] == [95, 96, 97, 98, 99]


def test_one_hour_of_history_at_1_hz_is_kept_by_default() -> None:
    assert Monitor([]).history_store.max_samples >= 3600


def test_own_jobs_do_not_make_the_gpu_busy_but_a_scenario_load_does() -> None:
    clock = Clock()
    llama = Load("5060ti", 30, 100, 95, vram_bytes=14 * 1024**3, process="llama-server")
    sim = SimulatedBackend(Scenario((llama,)), clock)
    monitor = Monitor([sim], clock=clock)
    sim.job_started(777, "train.py", RTX_5060_TI.key, util_percent=99)
    monitor.job_started(RTX_5060_TI.key, 777)
    for _ in range(20):
        snap = monitor.sample_once()
        clock.t += 1
    assert snap.verdict(RTX_5060_TI.key).busy is False  # type: ignore[union-attr]
    sim.job_ended(777)
    monitor.job_ended(RTX_5060_TI.key, 777)
    clock.t = 40  # inside the llama-server window
    for _ in range(3):
        snap = monitor.sample_once()
        clock.t += 1
    verdict = snap.verdict(RTX_5060_TI.key)
    assert verdict is not None and verdict.busy
    assert render(verdict.reasons[0]).startswith("llama-server")


def test_subscribers_get_every_snapshot_and_a_broken_one_does_not_stop_the_thread() -> None:
    clock = Clock()
    monitor = Monitor([SimulatedBackend(Scenario(), clock)], interval_s=0.01, clock=clock)
    got: list[float] = []
    enough = threading.Event()

    def good(snap) -> None:
        got.append(snap.timestamp_s)
        clock.t += 1
        if len(got) >= 5:
            enough.set()

    def bad(snap) -> None:
        raise RuntimeError("subscriber bug")

    monitor.subscribe(bad)
    unsubscribe = monitor.subscribe(good)
    monitor.start()
    try:
        assert enough.wait(5)
    finally:
        monitor.stop()
    unsubscribe()
    count = len(got)
    monitor.sample_once()
    assert len(got) == count


def test_processes_reported_by_two_backends_show_once_with_the_best_of_both() -> None:
    from_fdinfo = ProcessUse(1, "blender", KEY, "graphics", vram_bytes=10, util_percent=42.0)
    from_amdsmi = ProcessUse(1, "blender", KEY, "graphics", vram_bytes=99, shared_bytes=5)
    b1 = ScriptedBackend([BackendPoll((reading(SYSFS_INFO),), (from_fdinfo,))])
    b2 = ScriptedBackend([BackendPoll((), (from_amdsmi,))])
    (proc,) = Monitor([b1, b2]).sample_once().processes
    assert (proc.vram_bytes, proc.shared_bytes, proc.util_percent) == (10, 5, 42.0)


def test_a_poll_that_fails_outside_the_backends_is_reported_and_polling_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reading the merge cannot use (a backend breaking its contract) makes one tick raise: the
    monitor thread used to die with it, silently, and a lost GPU would never stop its job again."""
    good = BackendPoll(readings=(reading(SYSFS_INFO, util_percent=5.0),))
    broken = BackendPoll(readings=(object(),))  # type: ignore[arg-type]
    backend = ScriptedBackend([good, broken, good])
    monitor = Monitor([backend], interval_s=0.01)
    seen = threading.Event()
    after: list[float] = []

    def note(snap: object) -> None:
        if monitor.failures:
            after.append(1.0)
            if len(after) >= 3:
                seen.set()

    monitor.subscribe(note)
    monitor.start()
    try:
        assert seen.wait(30), "the monitor stopped polling after the failed tick"
    finally:
        monitor.stop()
    assert monitor.failures == 1 and monitor.last_failure is not None
    assert "AttributeError" in monitor.last_failure
    assert "monitor: a poll failed (1 so far); polling again" in caplog.text
