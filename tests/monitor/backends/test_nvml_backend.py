"""The NVML backend against a fake ``pynvml`` module (the library boundary) and sysfs trees built here."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import psutil
import pynvml
import pytest
from fake_pynvml import MIB, FakeGpu, FakeNvml

from gputray.monitor import busy_why as why
from gputray.monitor.backends.nvidia import NvmlBackend
from gputray.monitor.backends.nvidia_sampling import LOST_REASON, friendly_name, throttle_names
from gputray.monitor.records import BackendPoll, DeviceReading
from gputray.scheduler.reasons.render import render

KEY0 = "pci:0000:01:00.0"
KEY1 = "pci:0000:02:00.0"
NO_SUCH_PID = 2**22 + 4321  # above Linux's pid_max limit: never a live process


def rtx5060ti() -> FakeGpu:
    return FakeGpu()


def rtx3060() -> FakeGpu:
    return FakeGpu(
        bus_id="00000000:02:00.0",
        name="NVIDIA GeForce RTX 3060",
        uuid="GPU-3060aaaa-0000-0000-0000-000000000002",
        pci_device_id=0x250410DE,
        memory_total=12288 * MIB,
        memory_used=300 * MIB,
        util_percent=0,
        temp_c=41,
        slowdown_c=93,
        power_mw=15_250,
        sclk_mhz=210,
        mclk_mhz=405,
        clocks_event_reasons=0x1,  # gpu_idle only
    )


def add_pci(
    sys_dir: Path, bdf: str, vendor: int, klass: int, status: str | None, control: str = "auto"
) -> None:
    dev = sys_dir / "bus" / "pci" / "devices" / bdf
    (dev / "power").mkdir(parents=True, exist_ok=True)
    (dev / "vendor").write_text(f"0x{vendor:04x}\n")
    (dev / "device").write_text("0x2d04\n")
    (dev / "class").write_text(f"0x{klass:06x}\n")
    if status is not None:
        (dev / "power" / "runtime_status").write_text(status + "\n")
    (dev / "power" / "control").write_text(control + "\n")


def set_status(sys_dir: Path, bdf: str, status: str) -> None:
    (sys_dir / "bus" / "pci" / "devices" / bdf / "power" / "runtime_status").write_text(status + "\n")


def make_sys(tmp_path: Path, nvidia: dict[str, str], control: str = "auto") -> Path:
    """A /sys with the given NVIDIA GPUs (bdf → runtime_status), their HDMI audio functions, a host bridge
    and an AMD iGPU, all of which the backend must ignore."""
    sys_dir = tmp_path / "sys"
    add_pci(sys_dir, "0000:00:00.0", 0x1022, 0x060000, "active")
    add_pci(sys_dir, "0000:64:00.0", 0x1002, 0x030000, "active")
    for bdf, status in nvidia.items():
        # Bus 2 shows as a 3D controller (0x0302), as laptop dGPUs and many eGPUs do; bus 1 as VGA.
        klass = 0x030200 if bdf.startswith("0000:02:") else 0x030000
        add_pci(sys_dir, bdf, 0x10DE, klass, status, control)
        add_pci(sys_dir, bdf[:-1] + "1", 0x10DE, 0x040300, status, control)
    return sys_dir


def by_key(poll: BackendPoll) -> dict[str, DeviceReading]:
    return {r.info.key: r for r in poll.readings}


@pytest.fixture
def two_gpus() -> FakeNvml:
    return FakeNvml([rtx5060ti(), rtx3060()])


@pytest.fixture
def sys_two(tmp_path: Path) -> Path:
    return make_sys(tmp_path, {"0000:01:00.0": "active", "0000:02:00.0": "active"})


# ---------------------------------------------------------------- a normal machine


def test_two_gpus_identity_and_sample(two_gpus: FakeNvml, sys_two: Path) -> None:
    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    poll = backend.poll(100.0)
    readings = by_key(poll)
    assert sorted(readings) == [KEY0, KEY1]

    info = readings[KEY0].info
    assert info.name == "GeForce RTX 5060 Ti"
    assert (info.vendor, info.kind, info.backend) == ("nvidia", "discrete", "nvml")
    assert info.pci_bdf == "0000:01:00.0"
    assert info.uuid == "GPU-5060ti0-0000-0000-0000-000000000001"
    assert info.nvml_index == 0
    assert info.vram_total_bytes == 16311 * MIB
    assert info.temp_limit_c == 90.0
    assert (info.pci_vendor_id, info.pci_device_id) == (0x10DE, 0x2D04)
    assert readings[KEY1].info.name == "GeForce RTX 3060"
    assert readings[KEY1].info.nvml_index == 1

    s = readings[KEY0].sample
    assert s.state == "ok" and s.reason is None
    assert s.timestamp_s == 100.0
    assert s.util_percent == 37.0
    assert s.temp_c == 54.0
    assert s.power_w == pytest.approx(86.512)
    assert s.energy_counter_j == pytest.approx(1_873_402.118)  # NVML's total energy, mJ → J
    assert s.vram_used_bytes == 1200 * MIB  # memory v2: driver-reserved memory is not "used"
    assert s.vram_total_bytes == 16311 * MIB
    assert (s.sclk_mhz, s.mclk_mhz) == (2407, 13801)
    assert s.throttle == ()
    assert s.shared_used_bytes is None and s.shared_total_bytes is None
    assert readings[KEY1].sample.throttle == ()  # gpu_idle alone is not throttling
    assert poll.processes == ()
    assert backend.driver_version == "580.95.05"
    assert backend.unavailable_reason is None


def test_linux_attaches_by_bus_id_and_keeps_the_session(two_gpus: FakeNvml, sys_two: Path) -> None:
    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    backend.poll(0.0)
    backend.poll(1.0)
    backend.poll(2.0)
    assert two_gpus.called("nvmlInit") == 1
    assert two_gpus.refcount == 1
    assert two_gpus.called("nvmlDeviceGetHandleByPciBusId") == 2
    assert two_gpus.called("nvmlDeviceGetHandleByIndex") == 0
    assert two_gpus.called("nvmlDeviceGetName") == 2  # identity read once, not every poll
    assert two_gpus.called("nvmlDeviceGetPowerUsage") == 6
    backend.close()
    assert two_gpus.refcount == 0
    assert not backend.nvml_open


def test_values_follow_the_gpu(two_gpus: FakeNvml, sys_two: Path) -> None:
    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    backend.poll(0.0)
    gpu = two_gpus.gpus[0]
    gpu.util_percent, gpu.power_mw, gpu.memory_used, gpu.temp_c = 99, 180_000, 15000 * MIB, 83
    gpu.clocks_event_reasons = 0x1 | 0x4 | 0x40
    s = by_key(backend.poll(1.0))[KEY0].sample
    assert (s.util_percent, s.power_w, s.vram_used_bytes, s.temp_c) == (99.0, 180.0, 15000 * MIB, 83.0)
    assert s.throttle == ("sw_power_cap", "hw_thermal")


def test_windows_enumerates_by_index(two_gpus: FakeNvml, tmp_path: Path) -> None:
    backend = NvmlBackend(two_gpus, tmp_path / "no-sysfs", use_sysfs=False)
    readings = by_key(backend.poll(0.0))
    assert sorted(readings) == [KEY0, KEY1]
    assert [readings[k].info.nvml_index for k in (KEY0, KEY1)] == [0, 1]
    assert two_gpus.called("nvmlDeviceGetHandleByPciBusId") == 0
    backend.poll(1.0)
    assert two_gpus.called("nvmlDeviceGetHandleByIndex") == 2  # not re-enumerated while the count holds


def test_windows_egpu_plugged_in_later(tmp_path: Path) -> None:
    fake = FakeNvml([rtx3060()])
    backend = NvmlBackend(fake, tmp_path, use_sysfs=False)
    assert sorted(by_key(backend.poll(0.0))) == [KEY1]
    fake.gpus.insert(0, rtx5060ti())
    readings = by_key(backend.poll(1.0))
    assert sorted(readings) == [KEY0, KEY1]
    assert readings[KEY0].info.nvml_index == 0 and readings[KEY1].info.nvml_index == 1


def test_name_prefix_and_throttle_names() -> None:
    assert friendly_name("NVIDIA GeForce RTX 5060 Ti") == "GeForce RTX 5060 Ti"
    assert friendly_name("NVIDIA RTX A2000 12GB") == "RTX A2000 12GB"
    assert friendly_name("Tesla T4") == "Tesla T4"
    assert throttle_names(0x1) == ()
    assert throttle_names(0x4 | 0x8 | 0x20 | 0x40 | 0x80) == (
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal",
        "hw_thermal",
        "hw_power_brake",
    )


def test_bytes_strings_from_old_bindings(sys_two: Path) -> None:
    gpu = rtx5060ti()
    backend = NvmlBackend(FakeNvml([gpu], bytes_strings=True), sys_two, use_sysfs=True)
    info = by_key(backend.poll(0.0))[KEY0].info
    assert (info.name, info.uuid) == ("GeForce RTX 5060 Ti", gpu.uuid)
    assert backend.driver_version == "580.95.05"


# ---------------------------------------------------------------- init failures


INIT_ERRORS = [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "library"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver is not loaded"),
    (pynvml.NVML_ERROR_NO_PERMISSION, "permission"),
    (pynvml.NVML_ERROR_UNKNOWN, "Unknown Error"),
]


@pytest.mark.parametrize(("code", "words"), INIT_ERRORS)
def test_init_failure_without_sysfs_is_quiet_and_retried_every_30_s(
    code: int, words: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeNvml([rtx5060ti()], init_error=code)
    backend = NvmlBackend(fake, tmp_path, use_sysfs=False)
    caplog.set_level("INFO")
    for t in (0.0, 1.0, 10.0, 29.0):
        assert backend.poll(t) == BackendPoll()
    assert fake.called("nvmlInit") == 1
    assert words in said(backend.unavailable_reason)
    assert not [r for r in caplog.records if r.levelname in {"WARNING", "ERROR"}]
    backend.poll(30.5)
    assert fake.called("nvmlInit") == 2
    fake.init_error = None  # the driver got loaded
    backend.poll(45.0)
    assert fake.called("nvmlInit") == 2
    assert sorted(by_key(backend.poll(61.0))) == [KEY0]
    assert backend.unavailable_reason is None


@pytest.mark.parametrize(("code", "words"), INIT_ERRORS[:2])
def test_init_failure_with_a_gpu_on_the_bus_says_why(code: int, words: str, sys_two: Path) -> None:
    backend = NvmlBackend(FakeNvml(init_error=code), sys_two, use_sysfs=True)
    readings = by_key(backend.poll(0.0))
    assert sorted(readings) == [KEY0, KEY1]
    sample = readings[KEY0].sample
    assert sample.state == "unavailable"
    assert words in said(sample.reason)
    assert readings[KEY0].info.name == "NVIDIA GPU [10de:2d04]"


def test_real_pynvml_on_this_machine_without_a_driver(tmp_path: Path) -> None:
    """The installed nvidia-ml-py, imported lazily, with no libnvidia-ml here: LibraryNotFound, quietly."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    backend = NvmlBackend(sys_dir=tmp_path, use_sysfs=False)
    assert backend.poll(0.0) == BackendPoll()
    assert "not found" in said(backend.unavailable_reason)
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "active"})
    backend = NvmlBackend(sys_dir=sys_dir, use_sysfs=True)
    reading = by_key(backend.poll(0.0))[KEY0]
    assert reading.sample.state == "unavailable"
    backend.close()


