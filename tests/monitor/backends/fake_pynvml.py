"""A fake ``pynvml`` module object for the NVML backend's tests: the library boundary, nothing more.

It copies the real nvidia-ml-py's constants and exception classes, returns the real ctypes structures
(``nvmlPciInfo_t`` with a bytes ``busId``, ``c_nvmlMemory_v2_t``...) and ``nvmlFriendlyObject``
processes, and mirrors the real functions' names and parameters (a test checks them against the
installed module). Every call is recorded in ``calls`` so tests can assert what was, or was not, called.

Behaviour worth knowing:
- handles die with the NVML session: a call with a handle from before ``nvmlShutdown`` raises
  Uninitialized, like a stale handle would misbehave on real hardware;
- ``FakeGpu.lost`` makes every call on that GPU raise GpuIsLost; ``FakeGpu.lose_on`` flips ``lost`` the
  moment that function is called (a GPU falling off the bus in the middle of a poll);
- ``old_driver=True`` is a driver older than the bindings: memory v2 and clocks event reasons raise
  FunctionNotFound, and the unversioned process calls raise NVMLLibraryMismatchError (the bindings'
  ``throwOnVersionMismatch`` around the missing ``_v3`` symbol), while ``_v2`` works;
- ``bytes_strings=True`` is nvidia-ml-py before 11.515, whose string results were bytes.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pynvml as real

from gputray.monitor.sysfs import normalize_bdf

MIB = 1024 * 1024


@dataclass
class FakeGpu:
    bus_id: str = "00000000:01:00.0"
    name: str = "NVIDIA GeForce RTX 5060 Ti"
    uuid: str = "GPU-5060ti0-0000-0000-0000-000000000001"
    pci_device_id: int = 0x2D0410DE  # (device << 16) | vendor, as NVML packs it
    memory_total: int = 16311 * MIB
    memory_reserved: int = 297 * MIB
    memory_used: int = 1200 * MIB
    util_percent: int = 37
    memory_util_percent: int = 12
    temp_c: int = 54
    slowdown_c: int = 90
    shutdown_c: int = 95
    power_mw: int = 86_512
    energy_mj: int = 1_873_402_118  # nvmlDeviceGetTotalEnergyConsumption: mJ since the driver loaded
    sclk_mhz: int = 2407
    mclk_mhz: int = 13801
    clocks_event_reasons: int = 0
    # An eGPU on OCuLink: a PCIe 5.0 x8 card running at 4.0 x4 (the slot caps it at 4.0).
    pcie_gen: int = 4
    pcie_width: int = 4
    pcie_gpu_max_gen: int = 5
    pcie_host_max_gen: int = 4
    pcie_max_width: int = 8
    fan_percent: int = 31
    fan_rpm: int = 1180
    power_limit_mw: int = 180_000
    encoder_percent: int = 12
    decoder_percent: int = 34
    compute: list[tuple[int, int | None]] = field(default_factory=list)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)
    """function name → NVML_ERROR_* code that call raises on this GPU."""
    lost: bool = False
    lose_on: str | None = None


@dataclass(frozen=True)
class FakeHandle:
    gpu: FakeGpu
    index: int
    session: int


class FakeNvml(types.ModuleType):
    def __init__(
        self,
        gpus: Iterable[FakeGpu] = (),
        *,
        init_error: int | None = None,
        old_driver: bool = False,
        driver_version: str = "580.95.05",
        bytes_strings: bool = False,
    ) -> None:
        super().__init__("pynvml", "fake pynvml (tests)")
        for name in dir(real):
            if name.startswith(("NVML_", "NVMLError", "nvmlClocks", "nvmlMemory_v")) or name in {
                "NVMLLibraryMismatchError",
                "nvmlFriendlyObject",
            }:
                setattr(self, name, getattr(real, name))
        self.gpus = list(gpus)
        self.init_error = init_error
        self.old_driver = old_driver
        self.driver_version = driver_version
        self.bytes_strings = bytes_strings
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.refcount = 0
        self._session = 0

    # ------------------------------------------------------------ test helpers

    def called(self, name: str) -> int:
        return sum(1 for fn, _ in self.calls if fn == name)

    def device_calls(self) -> list[str]:
        return [fn for fn, _ in self.calls if fn.startswith("nvmlDevice")]

    def reset_calls(self) -> None:
        self.calls.clear()

    # ------------------------------------------------------------ internals

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def _need_init(self) -> None:
        if self.refcount <= 0:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)

    def _gpu(self, name: str, handle: FakeHandle, *args: Any) -> FakeGpu:
        self._record(name, handle, *args)
        self._need_init()
        if handle.session != self._session:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)
        gpu = handle.gpu
        return self._check(name, gpu)

    def _check(self, name: str, gpu: FakeGpu) -> FakeGpu:
        if gpu.lose_on == name:
            gpu.lost = True
        if gpu.lost or all(g is not gpu for g in self.gpus):
            raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)
        if name in gpu.fail:
            raise real.NVMLError(gpu.fail[name])
        return gpu

    def _string(self, text: str) -> str | bytes:
        """nvidia-ml-py before 11.515 returned NUL-padded C strings as bytes."""
        return text.encode() if self.bytes_strings else text

    # ------------------------------------------------------------ init

    def nvmlInit(self) -> None:
        self._record("nvmlInit")
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        if self.refcount == 0:
            self._session += 1
        self.refcount += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self._record("nvmlInitWithFlags", flags)
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        if self.refcount == 0:
            self._session += 1
        self.refcount += 1

    def nvmlShutdown(self) -> None:
        self._record("nvmlShutdown")
        self._need_init()
        self.refcount -= 1

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        self._record("nvmlSystemGetDriverVersion")
        self._need_init()
        return self._string(self.driver_version)

    # ------------------------------------------------------------ discovery

    def nvmlDeviceGetCount(self) -> int:
        self._record("nvmlDeviceGetCount")
        self._need_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._record("nvmlDeviceGetHandleByIndex", index)
        self._need_init()
        if not 0 <= index < len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        gpu = self._check("nvmlDeviceGetHandleByIndex", self.gpus[index])
        return FakeHandle(gpu, index, self._session)

    def nvmlDeviceGetHandleByPciBusId(self, pciBusId: str) -> FakeHandle:
        self._record("nvmlDeviceGetHandleByPciBusId", pciBusId)
        self._need_init()
        wanted = normalize_bdf(pciBusId)
        for index, gpu in enumerate(self.gpus):
            if normalize_bdf(gpu.bus_id) == wanted:
                return FakeHandle(self._check("nvmlDeviceGetHandleByPciBusId", gpu), index, self._session)
        raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetIndex(self, handle: FakeHandle) -> int:
        self._gpu("nvmlDeviceGetIndex", handle)
        return handle.index

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str | bytes:
        return self._string(self._gpu("nvmlDeviceGetName", handle).name)

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str | bytes:
        return self._string(self._gpu("nvmlDeviceGetUUID", handle).uuid)

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> real.nvmlPciInfo_t:
        gpu = self._gpu("nvmlDeviceGetPciInfo", handle)
        bdf = normalize_bdf(gpu.bus_id) or "0000:00:00.0"
        domain, bus, rest = bdf.split(":")
        info = real.nvmlPciInfo_t()
        info.busId = gpu.bus_id.upper().encode()
        info.busIdLegacy = f"{int(domain, 16):04X}:{bus.upper()}:{rest.upper()}".encode()
        info.domain = int(domain, 16)
        info.bus = int(bus, 16)
        info.device = int(rest.split(".")[0], 16)
        info.pciDeviceId = gpu.pci_device_id
        info.pciSubSystemId = 0x205A1458
        return info

    # ------------------------------------------------------------ metrics

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: int | None = None) -> Any:
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle, *(() if version is None else (version,)))
        if version:
            if self.old_driver:
                raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
            if version != real.nvmlMemory_v2:
                raise real.NVMLError(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            mem2 = real.c_nvmlMemory_v2_t()
            mem2.version = version
            mem2.total = gpu.memory_total
            mem2.reserved = gpu.memory_reserved
            mem2.used = gpu.memory_used
            mem2.free = gpu.memory_total - gpu.memory_reserved - gpu.memory_used
            return mem2
        mem1 = real.c_nvmlMemory_t()
        mem1.total = gpu.memory_total
        mem1.used = gpu.memory_used + gpu.memory_reserved  # v1 counts reserved memory as used
        mem1.free = gpu.memory_total - mem1.used
        return mem1

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> real.c_nvmlUtilization_t:
        gpu = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        util = real.c_nvmlUtilization_t()
        util.gpu = gpu.util_percent
        util.memory = gpu.memory_util_percent
        return util

    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        gpu = self._gpu("nvmlDeviceGetTemperature", handle, sensor)
        if sensor != real.NVML_TEMPERATURE_GPU:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temp_c

    def nvmlDeviceGetTemperatureThreshold(self, handle: FakeHandle, threshold: int) -> int:
        gpu = self._gpu("nvmlDeviceGetTemperatureThreshold", handle, threshold)
        if threshold == real.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
            return gpu.slowdown_c
        if threshold == real.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
            return gpu.shutdown_c
        raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetTotalEnergyConsumption", handle).energy_mj

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, type: int) -> int:
        gpu = self._gpu("nvmlDeviceGetClockInfo", handle, type)
        if type in (real.NVML_CLOCK_GRAPHICS, real.NVML_CLOCK_SM):
            return gpu.sclk_mhz
        if type == real.NVML_CLOCK_MEM:
            return gpu.mclk_mhz
        raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        gpu = self._gpu("nvmlDeviceGetCurrentClocksEventReasons", handle)
        if self.old_driver:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return gpu.clocks_event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksThrottleReasons", handle).clocks_event_reasons

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkGeneration", handle).pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkWidth", handle).pcie_width

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        gpu = self._gpu("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle)
        if self.old_driver:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return gpu.pcie_gpu_max_gen

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkGeneration", handle).pcie_host_max_gen

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkWidth", handle).pcie_max_width

    def nvmlDeviceGetFanSpeed(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetFanSpeed", handle).fan_percent

    def nvmlDeviceGetFanSpeedRPM(self, handle: FakeHandle) -> int:
        gpu = self._gpu("nvmlDeviceGetFanSpeedRPM", handle)
        if self.old_driver:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return gpu.fan_rpm

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        return self._gpu("nvmlDeviceGetEnforcedPowerLimit", handle).power_limit_mw

    def nvmlDeviceGetEncoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [self._gpu("nvmlDeviceGetEncoderUtilization", handle).encoder_percent, 167_000]

    def nvmlDeviceGetDecoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [self._gpu("nvmlDeviceGetDecoderUtilization", handle).decoder_percent, 167_000]

    # ------------------------------------------------------------ processes

    @staticmethod
    def _procs(entries: list[tuple[int, int | None]]) -> list[Any]:
        return [
            real.nvmlFriendlyObject(
                {
                    "pid": pid,
                    "usedGpuMemory": used,
                    "gpuInstanceId": 0xFFFFFFFF,
                    "computeInstanceId": 0xFFFFFFFF,
                }
            )
            for pid, used in entries
        ]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        gpu = self._gpu("nvmlDeviceGetComputeRunningProcesses", handle)
        if self.old_driver:
            raise real.NVMLLibraryMismatchError(
                "Unversioned function called and the pyNVML version does not match"
            )
        return self._procs(gpu.compute)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle) -> list[Any]:
        return self._procs(self._gpu("nvmlDeviceGetComputeRunningProcesses_v2", handle).compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        gpu = self._gpu("nvmlDeviceGetGraphicsRunningProcesses", handle)
        if self.old_driver:
            raise real.NVMLLibraryMismatchError(
                "Unversioned function called and the pyNVML version does not match"
            )
        return self._procs(gpu.graphics)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: FakeHandle) -> list[Any]:
        return self._procs(self._gpu("nvmlDeviceGetGraphicsRunningProcesses_v2", handle).graphics)
