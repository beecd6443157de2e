from __future__ import annotations

from gputray.monitor.records import DeviceInfo, DeviceReading, ProcessUse, Sample
from gputray.monitor.verdict import BusyThresholds, VerdictTracker
from gputray.scheduler.reasons.render import render


def words(reasons: tuple[object, ...]) -> tuple[str, ...]:
    """The verdict's reasons as the command line words them (``scheduler.reasons``)."""
    return tuple(render(r) for r in reasons)  # type: ignore[arg-type]


GIB = 1024**3
DGPU = DeviceInfo("pci:0000:01:00.0", "GeForce RTX 5060 Ti", "nvidia", "discrete", "nvml", temp_limit_c=90.0)
IGPU = DeviceInfo("pci:0000:64:00.0", "Radeon 780M", "amd", "integrated", "amdgpu-sysfs")
LLAMA = ProcessUse(4242, "llama-server", DGPU.key, "compute", vram_bytes=int(14.2 * GIB))


def reading(
    info: DeviceInfo, t: float, util: float | None = 0.0, temp: float | None = 40.0, state: str = "ok"
):
    return DeviceReading(info, Sample(info.key, t, state, None, util_percent=util, temp_c=temp))  # type: ignore[arg-type]


def run(tracker: VerdictTracker, info: DeviceInfo, utils: list[float], start: float = 0.0, **kw):
    verdicts = []
    for i, u in enumerate(utils):
        verdicts.append(
            tracker.update(
                reading(info, start + i, u),
                kw.get("foreign", []),
                own_active=kw.get("own", False),
                now_s=start + i,
            )
        )
    return verdicts


def test_short_spike_does_not_mark_busy_but_sustained_load_does() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_window_s=10, free_window_s=5))
    spike = run(tracker, DGPU, [95, 95, 95, 5, 5])
    assert not any(v.busy for v in spike)
    sustained = run(tracker, DGPU, [97] * 12, start=10)  # no per-process data (e.g. Windows WDDM)
    assert not sustained[9].busy and sustained[10].busy
    assert words(sustained[-1].reasons) == ("above 30 % for 10 s; now 97 %",)


def test_a_busy_reason_names_the_rule_the_figure_now_and_when_it_lets_go() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_util_percent=30, busy_window_s=10, free_window_s=10))
    assert run(tracker, DGPU, [97] * 11)[-1].busy
    calm = run(tracker, DGPU, [2, 2, 2], start=11)
    assert words(calm[0].reasons) == ("above 30 % for 10 s; now 2 %, free again in 10 s if it stays low",)
    assert words(calm[2].reasons) == ("above 30 % for 10 s; now 2 %, free again in 8 s if it stays low",)
    assert words(run(tracker, DGPU, [50], start=14)[0].reasons) == ("above 30 % for 10 s; now 50 %",)


def test_foreign_process_holding_memory_while_active_is_busy_at_once() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_window_s=10))
    verdicts = run(tracker, DGPU, [97] * 12, foreign=[LLAMA])
    assert verdicts[0].busy
    assert words(verdicts[0].reasons) == (
        "llama-server holds 14.2 GiB and the GPU is at 97 %, busy above 30 %",
    )
    assert words(verdicts[-1].reasons) == ("llama-server uses 14.2 GiB; above 30 % for 10 s; now 97 %",)


def test_the_memory_in_a_busy_reason_adds_up_to_the_processes_it_names() -> None:
    """Two foreign processes: the figure is theirs together, and the line says there are two."""
    tracker = VerdictTracker(BusyThresholds(busy_window_s=10))
    viewer = ProcessUse(4343, "comfyui", DGPU.key, "compute", vram_bytes=int(0.8 * GIB))
    first = run(tracker, DGPU, [97], foreign=[LLAMA, viewer])[0]
    assert words(first.reasons) == (
        "llama-server and 1 other hold 15.0 GiB and the GPU is at 97 %, busy above 30 %",
    )


def test_busy_gpu_frees_only_after_the_free_window() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_window_s=2, free_window_s=5))
    assert run(tracker, DGPU, [90, 90, 90])[-1].busy
    after = run(tracker, DGPU, [0] * 7, start=3)
    assert [v.busy for v in after] == [True, True, True, True, True, False, False]