def test_pynvml_not_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    backend = NvmlBackend(sys_dir=tmp_path, use_sysfs=False)
    assert backend.poll(0.0) == BackendPoll()
    assert "nvidia-ml-py" in said(backend.unavailable_reason)


# ---------------------------------------------------------------- one metric failing


#: The sample's fields as a reason names them when NVML does not report them.
NAMED = {"util_percent": "load", "temp_c": "temperature", "power_w": "power", "vram_used_bytes": "memory"}
NAMED |= {"sclk_mhz": "core clock"}


def said(reason: why.SampleWhy | None) -> str:
    """A backend's reason as the command line words it ("" for none)."""
    return render(reason)


METRICS = [
    ("nvmlDeviceGetUtilizationRates", "util_percent"),
    ("nvmlDeviceGetTemperature", "temp_c"),
    ("nvmlDeviceGetPowerUsage", "power_w"),
    ("nvmlDeviceGetMemoryInfo", "vram_used_bytes"),
    ("nvmlDeviceGetClockInfo", "sclk_mhz"),
]


@pytest.mark.parametrize(("fn", "field"), METRICS)
@pytest.mark.parametrize(
    "code",
    [
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        pynvml.NVML_ERROR_NO_PERMISSION,
        pynvml.NVML_ERROR_UNKNOWN,
    ],
)
def test_one_metric_failing_costs_only_that_metric(fn: str, field: str, code: int, sys_two: Path) -> None:
    fake = FakeNvml([rtx5060ti(), rtx3060()])
    backend = NvmlBackend(fake, sys_two, use_sysfs=True)
    backend.poll(0.0)
    fake.gpus[0].fail[fn] = code
    readings = by_key(backend.poll(1.0))
    s = readings[KEY0].sample
    assert s.state == "ok"
    assert getattr(s, field) is None
    assert isinstance(s.reason, why.NotReported) and s.reason.by == "NVML"
    assert NAMED[field] in s.reason.metrics  # (one clock call reads both clocks)
    assert said(s.reason).startswith(f"not reported by NVML: {NAMED[field]}")
    others = {"util_percent": 37.0, "temp_c": 54.0, "power_w": 86.512, "vram_used_bytes": 1200 * MIB}
    for name, value in others.items():
        if name != field:
            assert getattr(s, name) == pytest.approx(value)
    assert readings[KEY1].sample.util_percent == 0.0 and readings[KEY1].sample.reason is None


