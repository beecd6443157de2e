"""Out of memory → run where it fits (``on_oom = "elsewhere"``, the torch recipe's default).

A job that ended out of memory (``jobs.oom``) needed at least what its message says it reached
(``OutOfMemory.peak_bytes``), else the most the monitor saw its processes hold (``job_peaks``, put
there by ``JobRuns``), else at least all of the device it ran on. ``elsewhere`` picks, among the
devices the task may use (its preferences and policy, ``device_checks.allowed_devices``) other than
that one, the first whose free memory exceeds that need — VRAM, an iGPU's VRAM and shared GTT
(``placement.free_memory_bytes``), the CPU's RAM last — and points a copy of the task's spec at it, with
that need as its ``vram`` and ``on_oom = "fail"``: it is run there once, never twice. The reason says
it all: "out of memory on GeForce RTX 5060 Ti at 16.4 GiB; running on Radeon 780M (29.0 GiB shared
free)", or, where nothing fits, "…; no device it may use has that free (Radeon 780M 12.0 GiB free)".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from gputray.scheduler.jobs.oom import OutOfMemory
from gputray.scheduler.queue.device_checks import allowed_devices
from gputray.scheduler.queue.placement import DeviceState, free_memory_bytes, total_memory_bytes
from gputray.scheduler.reasons.codes import FreeOn, RanOutOfMemory
from gputray.scheduler.tasks.records import TaskSpec


@dataclass(frozen=True)
class OomOutcome:
    """Where to run it again (``spec`` pointed there) or None, and the reason."""

    reason: RanOutOfMemory
    spec: TaskSpec | None = None
    device: str | None = None


def elsewhere(
    spec: TaskSpec, failed: DeviceState | None, oom: OutOfMemory, devices: Sequence[DeviceState]
) -> OomOutcome:
    """Where the task fits after running out of memory on ``failed`` (see the module docstring)."""
    need = oom.peak_bytes or (total_memory_bytes(failed) if failed is not None else None) or 0
    said = RanOutOfMemory(
        device=None if failed is None or failed.is_cpu else failed.name,
        on_cpu=failed is not None and failed.is_cpu,
        at_bytes=need,
    )
    others = [d for d in allowed_devices(spec, devices) if failed is None or d.key != failed.key]
    others.sort(key=lambda d: d.is_cpu)  # GPUs first; the CPU's RAM last
    if not others:  # "no device it may use has that free" read as if every one had been tried
        return OomOutcome(msgspec.structs.replace(said, no_other=True))
    tried: list[FreeOn] = []
    for dev in others:
        free = free_memory_bytes(dev)
        if free is None:
            continue
        named = None if dev.is_cpu else dev.name
        if free > need:
            where: Literal["vram", "shared", "ram"] = (
                "ram" if dev.is_cpu else ("shared" if dev.info.kind == "integrated" else "vram")
            )
            moved = msgspec.structs.replace(
                spec, device_prefs=(dev.key,), vram_bytes=need or None, on_oom="fail"
            )
            to = FreeOn(device=named, free_bytes=free)
            return OomOutcome(msgspec.structs.replace(said, moved_to=to, where=where), moved, dev.key)
        tried.append(FreeOn(device=named, free_bytes=free))
    return OomOutcome(msgspec.structs.replace(said, tried=tuple(tried)))