def test_our_own_job_is_not_external_use_and_the_next_job_is_not_blocked() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_window_s=2, own_grace_s=3))
    ours = run(tracker, DGPU, [99] * 20, own=True)
    assert not any(v.busy for v in ours)
    # Right after our job ended the GPU is free at once, even though it was at 99 % a moment ago.
    assert not run(tracker, DGPU, [99], start=20)[0].busy


def test_our_job_s_load_does_not_make_an_idle_resident_s_memory_look_in_use() -> None:
    """A resident holds 6 GiB and answers nothing while our job drives the GPU to 99 %: when the job
    ends the device is free at once, not "ollama holds 6.0 GiB and the GPU was above 30 % 4 s ago"
    for a minute (the GPU's load was ours). A foreign process whose own figure says it is active
    still counts while ours runs."""
    tracker = VerdictTracker(BusyThresholds(busy_window_s=2, own_grace_s=3, stale_context_s=60))
    resident = ProcessUse(9, "ollama", DGPU.key, "compute", vram_bytes=6 * GIB, util_percent=0.0)
    during = run(tracker, DGPU, [99] * 10, foreign=[resident], own=True)
    assert not any(v.busy for v in during)
    after = run(tracker, DGPU, [1] * 5, start=10, foreign=[resident])
    assert not any(v.busy for v in after), [words(v.reasons) for v in after]
    working = ProcessUse(9, "ollama", DGPU.key, "compute", vram_bytes=6 * GIB, util_percent=60.0)
    run(tracker, DGPU, [99] * 3, start=15, foreign=[working], own=True)
    later = run(tracker, DGPU, [1], start=18, foreign=[resident])[0]
    assert later.busy and words(later.reasons) == (
        "ollama holds 6.0 GiB and the GPU was above 30 % 1 s ago; free again in 59 s if it stays low",
    )


def test_stale_idle_context_stops_pinning_the_gpu() -> None:
    tracker = VerdictTracker(BusyThresholds(busy_window_s=2, stale_context_s=30, external_vram_bytes=GIB))
    holder = ProcessUse(7, "python", DGPU.key, "compute", vram_bytes=2 * GIB)
    run(tracker, DGPU, [80, 80, 80], foreign=[holder])  # was active
    idle = run(tracker, DGPU, [0] * 40, start=3, foreign=[holder])
    assert idle[10].busy
    assert words(idle[10].reasons) == (
        "python holds 2.0 GiB and the GPU was above 30 % 11 s ago; free again in 19 s if it stays low",
    )
    assert not idle[-1].busy
    small = ProcessUse(8, "Xorg", DGPU.key, "graphics", vram_bytes=600 * 1024**2)
    assert not run(VerdictTracker(), DGPU, [0], foreign=[small])[0].busy


def test_hot_gpu_is_busy_with_hysteresis_and_apu_gets_our_limit() -> None:
    tracker = VerdictTracker(BusyThresholds(igpu_temp_limit_c=90, temp_hysteresis_c=5))
    temps = [80, 91, 88, 86, 84]
    verdicts = [
        tracker.update(reading(IGPU, i, 0, t), [], own_active=False, now_s=i) for i, t in enumerate(temps)
    ]
    assert [v.busy for v in verdicts] == [False, True, True, True, False]
    assert words(verdicts[1].reasons) == ("Radeon 780M is hot: 91 °C (limit 90 °C)",)
    assert tracker.temp_limit_c(reading(DGPU, 0)) == 90.0  # the GPU's own limit wins


def test_lost_unavailable_and_asleep_states() -> None:
    tracker = VerdictTracker()
    lost = tracker.update(reading(DGPU, 0, None, None, "lost"), [], own_active=False, now_s=0)
    assert lost.busy and "lost" in words(lost.reasons)[0]
    asleep = tracker.update(reading(DGPU, 1, None, None, "asleep"), [], own_active=False, now_s=1)
    assert not asleep.busy and words(asleep.reasons) == ("GeForce RTX 5060 Ti is asleep",)