def test_unsupported_identity_fields(sys_two: Path) -> None:
    gpu = rtx5060ti()
    gpu.fail.update(
        {
            "nvmlDeviceGetName": pynvml.NVML_ERROR_UNKNOWN,
            "nvmlDeviceGetTemperatureThreshold": pynvml.NVML_ERROR_NOT_SUPPORTED,
            "nvmlDeviceGetCurrentClocksEventReasons": pynvml.NVML_ERROR_NOT_SUPPORTED,
            "nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NO_PERMISSION,
            "nvmlDeviceGetTotalEnergyConsumption": pynvml.NVML_ERROR_NOT_SUPPORTED,  # before Volta
        }
    )
    reading = by_key(NvmlBackend(FakeNvml([gpu]), sys_two, use_sysfs=True).poll(0.0))[KEY0]
    assert reading.sample.energy_counter_j is None and reading.sample.power_w == pytest.approx(86.512)
    assert reading.info.name == "NVIDIA GPU [10de:2d04]"
    assert reading.info.temp_limit_c is None
    assert reading.info.uuid == gpu.uuid
    assert reading.sample.throttle is None
    assert reading.sample.util_percent == 37.0


def test_gpu_nvml_cannot_see_is_unavailable(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "active", "0000:05:00.0": "active"})
    readings = by_key(NvmlBackend(FakeNvml([rtx5060ti()]), sys_dir, use_sysfs=True).poll(0.0))
    assert readings[KEY0].sample.state == "ok"
    assert readings["pci:0000:05:00.0"].sample.state == "unavailable"
    assert "Not Found" in said(readings["pci:0000:05:00.0"].sample.reason)


