"""A simulated GeForce RTX 5060 Ti + Radeon 780M pair for the demo and for tests.

Totals and idle figures are those of the real parts (the 780M's numbers come from the captured
phoenix sysfs tree). Load follows a scenario of external programs plus the jobs the scheduler starts
on it (``job_started``/``job_ended``); temperature and power follow load with a thermal lag.
Every DeviceInfo says ``simulated=True`` so each view can label the demo as a demo.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gputray.monitor import busy_why as why
from gputray.monitor import proc_name
from gputray.monitor.records import BackendPoll, DeviceInfo, DeviceReading, ProcessUse, Sample
from gputray.monitor.scenario import Load, Scenario
from gputray.monitor.sim_holds import holds_dir, read_holds
from gputray.monitor.units import GIB, MIB

RTX_5060_TI = DeviceInfo(
    key="pci:0000:01:00.0",
    name="GeForce RTX 5060 Ti",
    vendor="nvidia",
    kind="discrete",
    backend="simulated",
    pci_bdf="0000:01:00.0",
    uuid="GPU-5060d3e1-7a2b-4c1e-9f00-0123456789ab",
    vram_total_bytes=16311 * MIB,
    nvml_index=0,
    pci_vendor_id=0x10DE,
    pci_device_id=0x2D04,
    temp_limit_c=90.0,
    simulated=True,
)

RADEON_780M = DeviceInfo(
    key="pci:0000:64:00.0",
    name="Radeon 780M",
    vendor="amd",
    kind="integrated",
    backend="simulated",
    pci_bdf="0000:64:00.0",
    vram_total_bytes=4294967296,
    shared_total_bytes=31433977856,
    drm_card="card1",
    render_node="renderD128",
    gfx_target="gfx1103",
    compute_units=12,
    pci_vendor_id=0x1002,
    pci_device_id=0x15BF,
    simulated=True,
)

ALIASES = {"5060ti": RTX_5060_TI.key, "780m": RADEON_780M.key}

# The built-in demo: an LLM server occupies the 5060 Ti for a while, then a browser video plays on the 780M.
DEMO_SCENARIO = Scenario(
    loads=(
        Load("5060ti", 20, 110, 96, vram_bytes=int(13.5 * GIB), process="llama-server", pid=90001),
        Load(
            "780m",
            150,
            175,
            45,
            shared_bytes=int(1.5 * GIB),
            process="firefox",
            pid=90002,
            decoder_percent=22,
        ),
    ),
    loop_s=240,
)


def process_name(pid: int, fallback: str) -> str:
    """The name the operating system gives a job's process (``comm`` on Linux: ``python3`` for a
    script), as every real backend reports it, so "Stop process…" finds the same name when it checks the
    pid again; the task's name only where the process cannot be read (issue 33: the demo listed a job's
    process by its task's name, and the check then said "the PID now belongs to python")."""
    try:
        import psutil

        return proc_name.process_name(psutil.Process(pid)) or fallback
    except Exception:  # gone already, or not ours to read: the task's name is all there is
        return fallback


@dataclass(frozen=True)
class _Profile:
    idle_util: float
    idle_temp_c: float
    full_temp_c: float
    idle_power_w: float
    full_power_w: float
    base_vram_bytes: int
    base_shared_bytes: int
    sclk_mhz: tuple[int, int]
    mclk_mhz: tuple[int, int]
    # (gen, lanes) idle and busy, and the GPU's best; None for the APU (no PCIe link of its own)
    pcie: tuple[tuple[int, int], tuple[int, int], tuple[int, int]] | None = None
    fan_rpm_full: int | None = None  # None: no fan of its own (the APU shares the laptop's)
    power_limit_w: float | None = None


