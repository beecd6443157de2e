"""Immutable records the monitor hands out. Units are in the names; unknown or unsupported is None."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gputray.monitor.busy_why import BackendNote, BusyWhy, DeviceNews, SampleWhy

Vendor = Literal["nvidia", "amd", "intel", "other"]
DeviceKind = Literal["integrated", "discrete", "cpu", "other"]
DeviceState = Literal["ok", "asleep", "lost", "unavailable"]
ProcessKind = Literal["graphics", "compute", "rocm", "mixed", "other"]


@dataclass(frozen=True)
class DeviceInfo:
    """Who a GPU is: stable for as long as the device stays on the bus.

    ``key`` is the canonical identity across APIs: ``pci:0000:64:00.0`` (lower case, domain included),
    or ``cpu`` / ``sim:...`` for the host and simulated devices without a bus.
    """

    key: str
    name: str
    vendor: Vendor
    kind: DeviceKind
    backend: str
    pci_bdf: str | None = None
    uuid: str | None = None
    vram_total_bytes: int | None = None
    shared_total_bytes: int | None = None
    nvml_index: int | None = None
    drm_card: str | None = None
    render_node: str | None = None
    gfx_target: str | None = None
    compute_units: int | None = None
    pci_vendor_id: int | None = None
    pci_device_id: int | None = None
    temp_limit_c: float | None = None
    simulated: bool = False
    windows_luid: str | None = None  # PDH/DXGI adapter LUID, "0x00000000_0x0000D1B5"
    # a simulated GPU a demo scenario backs with a real Vulkan device (``[[vulkan]]``): that device's name
    # as the loader reports it (its start: "lavapipe2"), so jobs get its real Vulkan index
    vulkan_name: str | None = None


@dataclass(frozen=True)
class Sample:
    """One reading of one device. ``reason`` says why state is not ``ok`` or a metric is missing: a code of
    ``busy_why`` (``SampleWhy``) that the renderer words, never text (mypy holds every backend to it; a
    library's own error text rides inside the code)."""

    key: str
    timestamp_s: float
    state: DeviceState = "ok"
    reason: SampleWhy | None = None
    util_percent: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    shared_used_bytes: int | None = None
    shared_total_bytes: int | None = None
    sclk_mhz: int | None = None
    mclk_mhz: int | None = None
    throttle: tuple[str, ...] | None = None
    # The PCIe link to the host now and at best (generation 1-6, lanes). Idle links downclock:
    # "PCIe 1.1 x16 of 4.0 x16" at idle is power saving, not a fault. An eGPU on OCuLink runs x4.
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    fan_percent: float | None = None
    fan_rpm: int | None = None
    power_limit_w: float | None = None
    encoder_percent: float | None = None
    decoder_percent: float | None = None
    # The device's own energy counter, in joules from an origin the driver chose (NVML: since the
    # driver loaded; hwmon ``energyN_input``; the simulated GPUs: since the demo began). Only the growth
    # between two samples means anything; it may wrap or restart (``scheduler.queue.job_energy``).
    energy_counter_j: float | None = None


#: Above its power limit × this, a reading is a glitch: cards draw over their sustained limit only in
#: short bursts (Intel PL2 ≈ 1.2 × PL1, NVIDIA's transients), never half as much again over a second.
POWER_LIMIT_SLACK = 1.5
#: Where a device names no limit: more than any one GPU draws (B200 1 kW, MI355X 1.4 kW).
NO_LIMIT_MAX_W = 2_000.0


def plausible_power_max_w(power_limit_w: float | None) -> float:
    """The most power a reading of a device with ``power_limit_w`` may credibly show (W): an energy
    counter that grew faster, or a power figure above it, is a glitch, not energy."""
    if power_limit_w is None or power_limit_w <= 0:
        return NO_LIMIT_MAX_W
    return power_limit_w * POWER_LIMIT_SLACK


@dataclass(frozen=True)
class DeviceReading:
    info: DeviceInfo
    sample: Sample


@dataclass(frozen=True)
class ProcessUse:
    """One process's use of one device. ``device`` is a DeviceInfo key."""

    pid: int
    name: str
    device: str
    kind: ProcessKind
    vram_bytes: int | None = None
    shared_bytes: int | None = None
    util_percent: float | None = None


@dataclass(frozen=True)
class HostSample:
    cpu_percent: float | None
    ram_used_bytes: int | None
    ram_total_bytes: int | None


@dataclass(frozen=True)
class BackendPoll:
    """What one backend saw in one poll."""

    readings: tuple[DeviceReading, ...] = ()
    processes: tuple[ProcessUse, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """Whether a device is free for our jobs, and why not in words a person can read."""

    key: str
    busy: bool
    reasons: tuple[BusyWhy, ...] = ()  # words: ``gputray.scheduler.reasons.render``
    hot: bool = False  # over its temperature limit (with hysteresis): the tray paints it red


EventKind = Literal["appeared", "vanished", "lost", "back", "hot", "cooled", "asleep", "woke"]


@dataclass(frozen=True)
class DeviceEvent:
    kind: EventKind
    key: str
    name: str
    message: DeviceNews  # words: ``gputray.scheduler.reasons.render``
    timestamp_s: float


@dataclass(frozen=True)
class Snapshot:
    """Everything the monitor knows at one instant, merged over all backends."""

    timestamp_s: float
    readings: tuple[DeviceReading, ...]
    host: HostSample
    processes: tuple[ProcessUse, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    events: tuple[DeviceEvent, ...] = ()
    simulated: bool = False
    notes: tuple[BackendNote, ...] = field(default=())

    def reading(self, key: str) -> DeviceReading | None:
        return next((r for r in self.readings if r.info.key == key), None)

    def verdict(self, key: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.key == key), None)