# ---------------------------------------------------------------- a driver older than the bindings


def test_old_driver_falls_back_to_v1_memory_throttle_reasons_and_v2_processes(sys_two: Path) -> None:
    gpu = rtx5060ti()
    gpu.clocks_event_reasons = 0x8
    gpu.compute = [(os.getpid(), 700 * MIB)]
    fake = FakeNvml([gpu], old_driver=True)
    backend = NvmlBackend(fake, sys_two, use_sysfs=True)
    poll = backend.poll(0.0)
    s = by_key(poll)[KEY0].sample
    assert s.state == "ok" and s.reason is None
    assert s.vram_used_bytes == (1200 + 297) * MIB  # v1 counts the reserved memory as used
    assert s.vram_total_bytes == 16311 * MIB
    assert s.throttle == ("hw_slowdown",)
    assert [(p.pid, p.vram_bytes, p.kind) for p in poll.processes] == [(os.getpid(), 700 * MIB, "compute")]
    calls_v2 = fake.called("nvmlDeviceGetCurrentClocksEventReasons")
    backend.poll(1.0)
    # What the driver lacks is not asked again every second.
    assert fake.called("nvmlDeviceGetCurrentClocksEventReasons") == calls_v2
    v2_memory_calls = [args for fn, args in fake.calls if fn == "nvmlDeviceGetMemoryInfo" and len(args) == 2]
    assert len(v2_memory_calls) == 1
    assert fake.called("nvmlDeviceGetComputeRunningProcesses") == 1