_PROFILES = {
    # An eGPU on OCuLink: a PCIe 5.0 x8 card at 4.0 x4 under load, 1.0 x4 when the idle link downclocks.
    RTX_5060_TI.key: _Profile(
        1.0, 36.0, 71.0, 8.5, 180.0, 412 * MIB, 0, (210, 2850), (405, 14001),
        pcie=((1, 4), (4, 4), (5, 8)), fan_rpm_full=3000, power_limit_w=180.0,
    ),
    RADEON_780M.key: _Profile(4.0, 41.0, 86.0, 3.1, 27.0, 1272893440, 211398656, (800, 2700), (2800, 2800)),
}  # fmt: skip


@dataclass
class _Job:
    pid: int
    name: str
    key: str
    util_percent: float
    vram_bytes: int


class SimulatedBackend:
    name = "simulated"

    def __init__(self, scenario: Scenario | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.scenario = DEMO_SCENARIO if scenario is None else scenario
        backed = {self.resolve(b.device): b.name for b in self.scenario.vulkan}
        self._infos = tuple(
            dataclasses.replace(info, vulkan_name=backed[info.key]) if info.key in backed else info
            for info in (RTX_5060_TI, RADEON_780M)
        )  # the pair, each with the real Vulkan device a scenario backs it with
        self._holds_dir = holds_dir()  # real processes holding memory here (monitor/sim_holds.py)
        self._clock = clock
        self._t0 = clock()
        self._jobs: dict[int, _Job] = {}
        self._temp_c: dict[str, float] = {}
        self._energy_j: dict[str, float] = {}
        self._last_s: float | None = None
        self._lock = threading.Lock()

    @staticmethod
    def resolve(device: str) -> str:
        return ALIASES.get(device.lower(), device)

    def job_started(
        self, pid: int, name: str, device_key: str, util_percent: float = 90.0, vram_bytes: int | None = None
    ) -> None:
        key = self.resolve(device_key)
        if key not in _PROFILES:
            return  # CPU jobs and unknown keys do not load the simulated GPUs
        with self._lock:
            self._jobs[pid] = _Job(pid, process_name(pid, name), key, util_percent, vram_bytes or 1 * GIB)

    def job_ended(self, pid: int) -> None:
        with self._lock:
            self._jobs.pop(pid, None)

    def close(self) -> None:
        pass

    def poll(self, now_s: float) -> BackendPoll:
        elapsed = self._clock() - self._t0
        loads = self.scenario.active(elapsed) + self._held_loads()
        with self._lock:
            jobs = list(self._jobs.values())
        dt = 1.0 if self._last_s is None else max(0.0, now_s - self._last_s)
        self._last_s = now_s
        readings = []
        processes: list[ProcessUse] = []
        for info in self._infos:
            mine = [ld for ld in loads if self.resolve(ld.device) == info.key]
            if any(ld.state == "gone" for ld in mine):
                self._temp_c.pop(info.key, None)
                continue
            if any(ld.state == "lost" for ld in mine):
                readings.append(DeviceReading(info, Sample(info.key, now_s, "lost", why.FellOffBus())))
                continue
            my_jobs = [j for j in jobs if j.key == info.key]
            readings.append(DeviceReading(info, self._sample(info, mine, my_jobs, now_s, elapsed, dt)))
            processes.extend(self._processes(info, mine, my_jobs))
        return BackendPoll(tuple(readings), tuple(processes))

    def _held_loads(self) -> list[Load]:
        """The live processes that hold memory here (``sim_holds``), as loads without an end."""
        out = []
        for hold in read_holds(self._holds_dir):
            integrated = self.resolve(hold.device) == RADEON_780M.key
            out.append(
                Load(
                    hold.device,
                    0.0,
                    float("inf"),
                    hold.util_percent,
                    vram_bytes=0 if integrated else hold.vram_bytes,
                    shared_bytes=hold.vram_bytes if integrated else 0,
                    process=process_name(hold.pid, "resident"),
                    pid=hold.pid,
                )
            )
        return out

    def _sample(
        self, info: DeviceInfo, loads: list[Load], jobs: list[_Job], now_s: float, elapsed: float, dt: float
    ) -> Sample:
        p = _PROFILES[info.key]
        wobble = 1.5 * (1 + math.sin(elapsed / 7.0 + (0 if info.vendor == "nvidia" else 2)))
        util = min(
            100.0,
            p.idle_util + wobble + sum(ld.util_percent for ld in loads) + sum(j.util_percent for j in jobs),
        )
        load = util / 100.0
        target = p.idle_temp_c + (p.full_temp_c - p.idle_temp_c) * load
        prev = self._temp_c.get(info.key, p.idle_temp_c)
        temp = target + (prev - target) * math.exp(-dt / 12.0)  # first-order thermal lag, τ = 12 s
        self._temp_c[info.key] = temp
        power = p.idle_power_w + (p.full_power_w - p.idle_power_w) * load
        # An energy counter as NVML keeps one: this power over the time since the last poll.
        energy_j = self._energy_j[info.key] = self._energy_j.get(info.key, 0.0) + round(power, 2) * dt
        integrated = info.kind == "integrated"
        job_bytes = sum(j.vram_bytes for j in jobs)
        vram = p.base_vram_bytes + sum(ld.vram_bytes for ld in loads) + (0 if integrated else job_bytes)
        shared = p.base_shared_bytes + sum(ld.shared_bytes for ld in loads) + (job_bytes if integrated else 0)
        sclk = int(p.sclk_mhz[0] + (p.sclk_mhz[1] - p.sclk_mhz[0]) * min(1.0, load * 1.5))
        mclk = p.mclk_mhz[1] if load > 0.05 else p.mclk_mhz[0]
        throttle = ("thermal",) if info.temp_limit_c is None and temp >= 85 else ()
        link = None
        if p.pcie is not None:
            link = (p.pcie[1] if load > 0.05 else p.pcie[0]) + p.pcie[2]
        fan_percent = fan_rpm = None
        if p.fan_rpm_full is not None:  # zero-RPM below 50 °C, then up with temperature
            fan_percent = 0.0 if temp < 50 else round(min(100.0, 30 + (temp - 50) * 2.5), 1)
            fan_rpm = round(p.fan_rpm_full * fan_percent / 100)
        return Sample(
            key=info.key,
            timestamp_s=now_s,
            util_percent=round(util, 1),
            temp_c=round(temp, 1),
            power_w=round(power, 2),
            vram_used_bytes=min(vram, info.vram_total_bytes or vram),
            vram_total_bytes=info.vram_total_bytes,
            shared_used_bytes=shared if integrated else None,
            shared_total_bytes=info.shared_total_bytes,
            sclk_mhz=sclk,
            mclk_mhz=mclk,
            throttle=throttle,
            pcie_gen=link[0] if link else None,
            pcie_width=link[1] if link else None,
            pcie_max_gen=link[2] if link else None,
            pcie_max_width=link[3] if link else None,
            fan_percent=fan_percent,
            fan_rpm=fan_rpm,
            power_limit_w=p.power_limit_w,
            encoder_percent=min(100.0, sum((ld.encoder_percent for ld in loads), 0.0)),
            decoder_percent=min(100.0, sum((ld.decoder_percent for ld in loads), 0.0)),
            energy_counter_j=round(energy_j, 3),
        )

    @staticmethod
    def _processes(info: DeviceInfo, loads: list[Load], jobs: list[_Job]) -> list[ProcessUse]:
        integrated = info.kind == "integrated"
        out = [
            ProcessUse(
                ld.pid,
                ld.process,
                info.key,
                "compute",
                ld.vram_bytes,
                ld.shared_bytes or None,
                ld.util_percent,
            )
            for ld in loads
        ]
        out += [
            ProcessUse(
                j.pid,
                j.name,
                info.key,
                "compute",
                0 if integrated else j.vram_bytes,
                j.vram_bytes if integrated else None,
                j.util_percent,
            )
            for j in jobs
        ]
        return out
