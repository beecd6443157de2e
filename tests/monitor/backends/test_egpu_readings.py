"""The readings eGPU users check: PCIe link now and at best, fan, power limit, memory clock, video engines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from amd_trees import PHOENIX, RX6900XT, add_process, amdgpu_fdinfo, copy_card, link_snapshot, write
from fake_pynvml import FakeGpu, FakeNvml

from gputray.monitor.backends.amd import AmdSysfsBackend
from gputray.monitor.backends.nvidia import NvmlBackend
from gputray.monitor.pcie import describe, gen_of_speed, link_folder
from gputray.monitor.records import BackendPoll, DeviceReading, Sample

RX_KEY, PHOENIX_KEY = "pci:0000:0c:00.0", "pci:0000:64:00.0"


def only(poll: BackendPoll, key: str) -> DeviceReading:
    (reading,) = [r for r in poll.readings if r.info.key == key]
    return reading


def amd(sys_dir: Path, proc: Path | None = None) -> AmdSysfsBackend:
    return AmdSysfsBackend(sys_dir, proc or sys_dir.parent / "no-proc", amdgpu_ids=None)


# -- words --------------------------------------------------------------------------------------------


def test_link_speeds_are_generations() -> None:
    speeds = [
        "2.5 GT/s PCIe",
        "5.0 GT/s PCIe",
        "8.0 GT/s PCIe",
        "16.0 GT/s PCIe",
        "32.0 GT/s PCIe",
        "64.0 GT/s",
    ]
    assert [gen_of_speed(s) for s in speeds] == [1, 2, 3, 4, 5, 6]
    assert [gen_of_speed(s) for s in ("Unknown", "", None, "7 GT/s")] == [None, None, None, None]


def test_link_in_words_and_idle_is_no_alarm() -> None:
    assert describe(4, 4, 5, 8, util_percent=97.0) == "PCIe 4.0 ×4 of 5.0 ×8"  # OCuLink: x4 is the cable
    assert (
        describe(1, 4, 5, 8, util_percent=0.0)
        == "PCIe 1.0 ×4 of 5.0 ×8 (idle: links slow down to save power)"
    )
    assert (
        describe(1, 16, 4, 16, util_percent=90.0) == "PCIe 1.0 ×16 of 4.0 ×16"
    )  # slow under load: shown as is
    assert describe(4, 16, 4, 16) == "PCIe 4.0 ×16"
    assert describe(None, None, 5, 8) is None


# -- amdgpu ---------------------------------------------------------------------------------------------


def test_rx6900xt_link_fan_and_power_limit(tmp_path: Path) -> None:
    s = only(amd(link_snapshot(tmp_path / "sys", RX6900XT)).poll(1.0), RX_KEY).sample
    assert (s.pcie_gen, s.pcie_width, s.pcie_max_gen, s.pcie_max_width) == (4, 16, 4, 16)  # 16.0 GT/s x16
    assert (s.fan_percent, s.fan_rpm) == (0.0, 0)  # pwm1 0 of 255, fan1_input 0: zero-RPM at idle
    assert s.power_limit_w == 289.0  # power1_cap, not power1_cap_max (332 W)
    assert s.mclk_mhz == 1000


def test_an_apu_has_no_link_fan_or_limit(tmp_path: Path) -> None:
    s = only(amd(link_snapshot(tmp_path / "sys", PHOENIX)).poll(1.0), PHOENIX_KEY).sample
    assert (s.pcie_gen, s.pcie_max_gen, s.fan_percent, s.fan_rpm, s.power_limit_w) == (None,) * 5


def test_amd_dgpu_host_link_is_the_switch_upstream_port_two_levels_up(tmp_path: Path) -> None:
    """Root port → AMD switch upstream port (0a:00.0) → downstream port (0b:00.0) → GPU (0c:00.0)."""
    sys_dir = tmp_path / "sys"
    pci = sys_dir / "devices" / "pci0000:00" / "0000:00:01.1"
    up, down = pci / "0000:0a:00.0", pci / "0000:0a:00.0" / "0000:0b:00.0"
    for bridge, vendor, speed, width in ((pci, "0x1022", "16.0", "16"), (up, "0x1002", "8.0", "8")):
        bridge.mkdir(parents=True, exist_ok=True)
        files = {
            "class": "0x060400",
            "vendor": vendor,
            "current_link_speed": f"{speed} GT/s PCIe",
            "current_link_width": width,
            "max_link_speed": "16.0 GT/s PCIe",
            "max_link_width": "16",
        }
        for name, text in files.items():
            (bridge / name).write_text(text + "\n")
    down.mkdir()
    (down / "class").write_text("0x060400\n")
    (down / "vendor").write_text("0x1002\n")
    shutil.copytree(
        RX6900XT / "card0" / "device", down / "0000:0c:00.0", ignore=shutil.ignore_patterns("fw_version")
    )
    (sys_dir / "class" / "drm" / "card0").mkdir(parents=True)
    (sys_dir / "class" / "drm" / "card0" / "device").symlink_to(down / "0000:0c:00.0")
    assert link_folder(str(sys_dir / "class" / "drm" / "card0" / "device"), 0x1002) == str(up)
    s = only(amd(sys_dir).poll(1.0), RX_KEY).sample
    # the link to the host, not the GPU's board-internal 16.0 GT/s x16
    assert (s.pcie_gen, s.pcie_width, s.pcie_max_gen, s.pcie_max_width) == (3, 8, 4, 16)
    # an NVIDIA card under the same root port is its own endpoint: the bridges are not its vendor's
    assert link_folder(str(down / "0000:0c:00.0"), 0x10DE) == str(down / "0000:0c:00.0")


def test_vcn_encode_and_decode_load_from_fdinfo(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    copy_card(sys_dir, PHOENIX, "card1")
    info = proc / "61" / "fdinfo" / "5"

    def video(enc_ns: int, dec_ns: int) -> str:
        return amdgpu_fdinfo(9) + f"drm-engine-enc:\t{enc_ns} ns\ndrm-engine-dec:\t{dec_ns} ns\n"

    add_process(proc, 61, "obs", {5: "/dev/dri/renderD128"}, {5: video(0, 0)})
    add_process(
        proc, 62, "mpv", {3: "/dev/dri/renderD128"}, {3: amdgpu_fdinfo(10) + "drm-engine-dec:\t0 ns\n"}
    )
    be = amd(sys_dir, proc)
    first = only(be.poll(1.0), PHOENIX_KEY).sample
    assert (first.encoder_percent, first.decoder_percent) == (None, None)  # rates need two reads
    write(info, video(400_000_000, 100_000_000))
    write(proc / "62" / "fdinfo" / "3", amdgpu_fdinfo(10) + "drm-engine-dec:\t200000000 ns\n")
    s = only(be.poll(2.0), PHOENIX_KEY).sample
    assert s.encoder_percent == pytest.approx(40.0)
    assert s.decoder_percent == pytest.approx(30.0)  # both clients' decode, summed
    shutil.rmtree(proc / "61")
    shutil.rmtree(proc / "62")
    idle = only(be.poll(3.0), PHOENIX_KEY).sample
    assert (idle.encoder_percent, idle.decoder_percent) == (0.0, 0.0)  # no client: nothing can run


# -- NVML (the fake pynvml at the library boundary) -------------------------------------------------------


def nvml_sys(tmp_path: Path) -> Path:
    dev = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:01:00.0"
    (dev / "power").mkdir(parents=True)
    for name, text in (("vendor", "0x10de"), ("device", "0x2d04"), ("class", "0x030000")):
        (dev / name).write_text(text + "\n")
    (dev / "power" / "runtime_status").write_text("active\n")
    return tmp_path / "sys"


def sample(fake: FakeNvml, tmp_path: Path) -> Sample:
    (reading,) = NvmlBackend(fake, nvml_sys(tmp_path), use_sysfs=True).poll(1.0).readings
    return reading.sample


def test_nvml_egpu_on_oculink(tmp_path: Path) -> None:
    fake = FakeNvml([FakeGpu()])
    s = sample(fake, tmp_path)
    # the GPU's own best (5.0), not the slot-capped maximum (4.0) that would hide the OCuLink limit
    assert (s.pcie_gen, s.pcie_width, s.pcie_max_gen, s.pcie_max_width) == (4, 4, 5, 8)
    assert (s.fan_percent, s.fan_rpm, s.power_limit_w) == (31.0, 1180, 180.0)
    assert (s.encoder_percent, s.decoder_percent, s.mclk_mhz) == (12.0, 34.0, 13801)
    assert fake.called("nvmlDeviceGetGpuMaxPcieLinkGeneration") == 1


def test_nvml_maximum_link_is_asked_once_per_attach(tmp_path: Path) -> None:
    fake = FakeNvml([FakeGpu()])
    backend = NvmlBackend(fake, nvml_sys(tmp_path), use_sysfs=True)
    for t in range(5):
        backend.poll(float(t))
    assert fake.called("nvmlDeviceGetGpuMaxPcieLinkGeneration") == 1
    assert fake.called("nvmlDeviceGetCurrPcieLinkGeneration") == 5  # the current one every poll


def test_nvml_laptop_gpu_without_fans_and_an_old_driver(tmp_path: Path) -> None:
    gpu = FakeGpu(fail={"nvmlDeviceGetFanSpeed": 3, "nvmlDeviceGetEncoderUtilization": 3})  # NOT_SUPPORTED
    s = sample(FakeNvml([gpu], old_driver=True), tmp_path)
    assert (s.fan_percent, s.fan_rpm, s.encoder_percent) == (None, None, None)  # RPM: FunctionNotFound
    assert s.pcie_max_gen == 4  # no GpuMax call in this driver: the (slot-capped) maximum instead
    assert s.decoder_percent == 34.0 and s.util_percent == 37.0  # the rest is still read