# ---------------------------------------------------------------- lost GPUs


def test_gpu_lost_mid_poll_then_back(two_gpus: FakeNvml, sys_two: Path) -> None:
    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    backend.poll(0.0)
    lost_gpu = two_gpus.gpus[0]
    lost_gpu.lose_on = "nvmlDeviceGetPowerUsage"

    readings = by_key(backend.poll(1.0))
    assert readings[KEY0].sample.state == "lost"
    assert readings[KEY0].sample.reason == LOST_REASON
    assert readings[KEY0].info.name == "GeForce RTX 5060 Ti"  # still named as the user knows it
    assert readings[KEY1].sample.state == "ok"  # the other GPU was read in the same poll
    assert not backend.nvml_open and two_gpus.refcount == 0

    two_gpus.reset_calls()
    readings = by_key(backend.poll(5.0))
    assert two_gpus.calls == []  # backing off: NVML stays closed
    assert readings[KEY0].sample.state == "lost"
    assert readings[KEY1].sample.state == "unavailable"
    assert "retrying" in said(readings[KEY1].sample.reason)

    readings = by_key(backend.poll(11.5))  # re-discovery: still lost
    assert two_gpus.called("nvmlInit") == 1
    assert readings[KEY0].sample.state == "lost"
    assert readings[KEY1].sample.state == "ok"
    assert two_gpus.refcount == 0

    lost_gpu.lost, lost_gpu.lose_on = False, None
    two_gpus.reset_calls()
    backend.poll(25.0)  # the backoff doubled to 20 s after a failed re-discovery
    assert two_gpus.calls == []
    readings = by_key(backend.poll(32.0))
    assert readings[KEY0].sample.state == "ok"
    assert readings[KEY0].sample.power_w == pytest.approx(86.512)
    assert readings[KEY1].sample.state == "ok"
    assert backend.nvml_open and two_gpus.refcount == 1


def test_lost_gpu_unplugged_vanishes(two_gpus: FakeNvml, sys_two: Path) -> None:
    import shutil

    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    backend.poll(0.0)
    two_gpus.gpus[0].fail["nvmlDeviceGetUtilizationRates"] = pynvml.NVML_ERROR_GPU_IS_LOST
    assert by_key(backend.poll(1.0))[KEY0].sample.state == "lost"
    for fn in ("0", "1"):
        shutil.rmtree(sys_two / "bus" / "pci" / "devices" / f"0000:01:00.{fn}")
    del two_gpus.gpus[0]
    readings = by_key(backend.poll(2.0))
    assert sorted(readings) == [KEY1]
    assert readings[KEY1].sample.state == "ok"


