"""NVIDIA GPUs through NVML (the ``pynvml`` module of nvidia-ml-py), without waking a sleeping GPU.

An open NVML session keeps every GPU it has attached awake (the runtime-PM usage count stays above
zero: +5–7 W on an RTX 5060), and any NVML query resumes a suspended GPU. So on Linux the NVIDIA PCI
functions are found in sysfs first and their ``power/runtime_status`` is read (a plain file read wakes
nothing): NVML is only opened while at least one NVIDIA GPU is awake, and only the awake ones are
attached (``nvmlInit`` is lazy; ``nvmlDeviceGetHandleByPciBusId`` attaches one GPU). When every
attached GPU has sat idle for a while and runtime PM is enabled for it, NVML is closed for a grace
period so the GPU can actually go to sleep. On Windows (no sysfs) NVML is simply used.

Limitation: with several NVIDIA GPUs, an idle one stays awake while another one is busy, because the
NVML session cannot detach a single GPU.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from gputray.monitor import busy_why as why
from gputray.monitor.backends.nvidia_sampling import (
    AttachedGpu,
    GpuGone,
    NeverRaised,
    NvmlSampling,
    nvml_text,
)
from gputray.monitor.records import (
    BackendPoll,
    DeviceInfo,
    DeviceReading,
    DeviceState,
    ProcessUse,
    Sample,
)
from gputray.monitor.sysfs import normalize_bdf, pci_key, read_int, read_str

log = logging.getLogger(__name__)

NVIDIA_PCI_VENDOR_ID = 0x10DE
INIT_RETRY_S = 30.0
"""A failed nvmlInit (no driver, no library) is retried at most this often."""
LOST_RETRY_S = 10.0
"""After a GPU is lost, NVML stays closed this long before re-discovery; doubles while it stays lost."""
LOST_RETRY_MAX_S = 80.0
RELEASE_COOLDOWN_S = 300.0
"""When a GPU stayed awake although NVML let go of it, something else holds it: do not let go again soon."""


@dataclass(frozen=True)
class _PciGpu:
    bdf: str
    device_id: int | None
    asleep: bool
    runtime_pm_auto: bool
    driver: str | None = None

    @property
    def key(self) -> str:
        return pci_key(self.bdf)


def _running_on_linux_with_sysfs(sys_dir: Path) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    # WSL2 paravirtualises the GPU (/dev/dxg): it is not on the PCI bus that sysfs shows.
    return not (sys_dir == Path("/sys") and Path("/dev/dxg").exists())


class NvmlBackend(NvmlSampling):
    """Backend ``nvml``. ``pynvml_module`` replaces the real module (tests); it is imported lazily.

    ``use_sysfs`` (default: on Linux) gates NVML on the PCI devices and runtime PM state under
    ``sys_dir``. ``unavailable_reason`` says why NVML is not open (no driver, all asleep...): a
    ``busy_why`` code.
    """

    name = "nvml"

    def __init__(
        self,
        pynvml_module: ModuleType | None = None,
        sys_dir: Path = Path("/sys"),
        *,
        use_sysfs: bool | None = None,
        idle_release_s: float | None = 30.0,
        sleep_grace_s: float = 15.0,
    ) -> None:
        self._nvml: Any = pynvml_module
        self._sys_dir = sys_dir
        self._use_sysfs = _running_on_linux_with_sysfs(sys_dir) if use_sysfs is None else use_sysfs
        self._idle_release_s = idle_release_s
        self._sleep_grace_s = sleep_grace_s
        self._lock = threading.Lock()
        self.unavailable_reason: why.SampleWhy | None = None
        self.driver_version: str | None = None

        self._open = False
        self._next_init_s = float("-inf")
        self._attached: dict[str, AttachedGpu] = {}
        self._index_keys: dict[int, str] = {}
        self._known: dict[str, DeviceInfo] = {}
        self._lost: dict[str, why.FellOffBus | why.NeedsReset] = {}
        self._lost_retry_s = float("-inf")
        self._lost_backoff_s = LOST_RETRY_S
        self._released_until_s: float | None = None
        self._no_release_until_s = float("-inf")
        self._pci_cache: dict[str, tuple[Path, int | None] | None] = {}
        # What the driver turned out to support, per NVML session.
        self._memory_v2 = True
        self._event_reasons_fn = "nvmlDeviceGetCurrentClocksEventReasons"
        self._process_suffix = ""
        self._errors_ready = False
        self._nvml_error: type[BaseException] = NeverRaised
        self._lost_error: type[BaseException] = NeverRaised
        self._reset_error: type[BaseException] = NeverRaised
        self._mismatch_error: type[BaseException] = NeverRaised

    # ---------------------------------------------------------------- protocol

    def poll(self, now_s: float) -> BackendPoll:
        with self._lock:
            try:
                return self._poll(now_s)
            except Exception as exc:  # never raise into the monitor
                log.warning("NVML poll failed: %s", exc, exc_info=True)
                self._shutdown()
                self.unavailable_reason = why.ApiFailed(api="NVML", error=str(exc))
                self._next_init_s = now_s + INIT_RETRY_S
                return BackendPoll()

    def known_devices(self) -> list[DeviceInfo]:
        """The NVIDIA GPUs seen so far (also while asleep or lost): Windows' PDH maps adapters by them."""
        return list(self._known.values())

    def close(self) -> None:
        with self._lock:
            self._shutdown()

    @property
    def nvml_open(self) -> bool:
        """Whether an NVML session (which keeps attached GPUs awake) is open right now."""
        return self._open

    # ---------------------------------------------------------------- poll

    def _poll(self, now_s: float) -> BackendPoll:
        readings: list[DeviceReading] = []
        awake: list[_PciGpu] | None = None
        if self._use_sysfs:
            gpus = self._scan_pci()
            present = {g.key for g in gpus}
            for key in [k for k in self._lost if k not in present]:
                del self._lost[key]  # unplugged: it vanishes instead of staying lost
            if not gpus:
                self._shutdown()
                self.unavailable_reason = why.NoNvidiaGpu()
                return BackendPoll()
            awake = []
            for gpu in gpus:
                if gpu.driver == "nouveau":
                    continue  # a DRM card: the DRM backend lists it with what nouveau offers
                if gpu.asleep:
                    self._lost.pop(gpu.key, None)
                    readings.append(self._asleep_reading(gpu, now_s))
                elif gpu.driver is not None and gpu.driver != "nvidia":
                    # nouveau, vfio-pci (passed to a VM)...: NVML cannot see it, and need not be opened.
                    other = why.OtherDriver(driver=gpu.driver, api="NVML")
                    readings.append(self._unavailable_reading(gpu, now_s, other))
                else:
                    awake.append(gpu)
            if not awake:
                if self._open:
                    log.info("no NVIDIA GPU awake for NVML: closing NVML so they can sleep")
                self._shutdown()
                self._released_until_s = None
                self.unavailable_reason = (
                    why.AllAsleep() if all(g.asleep for g in gpus) else why.NoneOnDriver()
                )
                return BackendPoll(tuple(readings))

        if self._lost and now_s < self._lost_retry_s:
            readings.extend(self._waiting_after_loss(awake, now_s))
            return BackendPoll(tuple(readings))

        if self._released_until_s is not None:
            if now_s < self._released_until_s and awake is not None:
                readings.extend(self._released_reading(g, now_s) for g in awake)
                return BackendPoll(tuple(readings))
            # Still awake after the grace period: something else holds it; do not flap.
            self._released_until_s = None
            self._no_release_until_s = now_s + RELEASE_COOLDOWN_S

        if not self._ensure_open(now_s):
            if awake is not None:
                readings.extend(self._unavailable_reading(g, now_s) for g in awake)
            return BackendPoll(tuple(readings))

        retrying = bool(self._lost)
        attached = self._attach_by_bus(awake, now_s, readings) if awake is not None else self._attach_all()
        processes: list[ProcessUse] = []
        for key, dev in attached:
            if key in self._lost:
                continue
            try:
                sample = self._sample(dev, now_s)
                dev_procs = self._processes(dev)
            except GpuGone as gone:
                self._mark_lost(key, dev.info, gone.reason)
                continue
            processes.extend(dev_procs)
            readings.append(DeviceReading(dev.info, sample))
            self._track_idle(dev, sample, bool(dev_procs), now_s)

        for key, reason in self._lost.items():
            info = self._known.get(key)
            if info is not None:
                readings.append(DeviceReading(info, self._lost_sample(info, now_s, reason)))

        if self._lost:
            self._shutdown()
            if retrying:
                self._lost_backoff_s = min(self._lost_backoff_s * 2, LOST_RETRY_MAX_S)
            self._lost_retry_s = now_s + self._lost_backoff_s
            self.unavailable_reason = why.ClosedAfterLoss()
        else:
            self._lost_backoff_s = LOST_RETRY_S
            if awake is not None:
                self._maybe_release(awake, now_s)
        return BackendPoll(tuple(readings), tuple(processes))

    # ---------------------------------------------------------------- sysfs discovery

    def _scan_pci(self) -> list[_PciGpu]:
        """NVIDIA display controllers (class 0x03xxxx; not their HDMI audio functions) and their
        runtime PM state. What a BDF is gets read once; its power state and driver every poll."""
        devices = self._sys_dir / "bus" / "pci" / "devices"
        try:
            names = sorted(os.listdir(devices))
        except OSError:
            return []
        present = set(names)
        for gone in [n for n in self._pci_cache if n not in present]:
            del self._pci_cache[gone]
        gpus: list[_PciGpu] = []
        for entry in names:
            if entry not in self._pci_cache:
                self._pci_cache[entry] = self._identify(devices / entry)
            cached = self._pci_cache[entry]
            if cached is None:
                continue
            folder, device_id = cached
            # Same file gputray.monitor.sysfs.runtime_status reads; the path is kept to save joins.
            status = read_str(folder / "power" / "runtime_status")
            control = read_str(folder / "power" / "control")
            try:
                driver: str | None = os.path.basename(os.readlink(folder / "driver"))
            except OSError:
                driver = None  # unbound, or a captured tree without the link
            gpus.append(
                _PciGpu(
                    bdf=normalize_bdf(entry) or entry,
                    device_id=device_id,
                    asleep=status in {"suspended", "suspending"},
                    runtime_pm_auto=control == "auto",
                    driver=driver,
                )
            )
        return gpus

    @staticmethod
    def _identify(folder: Path) -> tuple[Path, int | None] | None:
        """(folder, PCI device id) for an NVIDIA display controller, None for anything else."""
        klass = read_int(folder / "class")
        if read_int(folder / "vendor") != NVIDIA_PCI_VENDOR_ID or klass is None or (klass >> 16) != 0x03:
            return None
        return folder, read_int(folder / "device")

    def _sysfs_info(self, gpu: _PciGpu) -> DeviceInfo:
        known = self._known.get(gpu.key)
        if known is not None:
            return known
        device = f"{gpu.device_id:04x}" if gpu.device_id is not None else "????"
        return DeviceInfo(
            key=gpu.key,
            name=f"NVIDIA GPU [10de:{device}]",
            vendor="nvidia",
            kind="discrete",
            backend=self.name,
            pci_bdf=gpu.bdf,
            pci_vendor_id=NVIDIA_PCI_VENDOR_ID,
            pci_device_id=gpu.device_id,
        )

    def _asleep_reading(self, gpu: _PciGpu, now_s: float) -> DeviceReading:
        return self._sysfs_reading(gpu, now_s, "asleep", why.NotWoken())

    def _unavailable_reading(
        self, gpu: _PciGpu, now_s: float, reason: why.SampleWhy | None = None
    ) -> DeviceReading:
        said = reason or self.unavailable_reason or why.NoApi(api="NVML")
        return self._sysfs_reading(gpu, now_s, "unavailable", said)

    def _released_reading(self, gpu: _PciGpu, now_s: float) -> DeviceReading:
        return self._sysfs_reading(gpu, now_s, "ok", why.LetGo(api="NVML"))

    def _sysfs_reading(
        self, gpu: _PciGpu, now_s: float, state: DeviceState, reason: why.SampleWhy
    ) -> DeviceReading:
        """What sysfs alone says (NVML not asked): who the GPU is, its memory size, and why no more."""
        info = self._sysfs_info(gpu)
        total = info.vram_total_bytes
        sample = Sample(key=info.key, timestamp_s=now_s, state=state, reason=reason, vram_total_bytes=total)
        return DeviceReading(info, sample)

    # ---------------------------------------------------------------- NVML session

    def _load_module(self) -> Any:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError as exc:
                missing = why.NotInstalled(package="nvidia-ml-py", module="pynvml", error=str(exc))
                self.unavailable_reason = missing
                return None
        if not self._errors_ready:
            self._nvml_error = self._exception_class("NVMLError")
            self._lost_error = self._exception_class("NVMLError_GpuIsLost")
            self._reset_error = self._exception_class("NVMLError_ResetRequired")
            self._mismatch_error = self._exception_class("NVMLLibraryMismatchError")
            self._errors_ready = True
        return self._nvml

    def _exception_class(self, name: str) -> type[BaseException]:
        cls = getattr(self._nvml, name, None)
        return cls if isinstance(cls, type) and issubclass(cls, BaseException) else NeverRaised

    def _ensure_open(self, now_s: float) -> bool:
        if self._open:
            return True
        if now_s < self._next_init_s:
            return False
        nvml = self._load_module()
        if nvml is None:
            self._next_init_s = now_s + INIT_RETRY_S
            return False
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self.unavailable_reason = self._init_failure(exc)
            self._next_init_s = now_s + INIT_RETRY_S
            log.debug("nvmlInit failed: %s", exc)
            return False
        self._open = True
        self._attached.clear()
        self._memory_v2 = True
        self._event_reasons_fn = "nvmlDeviceGetCurrentClocksEventReasons"
        self._process_suffix = ""
        self.unavailable_reason = None
        try:
            self.driver_version = nvml_text(nvml.nvmlSystemGetDriverVersion())
        except self._nvml_error:
            self.driver_version = None
        return True

    def _init_failure(self, exc: BaseException) -> why.SampleWhy:
        reasons: dict[str, why.SampleWhy] = {
            "NVMLError_LibraryNotFound": why.NvmlMissing(),
            "NVMLError_DriverNotLoaded": why.DriverNotLoaded(),
            "NVMLError_NoPermission": why.DriverDenied(),
        }
        for name, reason in reasons.items():
            cls = self._exception_class(name)
            if isinstance(exc, cls):
                return reason
        return why.ApiStartFailed(api="NVML", error=str(exc))

    def _shutdown(self) -> None:
        self._attached.clear()
        if not self._open:
            return
        self._open = False
        try:
            self._nvml.nvmlShutdown()
        except Exception as exc:  # a lost GPU may make shutdown complain; the session is gone anyway
            log.debug("nvmlShutdown: %s", exc)

    # ---------------------------------------------------------------- discovery through NVML

    def _attach_by_bus(
        self, awake: list[_PciGpu], now_s: float, readings: list[DeviceReading]
    ) -> list[tuple[str, AttachedGpu]]:
        wanted = {g.key for g in awake}
        for key in [k for k in self._attached if k not in wanted]:
            del self._attached[key]
        out: list[tuple[str, AttachedGpu]] = []
        for gpu in awake:
            dev = self._attached.get(gpu.key)
            if dev is None:
                try:
                    handle = self._call("nvmlDeviceGetHandleByPciBusId", gpu.bdf)
                    dev = AttachedGpu(self._describe(handle, gpu.bdf, None), handle)
                except GpuGone as gone:
                    self._mark_lost(gpu.key, self._sysfs_info(gpu), gone.reason)
                    continue
                except self._nvml_error as exc:
                    info = self._sysfs_info(gpu)
                    reason = why.ApiRefusedDevice(api="NVML", error=str(exc))
                    readings.append(
                        DeviceReading(info, Sample(info.key, now_s, state="unavailable", reason=reason))
                    )
                    continue
                self._attached[gpu.key] = dev
                self._lost.pop(gpu.key, None)
            out.append((gpu.key, dev))
        return out

    def _attach_all(self) -> list[tuple[str, AttachedGpu]]:
        """Windows / no sysfs: enumerate by index; re-enumerate when the count changes (eGPU plug)."""
        try:
            count = int(self._call("nvmlDeviceGetCount"))
        except GpuGone as gone:
            for key in self._index_keys.values():
                self._lost.setdefault(key, gone.reason)
            return []
        if count != len(self._attached) or any(
            self._index_keys.get(i) not in self._attached for i in range(count)
        ):
            previous = dict(self._index_keys)
            self._attached.clear()
            self._index_keys.clear()
            lost_now: set[str] = set()
            for index in range(count):
                try:
                    handle = self._call("nvmlDeviceGetHandleByIndex", index)
                    info = self._describe(handle, None, index)
                except GpuGone as gone:
                    lost_key = previous.get(index)
                    if lost_key is not None and lost_key in self._known:
                        self._mark_lost(lost_key, self._known[lost_key], gone.reason)
                        lost_now.add(lost_key)
                    continue
                except self._nvml_error as exc:
                    log.debug("NVML device %d unusable: %s", index, exc)
                    continue
                self._attached[info.key] = AttachedGpu(info, handle)
                self._index_keys[index] = info.key
            # Back when it enumerates again; gone (vanished) when it no longer does.
            for key in [k for k in self._lost if k not in lost_now]:
                del self._lost[key]
        return list(self._attached.items())

    # ---------------------------------------------------------------- lost GPUs and sleep

    def _mark_lost(self, key: str, info: DeviceInfo, reason: why.FellOffBus | why.NeedsReset) -> None:
        if key not in self._lost:
            log.warning("%s (%s): %s", info.name, key, reason)
        self._lost[key] = reason
        self._known.setdefault(key, info)
        self._attached.pop(key, None)

    def _lost_sample(self, info: DeviceInfo, now_s: float, reason: why.FellOffBus | why.NeedsReset) -> Sample:
        return Sample(
            key=info.key,
            timestamp_s=now_s,
            state="lost",
            reason=reason,
            vram_total_bytes=info.vram_total_bytes,
        )

    def _waiting_after_loss(self, awake: list[_PciGpu] | None, now_s: float) -> list[DeviceReading]:
        out: list[DeviceReading] = []
        for key, reason in self._lost.items():
            info = self._known.get(key)
            if info is not None:
                out.append(DeviceReading(info, self._lost_sample(info, now_s, reason)))
        wait_s = max(0.0, self._lost_retry_s - now_s)
        others = [g.key for g in awake] if awake is not None else list(self._index_keys.values())
        for key in others:
            if key in self._lost:
                continue
            info = self._known.get(key)
            if info is None and awake is not None:
                info = self._sysfs_info(next(g for g in awake if g.key == key))
            if info is None:
                continue
            paused = why.PausedAfterLoss(retry_in_s=round(wait_s))
            out.append(DeviceReading(info, Sample(key, now_s, state="unavailable", reason=paused)))
        return out

    def _track_idle(self, dev: AttachedGpu, sample: Sample, has_processes: bool, now_s: float) -> None:
        idle = not has_processes and (sample.util_percent is None or sample.util_percent <= 0.0)
        if not idle:
            dev.idle_since_s = None
        elif dev.idle_since_s is None:
            dev.idle_since_s = now_s

    def _maybe_release(self, awake: list[_PciGpu], now_s: float) -> None:
        """Close NVML when every attached GPU could sleep and has been idle long enough."""
        if self._idle_release_s is None or now_s < self._no_release_until_s or not self._attached:
            return
        if not all(g.runtime_pm_auto for g in awake):
            return
        if any(g.key not in self._attached for g in awake):
            return
        for dev in self._attached.values():
            if dev.idle_since_s is None or now_s - dev.idle_since_s < self._idle_release_s:
                return
        log.info("NVIDIA GPU idle: closing NVML for %.0f s so it can sleep", self._sleep_grace_s)
        self._shutdown()
        self._released_until_s = now_s + self._sleep_grace_s
        self.unavailable_reason = why.LetGo(api="NVML")
