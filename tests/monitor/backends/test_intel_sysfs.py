"""Intel GPUs (i915 and xe) on the three real captured trees, and on loaded trees built from them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from amd_trees import add_process, copy_card, record_opens, write

from gputray.monitor import busy_why as why
from gputray.monitor.backends.intel import ASLEEP_REASON, IntelSysfsBackend
from gputray.monitor.records import BackendPoll, DeviceReading
from gputray.scheduler.reasons.render import render

INTEL = Path(__file__).resolve().parents[2] / "fixtures" / "intel-sysfs"
A380, TIGERLAKE, B580 = INTEL / "a380-i915", INTEL / "tigerlake", INTEL / "b580-6.16"
ARC_KEY, IGPU_KEY = "pci:0000:0b:00.0", "pci:0000:00:02.0"
NO_PCI_IDS: tuple[Path, ...] = ()  # the PCI ID database differs between machines: gputray's own table


def backend(sys_dir: Path, proc_dir: Path | None = None) -> IntelSysfsBackend:
    return IntelSysfsBackend(sys_dir, proc_dir or sys_dir.parent / "no-proc", pci_ids=NO_PCI_IDS)


def only(poll: BackendPoll) -> DeviceReading:
    assert len(poll.readings) == 1, [r.info.key for r in poll.readings]
    return poll.readings[0]


# -- the real trees, untouched: exactly the values SOURCE.md lists -----------------------------------


def test_a380_on_i915() -> None:
    be = backend(A380)
    r = only(be.poll(10.0))
    info, s = r.info, r.sample
    assert (info.name, info.vendor, info.kind, info.backend) == (
        "Intel Arc A380",
        "intel",
        "discrete",
        "intel-sysfs",
    )
    assert (info.key, info.pci_bdf, info.drm_card) == (ARC_KEY, "0000:0b:00.0", "card1")
    assert (info.pci_vendor_id, info.pci_device_id) == (0x8086, 0x56A5)
    assert s.state == "ok"
    assert s.sclk_mhz == 600  # gt_act_freq_mhz
    assert s.temp_c == 55.0  # temp1_input
    assert s.power_limit_w == 55.0  # power1_max
    assert s.power_w is None  # only an energy counter: a rate needs two samples
    assert s.fan_rpm == 0
    assert (s.pcie_gen, s.pcie_width) == (1, 1)  # the card's own (board-internal) link: 2.5 GT/s x1
    assert (s.encoder_percent, s.decoder_percent) == (None, None)
    assert s.reason == why.NotReported(
        metrics=("load", "power")
    )  # no DRM client could be read yet (no /proc)
    assert render(s.reason) == "not reported: load, power"
    assert render(s.reason, "ja") == "報告されない値: 負荷、電力"


def test_tigerlake_on_xe_is_integrated_with_no_hwmon() -> None:
    r = only(backend(TIGERLAKE).poll(10.0))
    info, s = r.info, r.sample
    assert (info.name, info.kind, info.key) == ("Intel Iris Xe Graphics", "integrated", IGPU_KEY)
    assert (info.pci_vendor_id, info.pci_device_id) == (0x8086, 0x9A49)
    assert s.sclk_mhz == 1100  # act_freq reads 0 while the GT sleeps in RC6: the requested clock
    assert (s.temp_c, s.power_w, s.power_limit_w, s.fan_rpm) == (None, None, None, None)
    assert (s.pcie_gen, s.pcie_width, s.vram_total_bytes) == (None, None, None)  # no PCIe link, no VRAM


def test_b580_on_xe() -> None:
    be = backend(B580)
    r = only(be.poll(10.0))
    info, s = r.info, r.sample
    assert (info.name, info.kind, info.key) == ("Intel Arc B580", "discrete", ARC_KEY)
    assert (info.pci_vendor_id, info.pci_device_id) == (0x8086, 0xE20B)
    assert s.sclk_mhz == 400  # tile0/gt0/freq0/act_freq
    assert s.temp_c == 46.0  # the one labelled pkg (temp2), not vram (temp3, 48.0)
    assert s.power_limit_w == 380.0  # power1_crit, labelled card
    assert s.fan_rpm == 418  # fan2_input
    assert (s.pcie_gen, s.pcie_width, s.pcie_max_gen, s.pcie_max_width) == (1, 1, 1, 1)
    # the energy counter: a second sample of the same files is 0 W (it did not move)
    assert only(be.poll(11.0)).sample.power_w == 0.0


# -- loaded trees: fdinfo and energy counters moving ----------------------------------------------------


def i915_fdinfo(client: int, pdev: str, *, render_ns: int, copy_ns: int = 0, video_ns: int = 0) -> str:
    """An fdinfo text as i915 prints it (``drm_print_memory_stats`` + ``drm-engine-<class>`` in ns)."""
    return (
        f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t685\ndrm-driver:\ti915\ndrm-client-id:\t{client}\n"
        f"drm-pdev:\t{pdev}\ndrm-total-system0:\t7040 KiB\ndrm-shared-system0:\t0\ndrm-active-system0:\t0\n"
        f"drm-resident-system0:\t7040 KiB\ndrm-purgeable-system0:\t0\ndrm-total-stolen-system0:\t0\n"
        f"drm-total-local0:\t524288 KiB\ndrm-resident-local0:\t524288 KiB\n"
        f"drm-engine-render:\t{render_ns} ns\ndrm-engine-copy:\t{copy_ns} ns\n"
        f"drm-engine-video:\t{video_ns} ns\ndrm-engine-capacity-video:\t2\ndrm-engine-video-enhance:\t0 ns\n"
    )


def xe_fdinfo(client: int, pdev: str, *, rcs: int, vcs: int, total: int, vram_kib: int = 23992) -> str:
    """An fdinfo text as xe prints it: busy cycles and total cycles per engine class."""
    return (
        f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t912\ndrm-driver:\txe\ndrm-client-id:\t{client}\n"
        f"drm-pdev:\t{pdev}\ndrm-total-system:\t0\ndrm-resident-system:\t0\ndrm-total-gtt:\t192 KiB\n"
        f"drm-shared-gtt:\t0\ndrm-resident-gtt:\t192 KiB\ndrm-total-vram0:\t{vram_kib} KiB\n"
        f"drm-shared-vram0:\t16 MiB\ndrm-resident-vram0:\t{vram_kib} KiB\ndrm-purgeable-vram0:\t0\n"
        f"drm-cycles-bcs:\t0\ndrm-total-cycles-bcs:\t{total}\ndrm-cycles-ccs:\t0\ndrm-total-cycles-ccs:\t{total}\n"
        f"drm-cycles-rcs:\t{rcs}\ndrm-total-cycles-rcs:\t{total}\ndrm-cycles-vcs:\t{vcs}\n"
        f"drm-total-cycles-vcs:\t{total}\ndrm-engine-capacity-vcs:\t2\ndrm-cycles-vecs:\t0\n"
        f"drm-total-cycles-vecs:\t{total}\ndrm-engine-capacity-vecs:\t2\n"
    )


def test_a380_under_load_from_i915_fdinfo_and_the_energy_counter(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    dev = copy_card(sys_dir, A380, "card1")
    energy = dev / "hwmon" / "hwmon1" / "energy1_input"
    pdev = "0000:0b:00.0"
    add_process(proc, 700, "blender", {9: "/dev/dri/renderD128"}, {9: i915_fdinfo(18, pdev, render_ns=10**9)})
    add_process(proc, 701, "obs", {4: "/dev/dri/card1"}, {4: i915_fdinfo(19, pdev, render_ns=0, video_ns=0)})
    be = backend(sys_dir, proc)
    first = only(be.poll(100.0)).sample
    assert (first.util_percent, first.power_w) == (None, None)  # rates need two samples
    write(proc / "700" / "fdinfo" / "9", i915_fdinfo(18, pdev, render_ns=10**9 + 600_000_000, copy_ns=10**8))
    write(proc / "701" / "fdinfo" / "4", i915_fdinfo(19, pdev, render_ns=300_000_000, video_ns=10**9))
    write(energy, str(25637161804 + 30_000_000))  # 30 J in 1 s
    poll = be.poll(101.0)
    s = only(poll).sample
    assert s.util_percent == pytest.approx(90.0)  # render: 60 % + 30 %, the busiest engine class
    assert s.power_w == pytest.approx(30.0)
    assert s.vram_used_bytes == 2 * 524288 * 1024  # the two clients' local0
    by_pid = {p.pid: p for p in poll.processes}
    assert (by_pid[700].name, by_pid[700].device, by_pid[700].kind) == ("blender", ARC_KEY, "graphics")
    assert by_pid[700].util_percent == pytest.approx(60.0)
    assert by_pid[700].vram_bytes == 524288 * 1024 and by_pid[700].shared_bytes == 7040 * 1024
    assert by_pid[701].util_percent == pytest.approx(50.0)  # video: 1 s on 2 engines in 1 s


def test_b580_under_load_from_xe_cycles(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    dev = copy_card(sys_dir, B580, "card1")
    pkg = dev / "hwmon" / "hwmon4" / "energy2_input"
    write(dev / "tile0" / "physical_vram_size_bytes", f"{12 * 1024**3}\n")  # newer xe kernels have it
    pdev = "0000:0b:00.0"
    add_process(
        proc,
        900,
        "llama-server",
        {5: "/dev/dri/renderD128"},
        {5: xe_fdinfo(4, pdev, rcs=0, vcs=0, total=1000)},
    )
    be = backend(sys_dir, proc)
    be.poll(50.0)
    write(
        proc / "900" / "fdinfo" / "5", xe_fdinfo(4, pdev, rcs=300, vcs=1000, total=2000, vram_kib=4 * 1024**2)
    )
    write(pkg, str(29523753173 + 12_000_000))
    poll = be.poll(50.5)
    s = only(poll).sample
    assert s.util_percent == pytest.approx(50.0)  # rcs 30 %, vcs 1000/1000 on 2 engines: 50 %
    assert s.power_w == pytest.approx(24.0)  # 12 J of the pkg counter in 0.5 s (the card counter is 0)
    assert (s.vram_used_bytes, s.vram_total_bytes) == (4 * 1024**3, 12 * 1024**3)
    (use,) = poll.processes
    assert (use.pid, use.util_percent, use.vram_bytes, use.shared_bytes) == (
        900,
        50.0,
        4 * 1024**3,
        192 * 1024,
    )
    # nothing ran since: 0 %, not unknown
    assert only(be.poll(51.5)).sample.util_percent == 0.0


def test_integrated_intel_memory_is_shared_system_ram(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    copy_card(sys_dir, TIGERLAKE, "card0")
    proc.mkdir()
    (proc / "meminfo").write_text("MemTotal:       16231768 kB\nMemFree:         1000 kB\n")
    text = xe_fdinfo(2, "0000:00:02.0", rcs=0, vcs=0, total=10).replace("drm-total-vram0", "x-vram")
    add_process(proc, 31, "firefox", {3: "/dev/dri/renderD128"}, {3: text.replace("resident-vram0", "x")})
    poll = backend(sys_dir, proc).poll(1.0)
    r = only(poll)
    assert r.info.shared_total_bytes == 16231768 * 1024  # the host's RAM
    assert (r.sample.shared_used_bytes, r.sample.vram_used_bytes) == (192 * 1024, None)
    (use,) = poll.processes
    assert (use.vram_bytes, use.shared_bytes) == (None, 192 * 1024)


def test_asleep_arc_card_is_not_woken(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, B580, "card1")
    write(dev / "power" / "runtime_status", "suspended\n")
    be = backend(sys_dir)
    with record_opens() as opened:
        r = only(be.poll(1.0))
    assert (r.sample.state, r.sample.reason) == ("asleep", ASLEEP_REASON)
    assert (r.sample.temp_c, r.sample.sclk_mhz, r.sample.power_limit_w) == (None, None, None)
    assert r.info.name == "Intel Arc B580"  # the PCI core's cached identity (uevent) wakes nothing
    card = str(sys_dir / "class" / "drm" / "card1")
    touched = sorted(os.path.relpath(p, card) for p in opened if p.startswith(card + "/"))
    assert touched == ["device/power/runtime_status", "device/uevent"]
    write(dev / "power" / "runtime_status", "active\n")
    assert only(be.poll(2.0)).sample.temp_c == 46.0


def test_other_drivers_and_vendors_are_not_intel_cards(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, A380, "card1")
    write(dev / "uevent", (dev / "uevent").read_text().replace("DRIVER=i915", "DRIVER=vfio-pci"))
    assert backend(sys_dir).poll(1.0).readings == ()