def test_lost_during_discovery_and_on_windows(tmp_path: Path) -> None:
    gpu = rtx5060ti()
    fake = FakeNvml([gpu, rtx3060()])
    backend = NvmlBackend(fake, tmp_path, use_sysfs=False)
    backend.poll(0.0)
    gpu.lose_on = "nvmlDeviceGetComputeRunningProcesses"
    readings = by_key(backend.poll(1.0))
    assert readings[KEY0].sample.state == "lost"
    assert readings[KEY1].sample.state == "ok"
    assert fake.refcount == 0
    readings = by_key(backend.poll(11.0))  # handle by index raises GpuIsLost again
    assert readings[KEY0].sample.state == "lost"
    gpu.lost, gpu.lose_on = False, None
    readings = by_key(backend.poll(40.0))
    assert readings[KEY0].sample.state == "ok" and readings[KEY1].sample.state == "ok"


def test_reset_required_is_reported_like_lost(sys_two: Path) -> None:
    gpu = rtx5060ti()
    gpu.fail["nvmlDeviceGetTemperature"] = pynvml.NVML_ERROR_RESET_REQUIRED
    reading = by_key(NvmlBackend(FakeNvml([gpu]), sys_two, use_sysfs=True).poll(0.0))[KEY0]
    assert reading.sample.state == "lost"
    assert "reset" in said(reading.sample.reason)


# ---------------------------------------------------------------- sleeping GPUs


def test_sleeping_gpu_is_not_touched(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "suspended"})
    fake = FakeNvml([rtx5060ti()])
    backend = NvmlBackend(fake, sys_dir, use_sysfs=True)
    for t in (0.0, 1.0, 40.0):
        readings = by_key(backend.poll(t))
        assert readings[KEY0].sample.state == "asleep"
        assert readings[KEY0].sample.reason == why.NotWoken()
    assert fake.calls == []
    assert "asleep" in said(backend.unavailable_reason)


def test_gpu_falling_asleep_closes_nvml_and_waking_reopens(sys_two: Path) -> None:
    fake = FakeNvml([rtx5060ti(), rtx3060()])
    backend = NvmlBackend(fake, sys_two, use_sysfs=True)
    backend.poll(0.0)
    set_status(sys_two, "0000:01:00.0", "suspended")
    set_status(sys_two, "0000:02:00.0", "suspending")
    readings = by_key(backend.poll(1.0))
    assert {r.sample.state for r in readings.values()} == {"asleep"}
    # Known from before it slept: the user still sees its name and size.
    assert readings[KEY0].info.name == "GeForce RTX 5060 Ti"
    assert readings[KEY0].sample.vram_total_bytes == 16311 * MIB
    assert fake.refcount == 0 and not backend.nvml_open
    fake.reset_calls()
    backend.poll(2.0)
    assert fake.calls == []
    set_status(sys_two, "0000:01:00.0", "active")
    readings = by_key(backend.poll(3.0))
    assert readings[KEY0].sample.state == "ok"
    assert readings[KEY1].sample.state == "asleep"
    assert fake.refcount == 1
    touched = {args[0] for fn, args in fake.calls if fn == "nvmlDeviceGetHandleByPciBusId"}
    assert touched == {"0000:01:00.0"}
    assert all(
        args[0].gpu is fake.gpus[0]
        for fn, args in fake.calls
        if fn.startswith("nvmlDeviceGet") and args and hasattr(args[0], "gpu")
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sysfs gating is the Linux default")
def test_linux_gates_on_sysfs_by_default(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "suspended"})
    fake = FakeNvml([rtx5060ti()])
    readings = by_key(NvmlBackend(fake, sys_dir).poll(0.0))
    assert readings[KEY0].sample.state == "asleep"
    assert fake.calls == []


def test_no_nvidia_on_the_bus_means_no_nvml(tmp_path: Path) -> None:
    fake = FakeNvml([rtx5060ti()])
    sys_dir = make_sys(tmp_path, {})
    assert NvmlBackend(fake, sys_dir, use_sysfs=True).poll(0.0) == BackendPoll()
    assert (
        NvmlBackend(fake, tmp_path / "captured-tree-without-pci", use_sysfs=True).poll(0.0) == BackendPoll()
    )
    assert fake.calls == []


