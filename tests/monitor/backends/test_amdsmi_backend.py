"""The optional amdsmi backend through a fake ``amdsmi`` module object (the library boundary)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from amd_trees import PHOENIX, RX6900XT, copy_card, write

from gputray.monitor import busy_why as why
from gputray.monitor.backends.amd import AmdSysfsBackend
from gputray.monitor.backends.amdsmi import AmdSmiBackend, load_amdsmi
from gputray.monitor.monitor import merge_readings
from gputray.scheduler.reasons.render import render

MIB = 1024 * 1024


class AmdSmiLibraryException(Exception):
    pass


def fake_amdsmi(*, apu: bool = True, init_error: bool = False) -> Any:
    """A stand-in for ``amdsmi`` with one 780M, shaped like amdsmi 6.x answers."""
    lib: Any = types.ModuleType("amdsmi")
    lib.calls = []
    lib.AmdSmiInitFlags = types.SimpleNamespace(INIT_AMD_GPUS=2)
    lib.AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0)
    lib.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)
    lib.AmdSmiClkType = types.SimpleNamespace(GFX=0)
    lib.AmdSmiLibraryException = AmdSmiLibraryException

    def record(name: str, result: Any) -> Any:
        def call(*args: Any) -> Any:
            lib.calls.append(name)
            value = result(*args) if callable(result) else result
            if isinstance(value, Exception):
                raise value
            return value

        return call

    lib.amdsmi_init = record(
        "init", AmdSmiLibraryException("AMDSMI_STATUS_DRM_ERROR") if init_error else None
    )
    lib.amdsmi_shut_down = record("shut_down", None)
    lib.amdsmi_get_processor_handles = record("handles", ["h0"])
    lib.amdsmi_get_gpu_device_bdf = record("bdf", "0000:64:00.0")
    lib.amdsmi_get_gpu_device_uuid = record("uuid", "6cff15bf-0000-1000-80ff-ffffffffffff")
    lib.amdsmi_get_gpu_asic_info = record(
        "asic",
        {
            "market_name": "AMD Radeon 780M Graphics",
            "vendor_id": 0x1002,
            "device_id": 0x15BF,
            "rev_id": 0xDD,
            "num_of_compute_units": 12,
            "target_graphics_version": "gfx1103",
        },
    )
    lib.amdsmi_get_gpu_activity = record("activity", {"gfx_activity": 42, "umc_activity": "N/A"})
    lib.amdsmi_get_temp_metric = record("temp", 61)
    lib.amdsmi_get_power_info = record(
        "power",
        AmdSmiLibraryException("AMDSMI_STATUS_NOT_SUPPORTED")
        if apu
        else {"average_socket_power": 180, "current_socket_power": "N/A"},
    )
    lib.amdsmi_get_gpu_vram_usage = record("vram", {"vram_total": 4096, "vram_used": 1214})
    lib.amdsmi_get_clock_info = record("clock", {"clk": 2700, "min_clk": 800})
    lib.amdsmi_get_gpu_process_list = record(
        "processes",
        [
            {
                "name": "python3",
                "pid": 4711,
                "mem": 999,
                "engine_usage": {"gfx": 10, "enc": 0},
                "memory_usage": {"gtt_mem": 6 * 1024 * MIB, "cpu_mem": 0, "vram_mem": 512 * MIB},
            },
            {"name": "", "pid": 0, "mem": 0, "memory_usage": {}},
        ],
    )
    return lib


def test_import_that_prints_and_raises_keyerror_stays_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """What the real amdsmi package does without libamd_smi.so, through the real import machinery."""
    package = tmp_path / "site" / "amdsmi"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        'print("Unable to find amdsmi library try installing amd-smi-lib from your package manager")\n'
        'import os\nos.environ["ROCM_PATH_DEFINITELY_NOT_SET_BY_ANYONE"]\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    assert load_amdsmi() is None
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_missing_amdsmi_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # "not installed" for the import system
    assert load_amdsmi() is None


def test_on_a_captured_tree_amdsmi_is_not_even_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = fake_amdsmi()
    monkeypatch.setitem(sys.modules, "amdsmi", lib)
    copy_card(tmp_path / "sys", PHOENIX, "card1")
    assert AmdSmiBackend(tmp_path / "sys").poll(1.0).readings == ()
    assert lib.calls == []


def test_780m_reading_fills_what_sysfs_lacks(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")  # power/control "on": no runtime PM on the APU
    lib = fake_amdsmi(apu=True)
    smi = AmdSmiBackend(sys_dir, module=lib)
    poll = smi.poll(5.0)
    (reading,) = poll.readings
    info, s = reading.info, reading.sample
    assert info.key == "pci:0000:64:00.0"
    assert info.name == "Radeon 780M"
    assert info.uuid == "6cff15bf-0000-1000-80ff-ffffffffffff"
    assert (info.gfx_target, info.compute_units, info.kind) == ("gfx1103", 12, "integrated")
    assert (s.util_percent, s.temp_c, s.sclk_mhz) == (42.0, 61.0, 2700)
    assert s.power_w is None  # amdsmi_get_power_info fails on the APU: that metric only
    assert (s.vram_used_bytes, s.vram_total_bytes) == (1214 * MIB, 4096 * MIB)
    (proc,) = poll.processes
    assert (proc.pid, proc.name, proc.kind, proc.device) == (4711, "python3", "rocm", info.key)
    assert (proc.vram_bytes, proc.shared_bytes) == (512 * MIB, 6 * 1024 * MIB)

    sysfs = AmdSysfsBackend(sys_dir, tmp_path / "no-proc", amdgpu_ids=None).poll(5.0)
    (merged,) = merge_readings([sysfs.readings, poll.readings])
    assert merged.sample.temp_c == 25.0  # sysfs first: its values stand
    assert merged.sample.power_w == pytest.approx(3.103)
    assert merged.info.uuid == "6cff15bf-0000-1000-80ff-ffffffffffff"  # amdsmi adds what sysfs lacks
    assert merged.info.backend == "amdgpu-sysfs+amdsmi"

    smi.close()
    assert lib.calls.count("init") == 1 and lib.calls[-1] == "shut_down"


def test_dgpu_power_from_power_info(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    (reading,) = AmdSmiBackend(sys_dir, module=fake_amdsmi(apu=False)).poll(1.0).readings
    assert reading.sample.power_w == 180.0


def test_a_gpu_with_runtime_pm_pauses_amdsmi_so_it_is_not_woken(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    lib = fake_amdsmi()
    smi = AmdSmiBackend(sys_dir, module=lib)
    assert len(smi.poll(1.0).readings) == 1
    rx = copy_card(sys_dir, RX6900XT, "card0")  # power/control "auto": it may runtime-suspend
    assert smi.poll(2.0).readings == ()
    assert lib.calls[-1] == "shut_down"  # handles released so the dGPU can sleep
    assert smi.unavailable_reason == why.WouldWake()
    assert "runtime power management" in render(smi.unavailable_reason)
    calls = len(lib.calls)
    assert smi.poll(3.0).readings == ()
    assert len(lib.calls) == calls  # not touched again while paused
    write(rx / "power" / "control", "on\n")
    assert len(smi.poll(4.0).readings) == 1


def test_init_failure_is_a_note_not_an_exception(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    smi = AmdSmiBackend(sys_dir, module=fake_amdsmi(init_error=True))
    assert smi.poll(1.0).readings == ()
    assert smi.unavailable_reason == why.ApiStartFailed(api="amdsmi", error="AMDSMI_STATUS_DRM_ERROR")
    assert render(smi.unavailable_reason) == "amdsmi failed to start: AMDSMI_STATUS_DRM_ERROR"


def test_every_call_failing_still_gives_a_reading(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    lib = fake_amdsmi()

    def fail(*args: Any) -> Any:
        raise AmdSmiLibraryException("boom")

    keep = ("amdsmi_get_processor_handles", "amdsmi_get_gpu_device_bdf")
    for name in dir(lib):
        if name.startswith("amdsmi_get_") and name not in keep:
            setattr(lib, name, fail)
    poll = AmdSmiBackend(sys_dir, module=lib).poll(1.0)
    (reading,) = poll.readings
    assert reading.info.name == "AMD GPU"
    assert (reading.sample.util_percent, reading.sample.temp_c, reading.info.uuid) == (None, None, None)
    assert poll.processes == ()
