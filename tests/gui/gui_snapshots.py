"""Snapshots for GUI tests: real ones from the simulated backend, and hand-built records for edge cases."""

from __future__ import annotations

from gputray.monitor.busy_why import BusyWhy, Words
from gputray.monitor.records import (
    DeviceInfo,
    DeviceReading,
    HostSample,
    ProcessUse,
    Sample,
    Snapshot,
    Verdict,
)
from gputray.monitor.verdict import VerdictTracker

GIB = 1024**3
KEY_5060 = "pci:0000:01:00.0"
KEY_780M = "pci:0000:64:00.0"


def info_5060() -> DeviceInfo:
    return DeviceInfo(
        KEY_5060, "GeForce RTX 5060 Ti", "nvidia", "discrete", "nvml", vram_total_bytes=16 * GIB
    )


def info_780m() -> DeviceInfo:
    return DeviceInfo(
        KEY_780M,
        "Radeon 780M",
        "amd",
        "integrated",
        "amdgpu-sysfs",
        vram_total_bytes=4 * GIB,
        shared_total_bytes=29 * GIB,
    )


def snapshot(
    *,
    t: float = 1000.0,
    util_5060: float | None = 42.0,
    temp_5060: float | None = 61.0,
    util_780m: float | None = 3.0,
    temp_780m: float | None = 45.0,
    state_5060: str = "ok",
    busy_5060: tuple[BusyWhy | str, ...] = (),  # text: as another machine worded it (``Words``)
) -> Snapshot:
    s1 = Sample(
        KEY_5060,
        t,
        state=state_5060,  # type: ignore[arg-type]
        util_percent=util_5060,
        temp_c=temp_5060,
        power_w=95.4,
        vram_used_bytes=int(14.2 * GIB),
        vram_total_bytes=16 * GIB,
    )
    s2 = Sample(
        KEY_780M,
        t,
        util_percent=util_780m,
        temp_c=temp_780m,
        power_w=6.0,
        vram_used_bytes=GIB,
        vram_total_bytes=4 * GIB,
        shared_used_bytes=3 * GIB,
        shared_total_bytes=29 * GIB,
    )
    readings = (DeviceReading(info_5060(), s1), DeviceReading(info_780m(), s2))
    # Heat as the real monitor judges it (default limits: 85 °C discrete, 90 °C integrated).
    hot = {r.info.key: VerdictTracker().update(r, [], own_active=False, now_s=t).hot for r in readings}
    return Snapshot(
        timestamp_s=t,
        readings=readings,
        host=HostSample(12.0, 8 * GIB, 32 * GIB),
        processes=(
            ProcessUse(
                4242, "llama-server", KEY_5060, "compute", vram_bytes=int(14.2 * GIB), util_percent=97
            ),
        ),
        verdicts=(
            Verdict(
                KEY_5060,
                bool(busy_5060),
                tuple(Words(text=b) if isinstance(b, str) else b for b in busy_5060),
                hot=hot[KEY_5060],
            ),
            Verdict(KEY_780M, False, hot=hot[KEY_780M]),
        ),
    )