@pytest.mark.parametrize("driver", ["vfio-pci", "pci-stub"])
def test_gpu_on_another_driver_is_not_given_to_nvml(driver: str, tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "active"})
    (sys_dir / "bus" / "pci" / "drivers" / driver).mkdir(parents=True)
    (sys_dir / "bus" / "pci" / "devices" / "0000:01:00.0" / "driver").symlink_to(f"../../drivers/{driver}")
    fake = FakeNvml([rtx5060ti()])
    reading = by_key(NvmlBackend(fake, sys_dir, use_sysfs=True).poll(0.0))[KEY0]
    assert reading.sample.state == "unavailable"
    assert driver in said(reading.sample.reason)
    assert fake.calls == []


def test_gpu_on_nouveau_is_left_to_the_drm_backend(tmp_path: Path) -> None:
    """nouveau makes it a DRM card: the DRM backend lists it with its hwmon; NVML neither lists nor opens."""
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "active"})
    (sys_dir / "bus" / "pci" / "drivers" / "nouveau").mkdir(parents=True)
    (sys_dir / "bus" / "pci" / "devices" / "0000:01:00.0" / "driver").symlink_to("../../drivers/nouveau")
    fake = FakeNvml([rtx5060ti()])
    backend = NvmlBackend(fake, sys_dir, use_sysfs=True)
    assert backend.poll(0.0).readings == ()
    assert fake.calls == []
    assert said(backend.unavailable_reason) == "no awake NVIDIA GPU uses the NVIDIA driver"


def test_gpu_on_the_nvidia_driver_is_read(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:01:00.0": "active"})
    (sys_dir / "bus" / "pci" / "drivers" / "nvidia").mkdir(parents=True)
    (sys_dir / "bus" / "pci" / "devices" / "0000:01:00.0" / "driver").symlink_to("../../drivers/nvidia")
    assert (
        by_key(NvmlBackend(FakeNvml([rtx5060ti()]), sys_dir, use_sysfs=True).poll(0.0))[KEY0].sample.state
        == "ok"
    )


def test_idle_gpu_is_let_go_so_it_can_sleep(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:02:00.0": "active"})
    fake = FakeNvml([rtx3060()])  # idle: 0 %, no processes
    backend = NvmlBackend(fake, sys_dir, use_sysfs=True, idle_release_s=30.0, sleep_grace_s=15.0)
    for t in range(31):
        assert by_key(backend.poll(float(t)))[KEY1].sample.state == "ok"
    assert not backend.nvml_open and fake.refcount == 0
    fake.reset_calls()
    reading = by_key(backend.poll(35.0))[KEY1]
    assert fake.calls == []
    assert reading.sample.state == "ok" and "sleep" in said(reading.sample.reason)
    assert reading.sample.util_percent is None
    set_status(sys_dir, "0000:02:00.0", "suspended")  # it went to sleep, as it should
    assert by_key(backend.poll(40.0))[KEY1].sample.state == "asleep"
    assert fake.calls == []


def test_idle_gpu_that_stays_awake_is_watched_again(tmp_path: Path) -> None:
    sys_dir = make_sys(tmp_path, {"0000:02:00.0": "active"})
    fake = FakeNvml([rtx3060()])
    backend = NvmlBackend(fake, sys_dir, use_sysfs=True, idle_release_s=30.0, sleep_grace_s=15.0)
    for t in range(31):
        backend.poll(float(t))
    assert not backend.nvml_open
    assert by_key(backend.poll(46.0))[KEY1].sample.util_percent == 0.0  # grace over: read again
    for t in range(47, 200):
        backend.poll(float(t))
    assert backend.nvml_open  # something else keeps it awake: no flapping every 30 s
    assert fake.called("nvmlInit") == 2


@pytest.mark.parametrize("busy", ["runtime_pm_off", "util", "process"])
def test_gpu_is_held_when_it_cannot_or_should_not_sleep(busy: str, tmp_path: Path) -> None:
    sys_dir = make_sys(
        tmp_path, {"0000:02:00.0": "active"}, control="on" if busy == "runtime_pm_off" else "auto"
    )
    gpu = rtx3060()
    if busy == "util":
        gpu.util_percent = 5
    if busy == "process":
        gpu.graphics = [(os.getpid(), 30 * MIB)]
    fake = FakeNvml([gpu])
    backend = NvmlBackend(fake, sys_dir, use_sysfs=True, idle_release_s=30.0)
    for t in range(100):
        backend.poll(float(t))
    assert backend.nvml_open and fake.called("nvmlInit") == 1


# ---------------------------------------------------------------- processes


def test_processes_merged_per_pid(sys_two: Path) -> None:
    gpu = rtx5060ti()
    me = os.getpid()
    gpu.compute = [(me, 500 * MIB), (NO_SUCH_PID, 2048 * MIB)]
    gpu.graphics = [(me, 20 * MIB), (1, None)]
    other = rtx3060()
    other.graphics = [(me, None)]  # Windows WDDM: per-process memory is not available
    poll = NvmlBackend(FakeNvml([gpu, other]), sys_two, use_sysfs=True).poll(0.0)
    procs = {(p.device, p.pid): p for p in poll.processes}
    mine = procs[(KEY0, me)]
    assert mine.kind == "mixed"
    assert mine.vram_bytes == 500 * MIB
    assert mine.name == psutil.Process(me).name()
    gone = procs[(KEY0, NO_SUCH_PID)]
    assert (gone.name, gone.kind, gone.vram_bytes) == (f"pid {NO_SUCH_PID}", "compute", 2048 * MIB)
    assert procs[(KEY0, 1)].kind == "graphics" and procs[(KEY0, 1)].vram_bytes is None
    wddm = procs[(KEY1, me)]
    assert (wddm.kind, wddm.vram_bytes) == ("graphics", None)
    assert all(p.shared_bytes is None and p.util_percent is None for p in poll.processes)


# ---------------------------------------------------------------- never raises


def test_unexpected_exception_never_escapes(sys_two: Path) -> None:
    fake = FakeNvml([rtx5060ti()])

    def broken(handle: object) -> int:
        raise RuntimeError("driver returned nonsense")

    fake.nvmlDeviceGetPowerUsage = broken  # type: ignore[method-assign]
    backend = NvmlBackend(fake, sys_two, use_sysfs=True)
    assert backend.poll(0.0) == BackendPoll()
    assert "nonsense" in said(backend.unavailable_reason)
    assert fake.refcount == 0
    backend.close()


def test_close_is_idempotent(two_gpus: FakeNvml, sys_two: Path) -> None:
    backend = NvmlBackend(two_gpus, sys_two, use_sysfs=True)
    backend.close()
    backend.poll(0.0)
    backend.close()
    backend.close()
    assert two_gpus.refcount == 0
    assert two_gpus.called("nvmlShutdown") == 1


# ---------------------------------------------------------------- the fake stays honest


def test_fake_matches_the_real_pynvml() -> None:
    fake = FakeNvml()
    for name, member in inspect.getmembers(type(fake), inspect.isfunction):
        if not name.startswith("nvml"):
            continue
        real_fn = getattr(pynvml, name, None)
        assert real_fn is not None, f"real pynvml has no {name}"
        ours = list(inspect.signature(member).parameters)[1:]
        theirs = list(inspect.signature(inspect.unwrap(real_fn)).parameters)
        assert ours == theirs, name
    for name in ("NVMLError_LibraryNotFound", "NVMLError_GpuIsLost", "NVML_TEMPERATURE_GPU", "nvmlMemory_v2"):
        assert getattr(fake, name) is getattr(pynvml, name)
    assert isinstance(pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST), fake.NVMLError_GpuIsLost)


def test_known_devices_feed_windows_adapter_matching(two_gpus: FakeNvml, tmp_path: Path) -> None:
    """PDH falls back to matching adapters by name and size against these: they must be NVML's GPUs."""
    backend = NvmlBackend(two_gpus, tmp_path / "no-sysfs", use_sysfs=False)
    assert backend.known_devices() == []
    backend.poll(0.0)
    names = sorted(info.name for info in backend.known_devices())
    assert names == ["GeForce RTX 3060", "GeForce RTX 5060 Ti"]
    assert all(info.vram_total_bytes for info in backend.known_devices())
